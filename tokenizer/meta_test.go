package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"

	"kvq/assets"
)

// readMeta decodes the metadata section of a GGUF file (v2/v3) into Go values: ints
// as int64, uints as uint64, floats as float64, strings, bools and []any for arrays.
// It exists so that the tests read vocabularies straight from the GGUF bytes.
func readMeta(data []byte) (map[string]any, error) {
	off := 0
	need := func(n int) error {
		if n < 0 || off+n > len(data) {
			return fmt.Errorf("truncated at %d (need %d)", off, n)
		}
		return nil
	}
	u32 := func() (uint32, error) {
		if err := need(4); err != nil {
			return 0, err
		}
		v := binary.LittleEndian.Uint32(data[off:])
		off += 4
		return v, nil
	}
	u64 := func() (uint64, error) {
		if err := need(8); err != nil {
			return 0, err
		}
		v := binary.LittleEndian.Uint64(data[off:])
		off += 8
		return v, nil
	}
	str := func() (string, error) {
		n, err := u64()
		if err != nil {
			return "", err
		}
		if n > uint64(len(data)) {
			return "", fmt.Errorf("string length %d too large", n)
		}
		if err := need(int(n)); err != nil {
			return "", err
		}
		s := string(data[off : off+int(n)])
		off += int(n)
		return s, nil
	}
	var value func(t uint32) (any, error)
	value = func(t uint32) (any, error) {
		switch t {
		case 0, 1, 7:
			if err := need(1); err != nil {
				return nil, err
			}
			b := data[off]
			off++
			switch t {
			case 0:
				return uint64(b), nil
			case 1:
				return int64(int8(b)), nil
			}
			return b != 0, nil
		case 2, 3:
			if err := need(2); err != nil {
				return nil, err
			}
			v := binary.LittleEndian.Uint16(data[off:])
			off += 2
			if t == 2 {
				return uint64(v), nil
			}
			return int64(int16(v)), nil
		case 4, 5, 6:
			v, err := u32()
			if t == 4 {
				return uint64(v), err
			}
			if t == 5 {
				return int64(int32(v)), err
			}
			return float64(math.Float32frombits(v)), err
		case 10, 11, 12:
			v, err := u64()
			if t == 10 {
				return v, err
			}
			if t == 11 {
				return int64(v), err
			}
			return math.Float64frombits(v), err
		case 8:
			return str()
		case 9:
			et, err := u32()
			if err != nil {
				return nil, err
			}
			n, err := u64()
			if err != nil {
				return nil, err
			}
			if n > uint64(len(data)) {
				return nil, fmt.Errorf("array length %d too large", n)
			}
			arr := make([]any, 0, n)
			for range n {
				v, err := value(et)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unknown value type %d", t)
	}
	if err := need(4); err != nil || string(data[:4]) != "GGUF" {
		return nil, fmt.Errorf("not a GGUF file")
	}
	off = 4
	if _, err := u32(); err != nil { // version
		return nil, err
	}
	if _, err := u64(); err != nil { // tensor count
		return nil, err
	}
	nkv, err := u64()
	if err != nil {
		return nil, err
	}
	meta := map[string]any{}
	for range nkv {
		k, err := str()
		if err != nil {
			return nil, err
		}
		t, err := u32()
		if err != nil {
			return nil, err
		}
		v, err := value(t)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
		meta[k] = v
	}
	return meta, nil
}

// vocabFromMeta builds a Vocab from GGUF metadata read by readMeta.
func vocabFromMeta(meta map[string]any) (Vocab, error) {
	v := Vocab{BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	v.Model, _ = meta["tokenizer.ggml.model"].(string)
	v.AddSpacePrefix = v.Model == ModelLlama
	arr := func(k string) []any { a, _ := meta[k].([]any); return a }
	for i, x := range arr("tokenizer.ggml.tokens") {
		s, ok := x.(string)
		if !ok {
			return v, fmt.Errorf("token %d is %T", i, x)
		}
		v.Tokens = append(v.Tokens, s)
	}
	for i, x := range arr("tokenizer.ggml.scores") {
		f, ok := x.(float64)
		if !ok {
			return v, fmt.Errorf("score %d is %T", i, x)
		}
		v.Scores = append(v.Scores, float32(f))
	}
	for i, x := range arr("tokenizer.ggml.token_type") {
		n, ok := x.(int64)
		if !ok {
			return v, fmt.Errorf("token type %d is %T", i, x)
		}
		v.Types = append(v.Types, int32(n))
	}
	for i, x := range arr("tokenizer.ggml.merges") {
		s, ok := x.(string)
		if !ok {
			return v, fmt.Errorf("merge %d is %T", i, x)
		}
		v.Merges = append(v.Merges, s)
	}
	id := func(k string, dst *int32) {
		if x, ok := meta[k].(uint64); ok {
			*dst = int32(x)
		}
	}
	id("tokenizer.ggml.bos_token_id", &v.BOS)
	id("tokenizer.ggml.eos_token_id", &v.EOS)
	id("tokenizer.ggml.unknown_token_id", &v.UNK)
	id("tokenizer.ggml.padding_token_id", &v.PAD)
	v.AddBOS, _ = meta["tokenizer.ggml.add_bos_token"].(bool)
	v.AddEOS, _ = meta["tokenizer.ggml.add_eos_token"].(bool)
	if b, ok := meta["tokenizer.ggml.add_space_prefix"].(bool); ok {
		v.AddSpacePrefix = b
	}
	return v, nil
}

// loadGGUF returns the tokenizer of a GGUF file's bytes.
func loadGGUF(t testing.TB, data []byte) *Tokenizer {
	t.Helper()
	meta, err := readMeta(data)
	if err != nil {
		t.Fatalf("reading GGUF metadata: %v", err)
	}
	v, err := vocabFromMeta(meta)
	if err != nil {
		t.Fatalf("reading vocabulary: %v", err)
	}
	tok, err := New(v)
	if err != nil {
		t.Fatalf("New: %v", err)
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
	data, err := os.ReadFile("testdata/ggml-vocab-llama-spm.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return loadGGUF(t, data)
}
