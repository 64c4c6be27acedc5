package tokenizer

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNewRejects(t *testing.T) {
	good := func() Vocab {
		return Vocab{
			Model:  ModelLlama,
			Tokens: []string{"<unk>", "<s>", "</s>", "a"},
			Scores: []float32{0, 0, 0, -1},
			Types:  []int32{2, 3, 3, 1},
			BOS:    1, EOS: 2, UNK: 0, PAD: -1,
		}
	}
	if _, err := New(good()); err != nil {
		t.Fatalf("valid vocabulary rejected: %v", err)
	}
	cases := []struct {
		name   string
		edit   func(v *Vocab)
		inText string
	}{
		{"unknown model", func(v *Vocab) { v.Model = "wordpiece" }, "wordpiece"},
		{"empty model", func(v *Vocab) { v.Model = "" }, "unknown model"},
		{"no tokens", func(v *Vocab) { v.Tokens, v.Scores, v.Types = nil, nil, nil }, "no tokens"},
		{"scores length", func(v *Vocab) { v.Scores = v.Scores[:3] }, "3 scores for 4 tokens"},
		{"types length", func(v *Vocab) { v.Types = append(v.Types, 1) }, "5 token types for 4 tokens"},
		{"BOS range", func(v *Vocab) { v.BOS = 4 }, "BOS id 4"},
		{"EOS negative", func(v *Vocab) { v.EOS = -2 }, "EOS id -2"},
		{"UNK range", func(v *Vocab) { v.UNK = 100 }, "UNK id 100"},
		{"PAD range", func(v *Vocab) { v.PAD = 4 }, "PAD id 4"},
		{"EOG range", func(v *Vocab) { v.EOG = []int32{2, 9} }, "EOG[1] id 9"},
		{"bad merge", func(v *Vocab) { v.Model = ModelGPT2; v.Merges = []string{"ab"} }, `merge 0 "ab"`},
		{"merge empty right", func(v *Vocab) { v.Model = ModelGPT2; v.Merges = []string{"a "} }, `merge 0`},
		{"merge empty", func(v *Vocab) { v.Model = ModelGPT2; v.Merges = []string{"a b", ""} }, `merge 1`},
	}
	for _, c := range cases {
		v := good()
		c.edit(&v)
		_, err := New(v)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, ErrInvalidVocab) || !strings.Contains(err.Error(), c.inText) {
			t.Errorf("%s: error %q, want ErrInvalidVocab mentioning %q", c.name, err, c.inText)
		}
	}
}

func TestAccessors(t *testing.T) {
	tok := stories(t)
	if tok.VocabSize() != 512 || tok.BOS() != 1 || tok.EOS() != 2 || tok.UNK() != 0 || tok.PAD() != -1 {
		t.Fatalf("size %d BOS %d EOS %d UNK %d PAD %d", tok.VocabSize(), tok.BOS(), tok.EOS(), tok.UNK(), tok.PAD())
	}
	if !tok.AddBOS() || tok.AddEOS() || tok.Model() != ModelLlama {
		t.Errorf("AddBOS %v AddEOS %v model %q", tok.AddBOS(), tok.AddEOS(), tok.Model())
	}
	cases := []struct {
		id      int32
		piece   string
		control bool
		typ     int32
	}{
		{1, "", true, TypeControl},
		{2, "", true, TypeControl},
		{0, unknownText, false, TypeUnknown},
		{13, "\n", false, TypeByte},
		{229, "\xe2", false, TypeByte},
		{259, " t", false, TypeNormal},
		{410, " ", false, TypeNormal},
		{-1, "", false, TypeUndefined},
		{512, "", false, TypeUndefined},
	}
	for _, c := range cases {
		if got := tok.Piece(c.id); got != c.piece {
			t.Errorf("Piece(%d) = %q, want %q", c.id, got, c.piece)
		}
		if got := tok.IsControl(c.id); got != c.control {
			t.Errorf("IsControl(%d) = %v", c.id, got)
		}
		if got := tok.Type(c.id); got != c.typ {
			t.Errorf("Type(%d) = %d, want %d", c.id, got, c.typ)
		}
	}
	if !tok.IsEOG(2) || tok.IsEOG(1) || tok.IsEOG(0) || tok.IsEOG(-1) || tok.IsEOG(600) {
		t.Errorf("IsEOG: EOS %v BOS %v", tok.IsEOG(2), tok.IsEOG(1))
	}
	if tok.Token(259) != "▁t" || tok.Score(260) != -1 || tok.Token(9999) != "" || tok.Score(-5) != 0 {
		t.Errorf("Token/Score: %q %v", tok.Token(259), tok.Score(260))
	}
}

