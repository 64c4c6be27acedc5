package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

func TestByteAlphabet(t *testing.T) {
	// Spot checks from GPT-2's bytes_to_unicode.
	for _, c := range []struct {
		b byte
		r rune
	}{{'!', '!'}, {'~', '~'}, {0, 0x100}, {' ', 'Ġ'}, {'\n', 'Ċ'}, {0x7F, 0x121}, {0xA0, 0x142}, {0xAD, 0x143}, {0xA1, 0xA1}, {0xFF, 0xFF}} {
		if byteRune[c.b] != c.r {
			t.Errorf("byte %#x maps to %U, want %U", c.b, byteRune[c.b], c.r)
		}
	}
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := byteRune[b]
		if seen[r] {
			t.Fatalf("rune %U used twice", r)
		}
		seen[r] = true
		if got := unmapBytes(string(r)); got != string([]byte{byte(b)}) {
			t.Errorf("unmap(%U) = %q, want byte %#x", r, got, b)
		}
	}
}

func TestSplitGPT2(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"I'm here", []string{"I", "'m", " here"}},
		{"don't", []string{"don", "'t"}},
		{"'ll've'd", []string{"'ll", "'ve", "'d"}},
		{"he's 'RE", []string{"he", "'s", " '", "RE"}},
		{"'", []string{"'"}},
		{"  spaces", []string{" ", " spaces"}},
		{"a   \n", []string{"a", "   \n"}},
		{"x\n\ny", []string{"x", "\n", "\n", "y"}},
		{" \t x", []string{" \t", " x"}},
		{"end  ", []string{"end", "  "}},
		{"abc123def", []string{"abc", "123", "def"}},
		{" 123", []string{" 123"}},
		{"$100.00", []string{"$", "100", ".", "00"}},
		{"!!!?? ok", []string{"!!!??", " ok"}},
		{"naïve café", []string{"naïve", " café"}},
		{"3½ 東京", []string{"3½", " 東京"}},
		{"\u00a0x", []string{"\u00a0", "x"}},
		{"\xff\xfe a", []string{"\xff\xfe", " a"}},
		{" ", []string{" "}},
		{"a\xe2\x98", []string{"a", "\xe2\x98"}},
	}
	for _, c := range cases {
		var got []string
		splitGPT2(c.in, func(s string) { got = append(got, s) })
		if !slices.Equal(got, c.want) {
			t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// testGPT2Vocab is a byte-level vocabulary: every byte's character, then the results of
// a handful of merges.
func testGPT2Vocab() Vocab {
	v := Vocab{Model: ModelGPT2, BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(byteRune[b]))
	}
	v.Merges = []string{
		"l l",       // 0
		"h e",       // 1
		"he ll",     // 2
		"Ġ w",       // 3
		"o r",       // 4
		"Ġw or",     // 5
		"hell o",    // 6
		"Ġwor l",    // 7
		"Ġworl d",   // 8
		"' s",       // 9
		"1 2",       // 10
		"Ġ 1",       // 11
		"! !",       // 12
		"Ġworld !!", // 13: never applies, the pre-tokenizer separates the parts
	}
	v.Tokens = append(v.Tokens, "ll", "he", "hell", "Ġw", "or", "Ġwor", "hello", "Ġworl", "Ġworld", "'s", "12", "Ġ1", "!!", "Ġworld!!")
	v.Tokens = append(v.Tokens, "<|endoftext|>")
	v.EOS = int32(len(v.Tokens) - 1)
	v.BOS = v.EOS
	return v
}

func TestGPT2Encode(t *testing.T) {
	tok, err := New(testGPT2Vocab())
	if err != nil {
		t.Fatal(err)
	}
	id := func(p string) int32 {
		for i := range int32(tok.VocabSize()) {
			if tok.Token(i) == p {
				return i
			}
		}
		t.Fatalf("no piece %q", p)
		return -1
	}
	cases := []struct {
		text   string
		pieces []string
	}{
		// h e l l o: ll(0) → he(1) → hell(2) → hello(6).
		{"hello", []string{"hello"}},
		// Ġ w o r l d: Ġw(3) → or(4) → Ġwor(5) → Ġworl(7) → Ġworld(8).
		{" world", []string{"Ġworld"}},
		// 12(10) outranks Ġ1(11), and Ġ·12 is no merge.
		{" 12", []string{"Ġ", "12"}},
		// !!(12) twice at equal rank: the leftmost merges, the last ! stays alone.
		{"!!!", []string{"!!", "!"}},
		{"hello world's 12!!!\n\n", []string{"hello", "Ġworld", "'s", "Ġ", "12", "!!", "!", "Ċ", "Ċ"}},
		// No merge touches the Latin-1 bytes of é (C3 A9 → Ã ©).
		{"hé", []string{"h", "Ã", "©"}},
		{"", nil},
	}
	for _, c := range cases {
		var want []int32
		for _, p := range c.pieces {
			want = append(want, id(p))
		}
		got := tok.Encode(c.text, false)
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v (%q)", c.text, got, want, c.pieces)
		}
		if back := tok.Decode(got); back != c.text {
			t.Errorf("Decode(Encode(%q)) = %q", c.text, back)
		}
	}
	eot := tok.EOS()
	if got := tok.Encode("hello", true); !slices.Equal(got, []int32{eot, id("hello")}) {
		t.Errorf("Encode with BOS = %v", got)
	}
	if !tok.IsControl(eot) {
		// Types are absent: BOS/EOS are inferred to be control tokens.
		t.Errorf("<|endoftext|> is not a control token")
	}
	if got := tok.Decode([]int32{eot, id("hello"), eot}); got != "hello" {
		t.Errorf("Decode with control tokens = %q", got)
	}
}

