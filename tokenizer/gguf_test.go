package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"kvq/gguf"
)

// kv is one metadata entry for ggufBytes. Values: string, bool, int32, uint32,
// []string, []float32, []int32.
type kv struct {
	key string
	val any
}

// ggufBytes writes a GGUF v3 file with the given metadata and no tensors.
func ggufBytes(t *testing.T, kvs ...kv) []byte {
	t.Helper()
	le := binary.LittleEndian
	b := []byte("GGUF")
	b = le.AppendUint32(b, 3)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, uint64(len(kvs)))
	str := func(s string) {
		b = le.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, e := range kvs {
		str(e.key)
		switch v := e.val.(type) {
		case string:
			b = le.AppendUint32(b, 8)
			str(v)
		case bool:
			b = le.AppendUint32(b, 7)
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case int32:
			b = le.AppendUint32(b, 5)
			b = le.AppendUint32(b, uint32(v))
		case uint32:
			b = le.AppendUint32(b, 4)
			b = le.AppendUint32(b, v)
		case []string:
			b = le.AppendUint32(b, 9)
			b = le.AppendUint32(b, 8)
			b = le.AppendUint64(b, uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		case []float32:
			b = le.AppendUint32(b, 9)
			b = le.AppendUint32(b, 6)
			b = le.AppendUint64(b, uint64(len(v)))
			for _, x := range v {
				b = le.AppendUint32(b, math.Float32bits(x))
			}
		case []int32:
			b = le.AppendUint32(b, 9)
			b = le.AppendUint32(b, 5)
			b = le.AppendUint64(b, uint64(len(v)))
			for _, x := range v {
				b = le.AppendUint32(b, uint32(x))
			}
		default:
			t.Fatalf("ggufBytes: unsupported value %T", v)
		}
	}
	for len(b)%gguf.DefaultAlignment != 0 {
		b = append(b, 0)
	}
	return b
}

func parseGGUF(t *testing.T, kvs ...kv) *gguf.File {
	t.Helper()
	f, err := gguf.Parse(ggufBytes(t, kvs...))
	if err != nil {
		t.Fatalf("parsing test GGUF: %v", err)
	}
	return f
}

var (
	tinyTokens = []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "<0x0A>"}
	tinyScores = []float32{0, 0, 0, -1, -2, -2, -0.5, 0}
	tinyTypes  = []int32{2, 3, 3, 1, 1, 1, 1, 6}
)

func TestFromGGUFDefaults(t *testing.T) {
	// Only model and tokens: llama defaults apply.
	tok, err := FromGGUF(parseGGUF(t, kv{KeyModel, "llama"}, kv{KeyTokens, tinyTokens}))
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || tok.UNK() != 0 || tok.PAD() != -1 || !tok.AddBOS() || tok.AddEOS() {
		t.Errorf("defaults: BOS %d EOS %d UNK %d PAD %d AddBOS %v AddEOS %v",
			tok.BOS(), tok.EOS(), tok.UNK(), tok.PAD(), tok.AddBOS(), tok.AddEOS())
	}
	// No types: <s>, </s> are control by id, <0x0A> a byte token by spelling.
	if !tok.IsControl(1) || !tok.IsControl(2) || tok.Type(7) != TypeByte || tok.Type(0) != TypeUnknown {
		t.Errorf("inferred types: %d %d %d %d", tok.Type(0), tok.Type(1), tok.Type(2), tok.Type(7))
	}
	// Without scores all pieces score 0; ▁a is the only pair that is a piece.
	if got, want := tok.Encode("aa\n", true), []int32{1, 6, 4, 7}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}

	tok, err = FromGGUF(parseGGUF(t,
		kv{KeyModel, "llama"}, kv{KeyTokens, tinyTokens}, kv{KeyScores, tinyScores}, kv{KeyTokenType, tinyTypes},
		kv{KeyBOS, uint32(0xFFFFFFFF)}, kv{KeyEOS, int32(-1)}, kv{KeyPAD, int32(2)}, kv{KeyUNK, uint32(0)},
		kv{KeyAddBOS, false}, kv{KeyAddEOS, true}, kv{KeyAddSpacePrefix, false}))
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != -1 || tok.EOS() != -1 || tok.PAD() != 2 || tok.AddBOS() || !tok.AddEOS() {
		t.Errorf("explicit: BOS %d EOS %d PAD %d AddBOS %v AddEOS %v", tok.BOS(), tok.EOS(), tok.PAD(), tok.AddBOS(), tok.AddEOS())
	}
	// No space prefix and no BOS token: "ab" stays a b.
	if got, want := tok.Encode("ab", true), []int32{4, 5}; !slices.Equal(got, want) {
		t.Errorf("Encode without prefix = %v, want %v", got, want)
	}
	if got := tok.Decode([]int32{3, 4}); got != " a" {
		t.Errorf("Decode without prefix = %q, want %q", got, " a")
	}
}

