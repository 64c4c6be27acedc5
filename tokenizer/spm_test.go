package tokenizer

import (
	"math"
	"slices"
	"strings"
	"testing"

	"kvq/assets"
	"kvq/internal/reference"
)

func loadReference(t *testing.T) *reference.Stories260K {
	t.Helper()
	r, err := reference.Load()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStoriesReference encodes every reference text with BOS on the stories260K
// vocabulary and compares ids exactly, then checks that decoding restores the text.
func TestStoriesReference(t *testing.T) {
	tok := stories(t)
	ref := loadReference(t)
	type tc struct {
		name string
		text string
		ids  []int32
	}
	var cases []tc
	for _, c := range ref.Tokenizer.Cases {
		cases = append(cases, tc{"tokenizer/" + c.Text, c.Text, c.IDs})
	}
	for _, g := range ref.Greedy {
		cases = append(cases, tc{"greedy/" + g.Prompt, g.Prompt, g.PromptTokens})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tok.Encode(c.text, true)
			if !slices.Equal(got, c.ids) {
				t.Fatalf("Encode(%q) = %v, want %v", c.text, got, c.ids)
			}
			if back := tok.Decode(got); back != c.text {
				t.Errorf("Decode(Encode(%q)) = %q", c.text, back)
			}
		})
	}
}

// TestStoriesGreedyText decodes prompt plus greedy continuation and compares with the
// reference text, both at once and streamed token by token.
func TestStoriesGreedyText(t *testing.T) {
	tok := stories(t)
	for _, g := range loadReference(t).Greedy {
		ids := append(slices.Clone(g.PromptTokens), g.Tokens...)
		if got := tok.Decode(ids); got != g.Text {
			t.Errorf("Decode(%q + continuation) = %q, want %q", g.Prompt, got, g.Text)
		}
		d := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(d.Write(id))
		}
		b.WriteString(d.Flush())
		if b.String() != g.Text {
			t.Errorf("streamed %q, want %q", b.String(), g.Text)
		}
	}
}

// TestStoriesPerplexityTokens follows the reference perplexity protocol: the first
// 32768 characters of the text, CRLF→LF, encoded without BOS; the first 16 ids must
// match.
func TestStoriesPerplexityTokens(t *testing.T) {
	tok := stories(t)
	want := loadReference(t).Perplexity.FirstTokens
	text := []rune(assets.Text)
	if len(text) < 32768 {
		t.Fatalf("built-in text has %d characters, want at least 32768", len(text))
	}
	s := strings.ReplaceAll(string(text[:32768]), "\r\n", "\n")
	ids := tok.Encode(s, false)
	if len(ids) < 8*512 {
		t.Errorf("%d tokens, the protocol needs at least 4096", len(ids))
	}
	if !slices.Equal(ids[:len(want)], want) {
		t.Errorf("first tokens %v, want %v", ids[:len(want)], want)
	}
	if back := tok.Decode(append([]int32{tok.BOS()}, ids...)); back != s {
		t.Errorf("Decode(BOS + Encode(text)) differs from the text")
	}
}