func TestDecodeLeadingSpace(t *testing.T) {
	tok := stories(t)
	// 403 = ▁Once, 407 = ▁upon, 1 = BOS.
	cases := []struct {
		ids  []int32
		want string
	}{
		{[]int32{1, 403, 407}, "Once upon"},
		{[]int32{403, 407}, " Once upon"}, // a continuation keeps its space
		{[]int32{1, 1, 403}, "Once"},
		{[]int32{407, 1, 403}, " uponOnce"}, // each BOS starts a sequence
		{[]int32{1, 410, 410, 403}, "  Once"},
		{[]int32{1, -7, 9999, 403}, " Once"}, // only a piece right after BOS is stripped
		{[]int32{1, 13, 403}, "\n Once"},
		{nil, ""},
	}
	for _, c := range cases {
		if got := tok.Decode(c.ids); got != c.want {
			t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.want)
		}
	}
	if got := tok.Encode("", true); len(got) != 1 || got[0] != 1 {
		t.Errorf("Encode(\"\", BOS) = %v, want [1]", got)
	}
	if got := tok.Encode("", false); len(got) != 0 {
		t.Errorf("Encode(\"\") = %v, want []", got)
	}
}

func TestStreamDecoder(t *testing.T) {
	tok := stories(t)
	// "naïve café ☕" with BOS: ☕ is E2 98 95, three byte tokens at the end.
	ids := []int32{1, 297, 412, 198, 178, 360, 280, 412, 431, 485, 410, 229, 155, 152}
	want := []string{"", "n", "a", "", "ï", "ve", " c", "a", "f", "é", " ", "", "", "☕"}
	d := tok.NewStreamDecoder()
	var all strings.Builder
	for i, id := range ids {
		got := d.Write(id)
		if got != want[i] {
			t.Errorf("Write(%d) at %d = %q, want %q", id, i, got, want[i])
		}
		all.WriteString(got)
	}
	if rest := d.Flush(); rest != "" {
		t.Errorf("Flush = %q, want empty", rest)
	}
	if all.String() != tok.Decode(ids) {
		t.Errorf("streamed %q, Decode %q", all.String(), tok.Decode(ids))
	}

	// A decoder fed only generated tokens keeps the space of the first; after BOS it
	// is dropped.
	d = tok.NewStreamDecoder()
	if got := d.Write(407) + d.Write(1) + d.Write(403); got != " uponOnce" {
		t.Errorf("stream 407 1 403 = %q, want %q", got, " uponOnce")
	}

	// An incomplete character at the end comes out of Flush; a broken one is passed on
	// as soon as it cannot be completed.
	d = tok.NewStreamDecoder()
	if got := d.Write(229); got != "" { // E2
		t.Errorf("Write(E2) = %q", got)
	}
	if got := d.Write(412); got != "\xe2a" { // E2 then 'a': E2 can no longer complete
		t.Errorf("Write(a) after E2 = %q, want %q", got, "\xe2a")
	}
	if got := d.Write(229) + d.Write(155); got != "" {
		t.Errorf("Write(E2 98) = %q", got)
	}
	if got := d.Flush(); got != "\xe2\x98" {
		t.Errorf("Flush = %q", got)
	}
}

