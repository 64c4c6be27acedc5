package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

func TestPartition(t *testing.T) {
	specials := []special{{"<a>", 1}, {"b>", 2}, {"<ab>", 3}, {"<a", 4}}
	sortSpecials(specials)
	type part struct {
		text string
		id   int32
	}
	cases := []struct {
		in   string
		want []part
	}{
		{"x<ab>y<a>b>", []part{{"x", -1}, {"<ab>", 3}, {"y", -1}, {"<a>", 1}, {"b>", 2}}},
		{"<a<a>", []part{{"<a", 4}, {"<a>", 1}}},
		{"plain", []part{{"plain", -1}}},
		{"", nil},
		{"b>b>", []part{{"b>", 2}, {"b>", 2}}},
		{"<ab", []part{{"<a", 4}, {"b", -1}}},
	}
	for _, c := range cases {
		var got []part
		partition(c.in, specials, nil, func(s string, id int32) { got = append(got, part{s, id}) })
		if !slices.Equal(got, c.want) {
			t.Errorf("partition(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestEncodeSpecial(t *testing.T) {
	tok := stories(t)
	hello, world := tok.Encode("Hello", false), tok.Encode("world", false)
	// A control token's text is plain text for Encode, a token for EncodeSpecial; the
	// text after it gets its own dummy space, as in llama.cpp.
	want := append(append(append([]int32{1}, hello...), 2), world...)
	if got := tok.EncodeSpecial("Hello</s>world", true); !slices.Equal(got, want) {
		t.Errorf("EncodeSpecial = %v, want %v", got, want)
	}
	plain := tok.Encode("Hello</s>world", true)
	if slices.Contains(plain[1:], 2) {
		t.Errorf("Encode produced EOS from text: %v", plain)
	}
	if got := tok.Decode(plain); got != "Hello</s>world" {
		t.Errorf("Decode(Encode) = %q", got)
	}
	if got := tok.EncodeSpecial("<s></s>", false); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("EncodeSpecial(<s></s>) = %v, want [1 2]", got)
	}
}

func TestUserDefinedTokens(t *testing.T) {
	v := Vocab{
		Model:          ModelLlama,
		Tokens:         []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "<tool>"},
		Scores:         []float32{0, 0, 0, -1, -2, -2, -1, 0},
		Types:          []int32{2, 3, 3, 1, 1, 1, 1, 4},
		BOS:            1,
		EOS:            2,
		UNK:            0,
		PAD:            -1,
		AddSpacePrefix: true,
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	// "a" → ▁a; "<tool>" whole; "b" after a special gets a dummy space → ▁ b.
	want := []int32{6, 7, 3, 5}
	for _, got := range [][]int32{tok.Encode("a<tool>b", false), tok.EncodeSpecial("a<tool>b", false)} {
		if !slices.Equal(got, want) {
			t.Errorf("Encode(a<tool>b) = %v, want %v", got, want)
		}
	}
	if got := tok.Decode(append([]int32{1}, want...)); got != "a<tool> b" {
		t.Errorf("Decode = %q, want %q", got, "a<tool> b")
	}
	if got := tok.Piece(7); got != "<tool>" {
		t.Errorf("Piece(<tool>) = %q", got)
	}
}

func TestEncodeSegments(t *testing.T) {
	for _, tok := range []*Tokenizer{stories(t), llamaSPM(t), mustNewT(t, testGPT2Vocab())} {
		tmpl := []Segment{{"<s>[INST] ", true}, {"Hi there", false}, {" [/INST]</s>", true}}
		whole := "<s>[INST] Hi there [/INST]</s>"
		// Without control text in the plain parts, segments encode as the whole text.
		if got, want := tok.EncodeSegments(tmpl, true), tok.EncodeSpecial(whole, true); !slices.Equal(got, want) {
			t.Errorf("%s: EncodeSegments = %v, EncodeSpecial of the whole = %v", tok.Model(), got, want)
		}
		// Control text inside a plain part stays text: it decodes back to itself.
		inj := []Segment{{"<s>", true}, {"a</s><s>b<|im_end|>", false}, {"</s>", true}}
		got := tok.EncodeSegments(inj, false)
		for i, id := range got {
			if tok.IsControl(id) && i != 0 && i != len(got)-1 {
				t.Errorf("%s: control token %d (%q) at %d of %v, produced from plain text", tok.Model(), id, tok.Token(id), i, got)
			}
		}
		if !strings.Contains(tok.Decode(got), "a</s><s>b<|im_end|>") {
			t.Errorf("%s: injected text decodes to %q", tok.Model(), tok.Decode(got))
		}
	}
}

func mustNewT(t *testing.T, v Vocab) *Tokenizer {
	t.Helper()
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestMaxTokenBytes checks the lower bound on token counts on long runs that merge
// into the longest pieces, and that a vocabulary that drops bytes has none.
func TestMaxTokenBytes(t *testing.T) {
	for _, tok := range []*Tokenizer{stories(t), llamaSPM(t), mustNewT(t, testGPT2Vocab())} {
		m := tok.MaxTokenBytes()
		if m < 4 {
			t.Fatalf("%s: MaxTokenBytes = %d, want ≥ 4", tok.Model(), m)
		}
		for _, s := range []string{strings.Repeat(" ", 5000), strings.Repeat("=", 5000), strings.Repeat("the ", 1000), strings.Repeat("é", 3000), strings.Repeat("\xff", 100)} {
			if n := len(tok.EncodeSpecial(s, false)); n*m < len(s) {
				t.Errorf("%s: %d bytes encode to %d tokens, below the bound ⌈%d/%d⌉", tok.Model(), len(s), n, len(s), m)
			}
		}
	}
	lossy, err := New(Vocab{Model: ModelLlama, Tokens: []string{"<s>", "a"}, BOS: 0, EOS: -1, UNK: -1, PAD: -1})
	if err != nil {
		t.Fatal(err)
	}
	if m := lossy.MaxTokenBytes(); m != 0 {
		t.Errorf("a vocabulary without byte tokens or UNK: MaxTokenBytes = %d, want 0", m)
	}
}