// llamaSPMCases are expected encodings (without BOS) on the 32k Llama SentencePiece
// vocabulary, from llama.cpp's models/ggml-vocab-llama-spm.gguf.out, which the
// Hugging Face Llama-2 tokenizer produced for the inputs in llama.cpp's
// convert_hf_to_gguf_update.py.
var llamaSPMCases = []struct {
	text string
	ids  []int32
}{
	{"ied 4 ½ months", []int32{474, 287, 29871, 29946, 29871, 30226, 7378}},
	{"Führer", []int32{383, 4000, 261}},
	{"", nil},
	{" ", []int32{259}},
	{"  ", []int32{1678}},
	{"   ", []int32{268}},
	{"\t", []int32{29871, 12}},
	{"\n", []int32{29871, 13}},
	{"\n\n", []int32{29871, 13, 13}},
	{"\n\n\n", []int32{29871, 13, 13, 13}},
	{"\t\n", []int32{29871, 12, 13}},
	{"Hello world", []int32{15043, 3186}},
	{" Hello world", []int32{29871, 15043, 3186}},
	{"Hello World", []int32{15043, 2787}},
	{" Hello World", []int32{29871, 15043, 2787}},
	{" Hello World!", []int32{29871, 15043, 2787, 29991}},
	{"Hello, world!", []int32{15043, 29892, 3186, 29991}},
	{" Hello, world!", []int32{29871, 15043, 29892, 3186, 29991}},
	{" this is 🦙.cpp", []int32{29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223}},
	{"w048 7tuijk dsdfhu", []int32{281, 29900, 29946, 29947, 29871, 29955, 9161, 13535, 18031, 2176, 6905}},
	{"нещо на Български", []int32{1538, 4851, 665, 1386, 29713, 1305}},
	{"\u1780\u17b6\u1793\u17cb\u178f\u17c2\u1796\u17b7\u179f\u17c1\u179f\u17a2\u17b6\u1785\u1781\u179b\u1785\u17c1\u1789", []int32{29871, 31849, 31324, 31934, 228, 162, 142, 228, 161, 146, 228, 162, 133, 228, 161, 153, 228, 161, 186, 31708, 228, 162, 132, 31708, 228, 161, 165, 31324, 228, 161, 136, 228, 161, 132, 228, 161, 158, 228, 161, 136, 228, 162, 132, 228, 161, 140}},
	{"🚀 (normal) 😶\u200d🌫\ufe0f (multiple emojis concatenated) ✅ (only emoji that has its own token)", []int32{29871, 243, 162, 157, 131, 313, 8945, 29897, 29871, 243, 162, 155, 185, 30722, 243, 162, 143, 174, 30598, 313, 20787, 953, 3848, 275, 16125, 630, 29897, 29871, 31681, 313, 6194, 953, 29877, 2397, 393, 756, 967, 1914, 5993, 29897}},
	{"Hello", []int32{15043}},
	{" Hello", []int32{29871, 15043}},
	{"  Hello", []int32{259, 15043}},
	{"   Hello", []int32{1678, 15043}},
	{"    Hello", []int32{268, 15043}},
	{"    Hello\n    Hello", []int32{268, 15043, 13, 1678, 15043}},
	{" (", []int32{29871, 313}},
	{"\n =", []int32{29871, 13, 353}},
	{"' era", []int32{525, 3152}},
	{"Hello, y'all! How are you 😁 ?我想在apple工作1314151天～", []int32{15043, 29892, 343, 29915, 497, 29991, 1128, 526, 366, 29871, 243, 162, 155, 132, 1577, 30672, 31522, 30505, 11548, 31041, 30732, 29896, 29941, 29896, 29946, 29896, 29945, 29896, 30408, 30739}},
	// chktxt of convert_hf_to_gguf_update.py at the time of that .out file.
	{"\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫\ufe0f (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 " +
		"\u1780\u17b6\u1793\u17cb\u178f\u17c2\u1796\u17b7\u179f\u17c1\u179f\u17a2\u17b6\u1785😁 ?我想在apple工作1314151天～ ------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? " +
		"I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL",
		[]int32{29871, 13, 29871, 13, 13, 29871, 13, 13, 13, 29871, 12, 29871, 12, 12, 29871, 12, 13, 259, 13, 1678, 13, 268, 13, 418, 13, 243, 162, 157, 131, 313, 8945, 29897, 29871, 243, 162, 155, 185, 30722, 243, 162, 143, 174, 30598, 313, 20787, 953, 3848, 275, 16125, 630, 29897, 29871, 31681, 29871, 243, 162, 169, 156, 243, 162, 169, 156, 29871, 29941, 29871, 29941, 29941, 29871, 29941, 29941, 29941, 29871, 29941, 29941, 29941, 29941, 29871, 29941, 29941, 29941, 29941, 29941, 29871, 29941, 29941, 29941, 29941, 29941, 29941, 29871, 29941, 29941, 29941, 29941, 29941, 29941, 29941, 29871, 29941, 29941, 29941, 29941, 29941, 29941, 29941, 29941, 29871, 29941, 29889, 29941, 29871, 29941, 636, 29941, 29871, 29941, 856, 29941, 29871, 31849, 31324, 31934, 228, 162, 142, 228, 161, 146, 228, 162, 133, 228, 161, 153, 228, 161, 186, 31708, 228, 162, 132, 31708, 228, 161, 165, 31324, 228, 161, 136, 243, 162, 155, 132, 1577, 30672, 31522, 30505, 11548, 31041, 30732, 29896, 29941, 29896, 29946, 29896, 29945, 29896, 30408, 30739, 448, 23648, 2751, 25512, 1538, 4851, 665, 1386, 29713, 1305, 14550, 4907, 11120, 16159, 16159, 16159, 15945, 15945, 3045, 636, 6824, 6824, 6824, 8773, 8773, 8773, 306, 29915, 345, 1063, 525, 29873, 1025, 540, 29915, 29879, 727, 29892, 525, 1525, 366, 1854, 29973, 525, 29924, 451, 1854, 306, 29915, 645, 1207, 372, 29892, 525, 29928, 366, 763, 777, 23429, 29973, 1334, 29915, 29963, 29872, 263, 29915, 29880, 29931}},
	{"3", []int32{29871, 29941}},
	{"33", []int32{29871, 29941, 29941}},
	{"333", []int32{29871, 29941, 29941, 29941}},
	{"333333333", []int32{29871, 29941, 29941, 29941, 29941, 29941, 29941, 29941, 29941, 29941}},
}