func TestFromGGUFGPT2(t *testing.T) {
	v := testGPT2Vocab()
	tok, err := FromGGUF(parseGGUF(t, kv{KeyModel, "gpt2"}, kv{KeyPre, "gpt2"}, kv{KeyTokens, v.Tokens},
		kv{KeyMerges, v.Merges}, kv{KeyEOS, uint32(v.EOS)}))
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != -1 || tok.EOS() != v.EOS || tok.AddBOS() || tok.Model() != ModelGPT2 {
		t.Errorf("BOS %d EOS %d AddBOS %v model %q", tok.BOS(), tok.EOS(), tok.AddBOS(), tok.Model())
	}
	ids := tok.Encode("hello world", true)
	if len(ids) != 2 || tok.Token(ids[0]) != "hello" || tok.Token(ids[1]) != "Ġworld" {
		t.Errorf("Encode = %v", ids)
	}
}

func TestFromGGUFEOG(t *testing.T) {
	tokens := append(slices.Clone(tinyTokens), "<|im_end|>", "<|eot|>", "<|im_start|>")
	types := append(slices.Clone(tinyTypes), 3, 3, 3)
	tok, err := FromGGUF(parseGGUF(t, kv{KeyModel, "llama"}, kv{KeyTokens, tokens}, kv{KeyTokenType, types},
		kv{KeyEOT, uint32(9)}))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int32]bool{2: true, 8: true, 9: true, 10: false, 1: false, 4: false} {
		if got := tok.IsEOG(id); got != want {
			t.Errorf("IsEOG(%d %q) = %v, want %v", id, tok.Token(id), got, want)
		}
	}
	if got := tok.EncodeSpecial("<|im_start|>a<|im_end|>", false); !slices.Equal(got, []int32{10, 6, 8}) {
		t.Errorf("EncodeSpecial = %v, want [10 6 8]", got)
	}
}

func TestFromGGUFErrors(t *testing.T) {
	base := []kv{{KeyModel, "llama"}, {KeyTokens, tinyTokens}}
	with := func(extra ...kv) []kv { return append(slices.Clone(base), extra...) }
	cases := []struct {
		name string
		kvs  []kv
		want string
	}{
		{"no model", []kv{{KeyTokens, tinyTokens}}, KeyModel + " missing"},
		{"model type", []kv{{KeyModel, uint32(1)}, {KeyTokens, tinyTokens}}, KeyModel + " is"},
		{"unknown model", []kv{{KeyModel, "bert"}, {KeyTokens, tinyTokens}}, `"bert" is not supported`},
		{"no tokens", []kv{{KeyModel, "llama"}}, KeyTokens + " missing"},
		{"tokens type", []kv{{KeyModel, "llama"}, {KeyTokens, []int32{1, 2}}}, KeyTokens + " is an array of"},
		{"scores type", with(kv{KeyScores, []string{"x"}}), KeyScores},
		{"scores length", with(kv{KeyScores, []float32{1}}), "1 scores for 8 tokens"},
		{"types type", with(kv{KeyTokenType, "normal"}), KeyTokenType},
		{"BOS type", with(kv{KeyBOS, "one"}), KeyBOS + " is"},
		{"BOS range", with(kv{KeyBOS, uint32(8)}), "BOS id 8"},
		{"UNK negative", with(kv{KeyUNK, int32(-5)}), KeyUNK + " = -5"},
		{"EOT range", with(kv{KeyEOT, uint32(20)}), "EOG[0] id 20"},
		{"add_bos type", with(kv{KeyAddBOS, uint32(1)}), KeyAddBOS + " is"},
		{"gpt2 no merges", []kv{{KeyModel, "gpt2"}, {KeyTokens, tinyTokens}}, KeyMerges + " missing"},
		{"gpt2 bad merge", []kv{{KeyModel, "gpt2"}, {KeyTokens, tinyTokens}, {KeyMerges, []string{"ab"}}}, `merge 0 "ab"`},
		{"gpt2 pre", []kv{{KeyModel, "gpt2"}, {KeyPre, "falcon"}, {KeyTokens, tinyTokens}, {KeyMerges, []string{"a b"}}}, `pre-tokenizer "falcon" is not supported`},
	}
	for _, c := range cases {
		_, err := FromGGUF(parseGGUF(t, c.kvs...))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, ErrInvalidVocab) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want ErrInvalidVocab mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := FromGGUF(nil); !errors.Is(err, ErrInvalidVocab) {
		t.Errorf("FromGGUF(nil) = %v", err)
	}
}
