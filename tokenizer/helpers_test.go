package tokenizer

import (
	"testing"

	"kvq/assets"
	"kvq/gguf"
)

// loadGGUF returns the tokenizer of a GGUF file's bytes.
func loadGGUF(t testing.TB, data []byte) *Tokenizer {
	t.Helper()
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatalf("parsing GGUF: %v", err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("FromGGUF: %v", err)
	}
	return tok
}

// stories returns the tokenizer of the built-in stories260K model.
func stories(t testing.TB) *Tokenizer {
	t.Helper()
	return loadGGUF(t, assets.Model)
}

// llamaSPM returns the tokenizer of the 32k Llama SentencePiece vocabulary.
func llamaSPM(t testing.TB) *Tokenizer {
	t.Helper()
	return loadGGUF(t, assets.LlamaVocab)
}