func TestLlamaSPMVocab(t *testing.T) {
	tok := llamaSPM(t)
	if tok.VocabSize() != 32000 || tok.BOS() != 1 || tok.EOS() != 2 || tok.UNK() != 0 {
		t.Fatalf("vocab size %d, BOS %d, EOS %d, UNK %d; want 32000, 1, 2, 0",
			tok.VocabSize(), tok.BOS(), tok.EOS(), tok.UNK())
	}
	for _, c := range llamaSPMCases {
		t.Run(c.text, func(t *testing.T) {
			got := tok.Encode(c.text, false)
			if !slices.Equal(got, c.ids) {
				t.Fatalf("Encode(%q) = %v, want %v", c.text, got, c.ids)
			}
			withBOS := tok.Encode(c.text, true)
			if len(withBOS) != len(c.ids)+1 || withBOS[0] != 1 || !slices.Equal(withBOS[1:], c.ids) {
				t.Errorf("Encode(%q, BOS) = %v, want 1 then %v", c.text, withBOS, c.ids)
			}
			if back := tok.Decode(withBOS); back != c.text {
				t.Errorf("Decode(%v) = %q, want %q", withBOS, back, c.text)
			}
			// Without BOS the dummy space stays.
			if want := " " + c.text; c.text != "" && tok.Decode(got) != want {
				t.Errorf("Decode(%v) = %q, want %q", got, tok.Decode(got), want)
			}
		})
	}
}

// TestLlamaSPMWholeWords checks that common words are single pieces of the 32k
// vocabulary and that longer texts round-trip.
func TestLlamaSPMWholeWords(t *testing.T) {
	tok := llamaSPM(t)
	for _, w := range []string{"the", "Hello", "world", "information", "language", "because", "London", "children"} {
		ids := tok.Encode(w, false)
		if len(ids) != 1 || tok.Token(ids[0]) != spaceMark+w {
			var pieces []string
			for _, id := range ids {
				pieces = append(pieces, tok.Token(id))
			}
			t.Errorf("Encode(%q) = %v %q, want the single piece %q", w, ids, pieces, spaceMark+w)
		}
	}
	texts := []string{
		assets.Text[:4000],
		"Ünïcödé façade — naïve résumé; 東京は日本の首都です。 Привет, мир! 🎉🎉",
		"tabs\tand\r\nwindows line ends\u00a0and nbsp",
		"  leading and trailing spaces  ",
		"▁literal▁marks",
	}
	for _, s := range texts {
		want := strings.ReplaceAll(s, spaceMark, " ")
		if got := tok.Decode(tok.Encode(s, true)); got != want {
			t.Errorf("round trip of %.40q gave %.40q", s, got)
		}
	}
}