func TestGPT2RoundTrip(t *testing.T) {
	tok, err := New(testGPT2Vocab())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"hello world, hello worlds!! 12 121212",
		"\x00\x01\x7f\x80\xff invalid \xc3 bytes \xe2\x98",
		"Ünïcödé façade — 東京 🎉 \t\r\n  x  ",
		"<|endoftext|>",
	} {
		if got := tok.Decode(tok.Encode(s, false)); got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
}

func TestSplitLlama3Qwen2(t *testing.T) {
	cases := []struct {
		in            string
		llama3, qwen2 []string // qwen2 nil: same as llama3
	}{
		{"Hello world", []string{"Hello", " world"}, nil},
		{"I'M here", []string{"I", "'M", " here"}, nil},
		{"x'RE y'll", []string{"x", "'RE", " y", "'ll"}, nil},
		{"don't", []string{"don", "'t"}, nil},
		{"hello 'RE", []string{"hello", " '", "RE"}, nil},
		{"12345 apples", []string{"123", "45", " apples"}, []string{"1", "2", "3", "4", "5", " apples"}},
		{"abc123", []string{"abc", "123"}, []string{"abc", "1", "2", "3"}},
		{"!hello", []string{"!hello"}, nil},
		{"\thello", []string{"\thello"}, nil},
		{"\nhello", []string{"\n", "hello"}, nil},
		{"a...\n\nb", []string{"a", "...\n\n", "b"}, nil},
		{"x  \n  y", []string{"x", "  \n", " ", " y"}, nil},
		{" ?!", []string{" ?!"}, nil},
		{"🦙.cpp", []string{"🦙.", "cpp"}, nil},
		{".cpp", []string{".cpp"}, nil},
		{"end  ", []string{"end", "  "}, nil},
		{"a\r\n", []string{"a", "\r\n"}, nil},
		{" 42", []string{" ", "42"}, []string{" ", "4", "2"}},
		{"\xffabc", []string{"\xffabc"}, nil},
	}
	for _, c := range cases {
		if c.qwen2 == nil {
			c.qwen2 = c.llama3
		}
		for _, p := range []struct {
			pre  preTokenizer
			want []string
		}{{preLlama3, c.llama3}, {preQwen2, c.qwen2}} {
			var got []string
			split(c.in, p.pre, func(s string) { got = append(got, s) })
			if !slices.Equal(got, p.want) {
				t.Errorf("pre %d: split(%q) = %q, want %q", p.pre, c.in, got, p.want)
			}
		}
	}
}