// TestStreamMatchesDecode streams long reference-like id sequences and checks each
// piece is valid UTF-8 and the concatenation equals Decode.
func TestStreamMatchesDecode(t *testing.T) {
	tok := stories(t)
	for _, s := range []string{
		"naïve café ☕ — 東京 🎉 Ünïcödé\n\n  x",
		"Once upon a time, there was a little girl named Lily.",
	} {
		ids := tok.Encode(s, true)
		d := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range ids {
			p := d.Write(id)
			if !utf8.ValidString(p) {
				t.Errorf("Write(%d) returned invalid UTF-8 %q", id, p)
			}
			b.WriteString(p)
		}
		b.WriteString(d.Flush())
		if b.String() != s {
			t.Errorf("streamed %q, want %q", b.String(), s)
		}
	}
}

func TestCutAt(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want int
	}{
		{"abcdef", 3, 3},
		{"ab☕cd", 3, 2}, // ☕ is 3 bytes at 2..4
		{"ab☕cd", 4, 2},
		{"ab☕cd", 5, 5},
		{"\x80\x80\x80\x80\x80\x80", 5, 5}, // no boundary: cut anyway
	}
	for _, c := range cases {
		if got := cutAt(c.s, c.n); got != c.want {
			t.Errorf("cutAt(%q, %d) = %d, want %d", c.s, c.n, got, c.want)
		}
	}
}

// TestLongTextCut encodes with a tiny merge limit: every chunk boundary falls on a
// character, so no byte fallback appears, and the text still round-trips.
func TestLongTextCut(t *testing.T) {
	spm := stories(t)
	bpe, err := New(testGPT2Vocab())
	if err != nil {
		t.Fatal(err)
	}
	text := "naïve café ☕ hello world " + strings.Repeat("é", 40) + " Once upon a time"
	saved := maxMergeBytes
	maxMergeBytes = 16
	defer func() { maxMergeBytes = saved }()
	ids := spm.Encode(text, true)
	if got := spm.Decode(ids); got != text {
		t.Errorf("stories: round trip gave %q", got)
	}
	for _, id := range ids {
		if spm.Type(id) == TypeByte && spm.Piece(id) != "\xc3" && spm.Piece(id) != "\xaf" &&
			spm.Piece(id) != "\xe2" && spm.Piece(id) != "\x98" && spm.Piece(id) != "\x95" {
			t.Errorf("byte token %q: a cut split a character", spm.Piece(id))
		}
	}
	if got := bpe.Decode(bpe.Encode(text, false)); got != text {
		t.Errorf("gpt2: round trip gave %q", got)
	}
}

// TestBytePiecesBySpelling checks that <0xNN> pieces recorded as normal tokens still
// serve as byte fallback and decode to their byte.
func TestBytePiecesBySpelling(t *testing.T) {
	tok, err := New(Vocab{
		Model:          ModelLlama,
		Tokens:         []string{"<unk>", "<s>", "</s>", "▁", "a", "<0xC3>", "<0xA9>", "<0x0a>"},
		Types:          []int32{2, 3, 3, 1, 1, 1, 0, 1},
		BOS:            1,
		EOS:            2,
		UNK:            0,
		PAD:            -1,
		AddSpacePrefix: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode("aé\n", true)
	if want := []int32{1, 3, 4, 5, 6, 7}; !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := tok.Decode(ids); got != "aé\n" {
		t.Errorf("Decode = %q", got)
	}
	if tok.Type(5) != TypeByte || tok.Type(6) != TypeByte || tok.Type(7) != TypeByte {
		t.Errorf("types %d %d %d, want byte", tok.Type(5), tok.Type(6), tok.Type(7))
	}
}

// TestConcurrentUse encodes and decodes from several goroutines at once (run with
// -race to check that a Tokenizer is safe for concurrent use).
func TestConcurrentUse(t *testing.T) {
	tok := stories(t)
	texts := []string{"Once upon a time", "naïve café ☕", "Lily's 3 cats!", "\n\nnew lines\n"}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, true)
	}
	errs := make(chan string, 4*len(texts))
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for k := 0; k < 50; k++ {
				i := (g + k) % len(texts)
				ids := tok.Encode(texts[i], true)
				if !slices.Equal(ids, want[i]) || tok.Decode(ids) != texts[i] {
					errs <- texts[i]
					break
				}
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	close(errs)
	for s := range errs {
		t.Errorf("concurrent encode/decode of %q differed", s)
	}
}