// TestSPMMergeOrder checks the merge rule on a tiny vocabulary whose result is worked
// out by hand: pieces by score, ties to the leftmost pair, byte fallback and UNK.
func TestSPMMergeOrder(t *testing.T) {
	v := Vocab{
		Model: ModelLlama,
		//            0        1      2       3    4    5    6     7     8      9       10      11
		Tokens: []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "bc", "▁a", "abc", "<0xC3>"},
		Scores: []float32{0, 0, 0, -1, -2, -2, -2, -5, -3, -4, -6, 0},
		Types:  []int32{2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6},
		BOS:    1, EOS: 2, UNK: 0, PAD: -1,
		AddSpacePrefix: true,
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		ids  []int32
	}{
		// "▁abc": pairs ▁a(-4) ab(-5) bc(-3): bc first → ▁ a bc; then ▁a(-4) beats
		// abc(-6) → ▁a bc, and ▁abc is not a piece.
		{"abc", []int32{9, 8}},
		// "▁ab": ▁a(-4) beats ab(-5) → ▁a b.
		{"ab", []int32{9, 5}},
		// "▁cab": pairs ▁c(none) ca(none) ab(-5) → ▁ c ab; no more.
		{"cab", []int32{3, 6, 7}},
		// "▁bcbc": bc(-3) twice, tie → leftmost first, both merge; cb not a piece.
		{"bcbc", []int32{3, 8, 8}},
		// "▁é": é (C3 A9) not a piece; C3 has a byte token, A9 does not → UNK for the char.
		{"é", []int32{3, 0}},
		// "▁d": d unknown, no byte tokens for it → UNK.
		{"d", []int32{3, 0}},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text, false); !slices.Equal(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.ids)
		}
	}
	// Equal scores: in "▁aba" with ab and ba both scoring the same, the leftmost wins.
	v2 := v
	v2.Tokens = append(slices.Clone(v.Tokens), "ba")
	v2.Scores = append(slices.Clone(v.Scores), -5)
	v2.Types = append(slices.Clone(v.Types), 1)
	v2.Scores[9] = -9 // make ▁a lose to ab/ba
	tok2, err := New(v2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok2.Encode("aba", false), []int32{3, 7, 4}; !slices.Equal(got, want) {
		t.Errorf("tie: Encode(%q) = %v, want %v", "aba", got, want)
	}
}

func TestQueueKeys(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	if scoreKey(negZero, 5) != scoreKey(0, 5) {
		t.Error("-0 and +0 scores differ")
	}
	ordered := []uint64{ // merged first → last
		scoreKey(float32(math.Inf(1)), 7),
		scoreKey(3, 0),
		scoreKey(3, 1),
		scoreKey(0.5, 0),
		scoreKey(0, 2),
		scoreKey(-1e-30, 0),
		scoreKey(-2, 0),
		scoreKey(-2, 1<<31-1),
		scoreKey(float32(math.Inf(-1)), 0),
	}
	for i := 1; i < len(ordered); i++ {
		if ordered[i-1] <= ordered[i] {
			t.Errorf("score key %d (%#x) does not come before %d (%#x)", i-1, ordered[i-1], i, ordered[i])
		}
	}
	if !(rankKey(0, 9) > rankKey(1, 0) && rankKey(1, 0) > rankKey(1, 1)) {
		t.Error("rank keys out of order")
	}
	for _, left := range []int32{0, 1, 12345, 1<<31 - 1} {
		if got := (bigram{key: scoreKey(-3, left)}).left(); got != left {
			t.Errorf("left() = %d, want %d", got, left)
		}
	}
	// The heap pops in key order.
	var q bigramQueue
	keys := []uint64{5, 1, 9, 3, 9, 7, 2, 8}
	for _, k := range keys {
		q.push(bigram{key: k})
	}
	var got []uint64
	for len(q) > 0 {
		got = append(got, q.pop().key)
	}
	want := slices.Sorted(slices.Values(keys))
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Errorf("pop order %v, want %v", got, want)
	}
}

// TestSplitWordsEquivalent compares encoding word by word with encoding whole texts on
// the 32k vocabulary, and checks which vocabularies allow word splitting.
func TestSplitWordsEquivalent(t *testing.T) {
	tok := llamaSPM(t)
	if !tok.splitWords {
		t.Fatal("the Llama vocabulary should allow word splitting")
	}
	whole := *tok
	whole.splitWords = false
	texts := []string{assets.Text[:20000], "  a  b   c\n\n d ▁x▁▁y", "\xe2▁ \xe2\x96 \x81 z"}
	for _, c := range llamaSPMCases {
		texts = append(texts, c.text)
	}
	for _, s := range texts {
		if a, b := tok.Encode(s, true), whole.Encode(s, true); !slices.Equal(a, b) {
			t.Errorf("Encode(%.40q): by words %v, whole %v", s, a, b)
		}
	}
	for _, c := range []struct {
		piece string
		inner bool
	}{{"▁the", false}, {"▁▁", false}, {"a▁", true}, {"▁a▁b", true}, {"▁▁▁x", false}, {"x", false}, {"\xff▁", true}} {
		if got := innerSpaceMark(c.piece); got != c.inner {
			t.Errorf("innerSpaceMark(%q) = %v", c.piece, got)
		}
	}
	v := Vocab{Model: ModelLlama, Tokens: []string{"<unk>", "a▁b"}, BOS: -1, EOS: -1, UNK: 0, PAD: -1}
	if nt, err := New(v); err != nil || nt.splitWords {
		t.Errorf("vocabulary with a▁b: splitWords %v, err %v", nt != nil && nt.splitWords, err)
	}
}