// TestIgnoreMerges checks that the Llama 3 pre-tokenizer takes a word that is a piece
// whole even when no merge rule builds it, and that GPT-2's does not.
func TestIgnoreMerges(t *testing.T) {
	v := testGPT2Vocab()
	v.Tokens = append(v.Tokens, "cab")
	cab := int32(len(v.Tokens) - 1)
	for _, c := range []struct {
		pre  string
		want []int32
	}{
		{"gpt2", []int32{'c', 'a', 'b'}},
		{"llama-bpe", []int32{cab}},
		{"qwen2", []int32{'c', 'a', 'b'}},
	} {
		v.Pre = c.pre
		tok, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode("cab", false); !slices.Equal(got, c.want) {
			t.Errorf("pre %q: Encode(cab) = %v, want %v", c.pre, got, c.want)
		}
	}
	v.Pre = "falcon"
	if _, err := New(v); err == nil {
		t.Error("unknown pre-tokenizer accepted")
	}
}

// TestPreTokenizersMatchRegex compares the hand-written pre-tokenizers with the regular
// expressions themselves, as the Python regex module applies them, on random texts
// (testdata/pretok.json, made by testdata/pretok_gen.py).
func TestPreTokenizersMatchRegex(t *testing.T) {
	data, err := os.ReadFile("testdata/pretok.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []map[string]any `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 100 {
		t.Fatalf("%d cases, want at least 100", len(ref.Cases))
	}
	pres := map[string]preTokenizer{"gpt2": preGPT2, "llama3": preLlama3, "qwen2": preQwen2}
	for _, c := range ref.Cases {
		text, _ := c["text"].(string)
		for name, pre := range pres {
			parts, ok := c[name].([]any)
			if !ok {
				t.Fatalf("case %q lacks %s", text, name)
			}
			var want []string
			for _, p := range parts {
				s, _ := p.(string)
				want = append(want, s)
			}
			var got []string
			split(text, pre, func(s string) { got = append(got, s) })
			if !slices.Equal(got, want) {
				t.Errorf("%s: split(%q) = %q, regex gives %q", name, text, got, want)
			}
		}
	}
}

// TestGPT2TrainedVocab encodes texts with a 400-merge byte-level BPE vocabulary trained
// on TinyStories and compares with GPT-2's original encoder.py algorithm
// (testdata/gpt2_bpe.json, made by testdata/bpe_gen.py).
func TestGPT2TrainedVocab(t *testing.T) {
	data, err := os.ReadFile("testdata/gpt2_bpe.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Tokens []string `json:"tokens"`
		Merges []string `json:"merges"`
		Cases  []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 || len(ref.Merges) == 0 {
		t.Fatal("reference has no cases or merges")
	}
	eot := int32(len(ref.Tokens) - 1)
	tok, err := New(Vocab{Model: ModelGPT2, Tokens: ref.Tokens, Merges: ref.Merges, BOS: eot, EOS: eot, UNK: -1, PAD: -1})
	if err != nil {
		t.Fatal(err)
	}
	merged := 0
	for _, c := range ref.Cases {
		got := tok.Encode(c.Text, false)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q) =\n%v, want\n%v", c.Text, got, c.IDs)
		}
		if back := tok.Decode(got); back != c.Text {
			t.Errorf("Decode(Encode(%q)) = %q", c.Text, back)
		}
		for _, id := range got {
			if id >= 256 {
				merged++
			}
		}
	}
	if merged < 100 {
		t.Errorf("only %d merged tokens in all cases: the test does not exercise merges", merged)
	}
}
