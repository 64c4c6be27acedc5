package grammar

import (
	"testing"

	"kvq/assets"
	"kvq/gguf"
	"kvq/tokenizer"
)

// llamaVocab is the Vocab of the real llama SentencePiece vocabulary (assets).
func llamaVocab(b testing.TB) *Vocab {
	b.Helper()
	f, err := gguf.Parse(assets.LlamaVocab)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	pieces := make([]string, tok.VocabSize())
	for i := range pieces {
		pieces[i] = tok.Piece(int32(i))
	}
	v, err := NewVocab(pieces, tok.IsEOG)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkMask: one mask over the 32,000-token LLaMA vocabulary, in a string and
// between values.
func BenchmarkMask(b *testing.B) {
	v := llamaVocab(b)
	logits := make([]float32, len(v.pieces))
	for _, c := range []struct{ name, prefix string }{{"string", `{"a":[1,{"b":"some te`}, {"value", `{"a":[1,{"b":`}} {
		b.Run(c.name, func(b *testing.B) {
			j := v.JSONObject()
			j.st.feed([]byte(c.prefix))
			for b.Loop() {
				j.Mask(logits, 100)
			}
		})
	}
}
