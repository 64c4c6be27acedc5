package tokenizer

import (
	"fmt"

	"kvq/gguf"
)

// GGUF metadata keys read by FromGGUF (llama.cpp's names).
const (
	KeyModel          = "tokenizer.ggml.model"
	KeyPre            = "tokenizer.ggml.pre"
	KeyTokens         = "tokenizer.ggml.tokens"
	KeyScores         = "tokenizer.ggml.scores"
	KeyTokenType      = "tokenizer.ggml.token_type"
	KeyMerges         = "tokenizer.ggml.merges"
	KeyBOS            = "tokenizer.ggml.bos_token_id"
	KeyEOS            = "tokenizer.ggml.eos_token_id"
	KeyUNK            = "tokenizer.ggml.unknown_token_id"
	KeyPAD            = "tokenizer.ggml.padding_token_id"
	KeyEOT            = "tokenizer.ggml.eot_token_id"
	KeyEOM            = "tokenizer.ggml.eom_token_id"
	KeyAddBOS         = "tokenizer.ggml.add_bos_token"
	KeyAddEOS         = "tokenizer.ggml.add_eos_token"
	KeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
)

// FromGGUF builds the tokenizer that a GGUF file's metadata describes. The model and
// token list are required, and merges for "gpt2"; scores and token types are optional.
// Absent settings take llama.cpp's defaults: for "llama", BOS 1, EOS 2, UNK 0, AddBOS
// and AddSpacePrefix true; for "gpt2", no special ids and both false. PAD defaults to
// none, AddEOS to false. tokenizer.ggml.eot_token_id and eom_token_id, when present,
// go to Vocab.EOG. A special id stored as -1 (or as 0xFFFFFFFF in an unsigned
// field) means none. For "gpt2", tokenizer.ggml.pre must be absent or name a
// pre-tokenizer this package implements (see Vocab.Pre). A key of the wrong type, an unsupported model or
// pre-tokenizer, or an inconsistent vocabulary (see New) is an error that names the
// key, wrapping ErrInvalidVocab.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: nil GGUF file", ErrInvalidVocab)
	}
	var v Vocab
	var err error
	var ok bool
	if v.Model, ok, err = getString(f, KeyModel); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: %s missing", ErrInvalidVocab, KeyModel)
	}
	if v.Model != ModelLlama && v.Model != ModelGPT2 {
		return nil, fmt.Errorf("%w: %s = %q is not supported (want %q or %q)", ErrInvalidVocab, KeyModel, v.Model, ModelLlama, ModelGPT2)
	}
	llama := v.Model == ModelLlama
	if v.Model == ModelGPT2 {
		if v.Pre, _, err = getString(f, KeyPre); err != nil {
			return nil, err
		}
	}
	if v.Tokens, ok, err = getStrings(f, KeyTokens); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: %s missing", ErrInvalidVocab, KeyTokens)
	}
	if v.Scores, _, err = getFloat32s(f, KeyScores); err != nil {
		return nil, err
	}
	if v.Types, _, err = getInt32s(f, KeyTokenType); err != nil {
		return nil, err
	}
	if v.Merges, ok, err = getStrings(f, KeyMerges); err != nil {
		return nil, err
	} else if !ok && v.Model == ModelGPT2 {
		return nil, fmt.Errorf("%w: %s missing (required for %q)", ErrInvalidVocab, KeyMerges, ModelGPT2)
	}
	def := func(id int32) int32 {
		if llama {
			return id
		}
		return -1
	}
	for _, s := range []struct {
		key string
		dst *int32
		def int32
	}{
		{KeyBOS, &v.BOS, def(1)},
		{KeyEOS, &v.EOS, def(2)},
		{KeyUNK, &v.UNK, def(0)},
		{KeyPAD, &v.PAD, -1},
	} {
		if *s.dst, err = getID(f, s.key, s.def); err != nil {
			return nil, err
		}
	}
	for _, key := range []string{KeyEOT, KeyEOM} {
		id, err := getID(f, key, -1)
		if err != nil {
			return nil, err
		}
		if id >= 0 {
			v.EOG = append(v.EOG, id)
		}
	}
	for _, s := range []struct {
		key string
		dst *bool
		def bool
	}{
		{KeyAddBOS, &v.AddBOS, llama},
		{KeyAddEOS, &v.AddEOS, false},
		{KeyAddSpacePrefix, &v.AddSpacePrefix, llama},
	} {
		if *s.dst, err = getBool(f, s.key, s.def); err != nil {
			return nil, err
		}
	}
	return New(v)
}

// wrongType is the error for a metadata key holding a value of another type.
func wrongType(f *gguf.File, key, want string) error {
	val, _ := f.Value(key)
	return fmt.Errorf("%w: %s is %v, want %s", ErrInvalidVocab, key, describe(val), want)
}

func describe(v gguf.Value) string {
	if v.Type == gguf.TypeArray {
		return fmt.Sprintf("an array of %v", v.Elem)
	}
	return v.Type.String()
}

func present(f *gguf.File, key string) bool {
	_, ok := f.Value(key)
	return ok
}

func getString(f *gguf.File, key string) (string, bool, error) {
	if !present(f, key) {
		return "", false, nil
	}
	s, ok := f.String(key)
	if !ok {
		return "", false, wrongType(f, key, "a string")
	}
	return s, true, nil
}

func getStrings(f *gguf.File, key string) ([]string, bool, error) {
	if !present(f, key) {
		return nil, false, nil
	}
	s, ok := f.Strings(key)
	if !ok {
		return nil, false, wrongType(f, key, "an array of strings")
	}
	return s, true, nil
}

func getFloat32s(f *gguf.File, key string) ([]float32, bool, error) {
	if !present(f, key) {
		return nil, false, nil
	}
	s, ok := f.Float32s(key)
	if !ok {
		return nil, false, wrongType(f, key, "an array of floats")
	}
	return s, true, nil
}

func getInt32s(f *gguf.File, key string) ([]int32, bool, error) {
	if !present(f, key) {
		return nil, false, nil
	}
	s, ok := f.Int32s(key)
	if !ok {
		return nil, false, wrongType(f, key, "an array of int32-range integers")
	}
	return s, true, nil
}

// getID reads a token id; -1 and 0xFFFFFFFF mean none (-1).
func getID(f *gguf.File, key string, def int32) (int32, error) {
	if !present(f, key) {
		return def, nil
	}
	n, ok := f.Int(key)
	if !ok {
		if u, isUint := f.Uint(key); isUint {
			return 0, fmt.Errorf("%w: %s = %d is not a token id", ErrInvalidVocab, key, u)
		}
		return 0, wrongType(f, key, "an integer")
	}
	if n == -1 || n == 0xFFFFFFFF {
		return -1, nil
	}
	if n < 0 || n > 1<<31-1 {
		return 0, fmt.Errorf("%w: %s = %d is not a token id", ErrInvalidVocab, key, n)
	}
	return int32(n), nil
}

func getBool(f *gguf.File, key string, def bool) (bool, error) {
	if !present(f, key) {
		return def, nil
	}
	b, ok := f.Bool(key)
	if !ok {
		return false, wrongType(f, key, "a bool")
	}
	return b, nil
}
