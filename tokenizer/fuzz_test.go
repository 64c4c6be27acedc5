package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"kvq/assets"
)

// FuzzRoundTrip checks, for arbitrary bytes (valid UTF-8 or not), that SentencePiece
// encoding word by word equals encoding the whole text at once, that every
// pre-tokenizer splits them into non-empty parts that concatenate to the input, that
// encoding never panics, only yields valid ids, and that decoding (at once or streamed) restores the
// input on the stories260K vocabulary (up to ▁ → space, and with the dummy space in
// front when there is no BOS) and on a byte-level BPE vocabulary (exactly), and that a
// stream decoder writes only valid UTF-8 when the input is valid.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		"", " ", "Once upon a time", "  two  spaces", "naïve café ☕", "\n\nnew lines\n",
		"Lily's 3 cats!", "\xff\xfe\xe2\x98", "▁", "a▁b \u2581", "東京🎉\t\r\n", "'s 're 've",
		"<s>x</s><|endoftext|>",
	} {
		f.Add(s, true)
	}
	spm := stories(f)
	bpe, err := New(testGPT2Vocab())
	if err != nil {
		f.Fatal(err)
	}
	whole := *spm
	whole.splitWords = false
	if !spm.splitWords {
		f.Fatal("stories260K vocabulary should allow word splitting")
	}
	f.Fuzz(func(t *testing.T, s string, bos bool) {
		if a, b := spm.Encode(s, bos), whole.Encode(s, bos); !slices.Equal(a, b) {
			t.Fatalf("Encode(%q) by words %v, whole %v", s, a, b)
		}
		for _, pre := range []preTokenizer{preGPT2, preLlama3, preQwen2} {
			var b strings.Builder
			split(s, pre, func(part string) {
				if part == "" {
					t.Fatalf("pre %d: empty part splitting %q", pre, s)
				}
				b.WriteString(part)
			})
			if b.String() != s {
				t.Fatalf("pre %d: parts of %q concatenate to %q", pre, s, b.String())
			}
		}
		for _, c := range []struct {
			tok  *Tokenizer
			want string
		}{
			{spm, strings.ReplaceAll(s, spaceMark, " ")},
			{bpe, s},
		} {
			if c.tok.prefix && !bos && s != "" {
				c.want = " " + c.want // no BOS: the dummy space stays
			}
			ids := c.tok.Encode(s, bos)
			if m := c.tok.MaxTokenBytes(); len(ids)*m < len(s) {
				t.Fatalf("%s: %d bytes encode to %d tokens, below the bound of %d bytes a token", c.tok.Model(), len(s), len(ids), m)
			}
			for _, id := range append(c.tok.EncodeSpecial(s, bos), ids...) {
				if id < 0 || int(id) >= c.tok.VocabSize() {
					t.Fatalf("%s: encoding %q produced id %d out of range", c.tok.Model(), s, id)
				}
			}
			if got := c.tok.Decode(ids); got != c.want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q", c.tok.Model(), s, got, c.want)
			}
			d := c.tok.NewStreamDecoder()
			var b strings.Builder
			for _, id := range ids {
				p := d.Write(id)
				if utf8.ValidString(s) && !utf8.ValidString(p) {
					t.Fatalf("%s: streaming %q wrote invalid UTF-8 %q", c.tok.Model(), s, p)
				}
				b.WriteString(p)
			}
			b.WriteString(d.Flush())
			if b.String() != c.want {
				t.Fatalf("%s: streamed %q, want %q", c.tok.Model(), b.String(), c.want)
			}
		}
	})
}

// benchText returns the first n characters of the built-in text.
func benchText(b *testing.B, n int) string {
	r := []rune(assets.Text)
	if len(r) < n {
		b.Fatalf("built-in text has %d characters, want %d", len(r), n)
	}
	return string(r[:n])
}

func BenchmarkEncode(b *testing.B) {
	text := benchText(b, 32768)
	for _, c := range []struct {
		name string
		tok  *Tokenizer
		text string
	}{
		{"stories260K/32k-chars", stories(b), text},
		{"llama-spm-32k/32k-chars", llamaSPM(b), text},
		{"llama-spm-32k/32k-spaces", llamaSPM(b), strings.Repeat(" ", 32768)},
		{"gpt2-test/32k-chars", mustNew(b, testGPT2Vocab()), text},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				c.tok.Encode(c.text, true)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := stories(b)
	ids := tok.Encode(benchText(b, 32768), true)
	b.ResetTimer()
	for b.Loop() {
		tok.Decode(ids)
	}
}

func mustNew(b *testing.B, v Vocab) *Tokenizer {
	b.Helper()
	tok, err := New(v)
	if err != nil {
		b.Fatal(err)
	}
	return tok
}
