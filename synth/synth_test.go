package synth

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"kvq/gguf"
)

// tiny is a small custom shape: 2 layers, grouped-query attention, a vocabulary cut to
// 300 pieces.
var tiny = Shape{Name: "tiny", Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96,
	Vocab: 300, Ctx: 128, RMSEps: 1e-5, RopeBase: 10000}

// tinyQwen has q/k/v biases and a tied output.
var tinyQwen = Shape{Name: "tiny-qwen", Arch: "qwen2", Dim: 64, Layers: 2, Heads: 4, KVHeads: 1, FFN: 128,
	Vocab: 320, Ctx: 256, RMSEps: 1e-6, RopeBase: 1e6, QKVBias: true, Tied: true}

func write(t *testing.T, s Shape, w gguf.TensorType, seed uint64) (*gguf.File, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteShape(&buf, s, w, seed); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f, buf.Bytes()
}

// wantTensors lists the expected tensors of a shape, written out independently of
// Shape.tensors.
func wantTensors(s Shape, w gguf.TensorType) []gguf.TensorInfo {
	d, f, v, kv := uint64(s.Dim), uint64(s.FFN), uint64(s.Vocab), uint64(s.KVHeads*s.Dim/s.Heads)
	ts := []gguf.TensorInfo{{Name: "token_embd.weight", Dims: []uint64{d, v}, Type: w}}
	for l := 0; l < s.Layers; l++ {
		add := func(name string, typ gguf.TensorType, dims ...uint64) {
			ts = append(ts, gguf.TensorInfo{Name: fmt.Sprintf("blk.%d.%s", l, name), Dims: dims, Type: typ})
		}
		add("attn_norm.weight", gguf.TypeF32, d)
		add("attn_q.weight", w, d, d)
		add("attn_k.weight", w, d, kv)
		add("attn_v.weight", w, d, kv)
		add("attn_output.weight", w, d, d)
		if s.QKVBias {
			add("attn_q.bias", gguf.TypeF32, d)
			add("attn_k.bias", gguf.TypeF32, kv)
			add("attn_v.bias", gguf.TypeF32, kv)
		}
		add("ffn_norm.weight", gguf.TypeF32, d)
		add("ffn_gate.weight", w, d, f)
		add("ffn_up.weight", w, d, f)
		add("ffn_down.weight", w, f, d)
	}
	ts = append(ts, gguf.TensorInfo{Name: "output_norm.weight", Dims: []uint64{d}, Type: gguf.TypeF32})
	if !s.Tied {
		ts = append(ts, gguf.TensorInfo{Name: "output.weight", Dims: []uint64{d, v}, Type: w})
	}
	return ts
}

func values(t *testing.T, f *gguf.File, name string) []float32 {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("tensor %q missing", name)
	}
	b, err := f.TensorData(ti)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, ti.Elems())
	if err := gguf.Dequantize(ti.Type, out, b); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteShapeLayout(t *testing.T) {
	for _, s := range []Shape{tiny, tinyQwen} {
		for _, w := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0} {
			t.Run(s.Name+"/"+w.String(), func(t *testing.T) {
				f, data := write(t, s, w, 7)
				a := s.Arch + "."
				u := []struct {
					key  string
					want uint64
				}{
					{a + "context_length", uint64(s.Ctx)}, {a + "embedding_length", uint64(s.Dim)},
					{a + "block_count", uint64(s.Layers)}, {a + "feed_forward_length", uint64(s.FFN)},
					{a + "attention.head_count", uint64(s.Heads)}, {a + "attention.head_count_kv", uint64(s.KVHeads)},
					{a + "rope.dimension_count", 16}, {a + "vocab_size", uint64(s.Vocab)},
					{"general.file_type", map[gguf.TensorType]uint64{gguf.TypeF32: 0, gguf.TypeF16: 1, gguf.TypeQ8_0: 7}[w]},
					{"tokenizer.ggml.bos_token_id", 1}, {"tokenizer.ggml.eos_token_id", 2},
				}
				for _, c := range u {
					if got, ok := f.Uint(c.key); !ok || got != c.want {
						t.Errorf("%s = %d, %v; want %d", c.key, got, ok, c.want)
					}
				}
				if arch, _ := f.String("general.architecture"); arch != s.Arch {
					t.Errorf("architecture %q", arch)
				}
				if m, _ := f.String("tokenizer.ggml.model"); m != "llama" {
					t.Errorf("tokenizer model %q", m)
				}
				if eps, _ := f.Float(a + "attention.layer_norm_rms_epsilon"); float32(eps) != s.RMSEps {
					t.Errorf("eps %g", eps)
				}
				if base, _ := f.Float(a + "rope.freq_base"); float32(base) != s.RopeBase {
					t.Errorf("rope base %g", base)
				}
				toks, _ := f.Strings("tokenizer.ggml.tokens")
				scores, _ := f.Float32s("tokenizer.ggml.scores")
				types, _ := f.Int32s("tokenizer.ggml.token_type")
				if len(toks) != s.Vocab || len(scores) != s.Vocab || len(types) != s.Vocab || toks[3] != "<0x00>" {
					t.Errorf("vocabulary: %d tokens, %d scores, %d types", len(toks), len(scores), len(types))
				}

				want := wantTensors(s, w)
				if len(f.Tensors) != len(want) {
					t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
				}
				var total uint64
				for i, ti := range f.Tensors {
					if ti.Name != want[i].Name || ti.Type != want[i].Type || !reflect.DeepEqual(ti.Dims, want[i].Dims) {
						t.Errorf("tensor %d = %s %v %v, want %s %v %v", i, ti.Name, ti.Type, ti.Dims, want[i].Name, want[i].Type, want[i].Dims)
					}
					total = ti.Offset + ti.Size
				}
				// The file ends with the last tensor, padded to the 32-byte alignment.
				if end := (f.DataOffset + total + 31) / 32 * 32; end != uint64(len(data)) {
					t.Errorf("data ends at %d, file is %d bytes", end, len(data))
				}
				for _, name := range []string{"blk.0.attn_norm.weight", "blk.1.ffn_norm.weight", "output_norm.weight"} {
					for i, v := range values(t, f, name) {
						if v != 1 {
							t.Fatalf("%s[%d] = %v, want 1", name, i, v)
						}
					}
				}
			})
		}
	}
}

// TestWeightStatistics checks that random weights and biases are N(0, 0.02²) and
// that distinct tensors hold distinct values.
func TestWeightStatistics(t *testing.T) {
	f, _ := write(t, tinyQwen, gguf.TypeF32, 1)
	for _, name := range []string{"token_embd.weight", "blk.1.ffn_down.weight", "blk.0.attn_q.weight", "blk.0.attn_q.bias"} {
		v := values(t, f, name)
		var sum, sq float64
		for _, x := range v {
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		n := float64(len(v))
		mean, std := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
		// Standard error of the mean is 0.02/sqrt(n); allow 5 of them, and 15% on the std
		// (the bias has only 64 values).
		if math.Abs(mean) > 5*WeightStd/math.Sqrt(n) || math.Abs(std-WeightStd) > 0.15*WeightStd {
			t.Errorf("%s: mean %.5f std %.5f over %d values", name, mean, std, len(v))
		}
	}
	a, b := values(t, f, "blk.0.ffn_gate.weight"), values(t, f, "blk.0.ffn_up.weight")
	if reflect.DeepEqual(a, b) {
		t.Error("ffn_gate and ffn_up hold the same values")
	}
}

func TestDeterminismAndTypes(t *testing.T) {
	_, a := write(t, tiny, gguf.TypeQ8_0, 5)
	_, b := write(t, tiny, gguf.TypeQ8_0, 5)
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different files")
	}
	_, c := write(t, tiny, gguf.TypeQ8_0, 6)
	if bytes.Equal(a, c) || len(a) != len(c) {
		t.Errorf("seeds 5 and 6: equal %v, sizes %d %d", bytes.Equal(a, c), len(a), len(c))
	}
	// The same seed gives the same values in every weight type, up to rounding.
	f32, _ := write(t, tiny, gguf.TypeF32, 5)
	f16, _ := write(t, tiny, gguf.TypeF16, 5)
	q8, _ := write(t, tiny, gguf.TypeQ8_0, 5)
	for _, name := range []string{"token_embd.weight", "blk.1.attn_v.weight", "output.weight"} {
		ref, h, q := values(t, f32, name), values(t, f16, name), values(t, q8, name)
		for i, x := range ref {
			if h[i] != gguf.F16ToF32(gguf.F32ToF16(x)) {
				t.Fatalf("%s[%d]: f16 file %v, f32 file %v", name, i, h[i], x)
			}
		}
		for blk := 0; blk < len(ref)/32; blk++ {
			var amax float64
			for _, x := range ref[32*blk : 32*blk+32] {
				amax = math.Max(amax, math.Abs(float64(x)))
			}
			for i := 32 * blk; i < 32*blk+32; i++ {
				if math.Abs(float64(q[i]-ref[i])) > amax/127*0.57 {
					t.Fatalf("%s[%d]: q8_0 file %v, f32 file %v", name, i, q[i], ref[i])
				}
			}
		}
	}
}

// TestQ4K: a Q4_K file holds, tensor by tensor, QuantizeQ4_K of the values the F32
// file of the same seed holds, and says so in general.file_type (llama.cpp's
// MOSTLY_Q4_K_S).
func TestQ4K(t *testing.T) {
	s := Shape{Name: "tiny-256", Arch: "llama", Dim: 256, Layers: 1, Heads: 4, KVHeads: 2, FFN: 512,
		Vocab: 300, Ctx: 64, RMSEps: 1e-5, RopeBase: 10000}
	f32, _ := write(t, s, gguf.TypeF32, 3)
	q4k, _ := write(t, s, gguf.TypeQ4_K, 3)
	if ft, _ := q4k.Uint("general.file_type"); ft != 14 {
		t.Errorf("general.file_type %d, want 14", ft)
	}
	for _, name := range []string{"token_embd.weight", "blk.0.attn_k.weight", "blk.0.ffn_down.weight", "output.weight"} {
		ti, ok := q4k.Tensor(name)
		if !ok || ti.Type != gguf.TypeQ4_K {
			t.Fatalf("%s: %v %v, want a Q4_K tensor", name, ok, ti.Type)
		}
		got, err := q4k.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(got))
		if err := gguf.QuantizeQ4_K(want, values(t, f32, name)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the Q4_K file's data is not QuantizeQ4_K of the F32 file's values", name)
		}
	}
}

func TestVocabularyPadding(t *testing.T) {
	s := Shape{Name: "padded", Arch: "llama", Dim: 32, Layers: 1, Heads: 2, KVHeads: 2, FFN: 32,
		Vocab: 32064, Ctx: 64, RMSEps: 1e-5, RopeBase: 10000, Tied: true}
	f, _ := write(t, s, gguf.TypeQ8_0, 1)
	ref, err := gguf.Parse(spmVocab)
	if err != nil {
		t.Fatal(err)
	}
	refTok, _ := ref.Strings("tokenizer.ggml.tokens")
	refScore, _ := ref.Float32s("tokenizer.ggml.scores")
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	scores, _ := f.Float32s("tokenizer.ggml.scores")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	if len(toks) != 32064 || !reflect.DeepEqual(toks[:32000], refTok) || !reflect.DeepEqual(scores[:32000], refScore) {
		t.Fatalf("first 32000 pieces differ from the embedded vocabulary (%d tokens)", len(toks))
	}
	for i := 32000; i < 32064; i++ {
		if toks[i] != fmt.Sprintf("<placeholder_%d>", i) || types[i] != 5 || scores[i] != -1e9 {
			t.Fatalf("token %d = %q type %d score %g", i, toks[i], types[i], scores[i])
		}
	}
	// Small vocabularies keep the first pieces.
	g, _ := write(t, tiny, gguf.TypeF32, 1)
	if toks, _ := g.Strings("tokenizer.ggml.tokens"); !reflect.DeepEqual(toks, refTok[:300]) {
		t.Error("cut vocabulary differs from the first 300 pieces")
	}
}

func TestShapes(t *testing.T) {
	// Parameter counts computed by hand from the published shapes:
	// llama-134m:  2·768·32000 + 12·(4·768² + 3·768·2048 + 2·768) + 768
	// smollm2-135m: 576·49152 + 30·(2·576² + 2·576·192 + 3·576·1536 + 2·576) + 576
	// qwen2.5-0.5b: 896·151936 + 24·(2·896² + 2·896·128 + 3·896·4864 + 896+2·128 + 2·896) + 896
	// qwen3-0.6b:  1024·151936 + 28·(2·1024·2048 + 2·1024² + 3·1024·3072 + 2·1024 + 2·128) + 1024
	// gemma2-2b:   2304·256000 + 26·(2·2304·2048 + 2·2304·1024 + 3·2304·9216 + 4·2304) + 2304
	// gemma3-1b:   1152·262144 + 26·(2·1152·1024 + 2·1152·256 + 3·1152·6912 + 4·1152 + 2·256) + 1152
	// phi3-mini-4k: 2·3072·32064 + 32·(3072·9216 + 3072² + 3072·16384 + 8192·3072 + 2·3072) + 3072
	// mistral-7b-v0.1: 2·4096·32000 + 32·(2·4096² + 2·4096·1024 + 3·4096·14336 + 2·4096) + 4096
	// (each the published parameter count of the model).
	want := map[string]uint64{"llama-134m": 134105856, "smollm2-135m": 134515008, "qwen2.5-0.5b": 494032768,
		"qwen3-0.6b": 596049920, "gemma2-2b": 2614341888, "gemma3-1b": 999885952, "phi3-mini-4k": 3821079552,
		"mistral-7b-v0.1": 7241732096}
	if !reflect.DeepEqual(ShapeNames(), []string{"llama-134m", "smollm2-135m", "qwen2.5-0.5b", "qwen3-0.6b", "gemma2-2b", "gemma3-1b", "phi3-mini-4k", "mistral-7b-v0.1"}) {
		t.Errorf("ShapeNames() = %v", ShapeNames())
	}
	for _, s := range Shapes {
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
		if got := s.Params(); got != want[s.Name] {
			t.Errorf("%s: %d parameters, want %d", s.Name, got, want[s.Name])
		}
		if _, ok := Lookup(s.Name); !ok {
			t.Errorf("Lookup(%q) failed", s.Name)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	bad := func(mod func(s *Shape)) Shape { s := tiny; mod(&s); return s }
	cases := []struct {
		s    Shape
		w    gguf.TensorType
		want string
	}{
		{bad(func(s *Shape) { s.Arch = "gpt2" }), gguf.TypeF32, "architecture"},
		{bad(func(s *Shape) { s.Layers = 0 }), gguf.TypeF32, "positive"},
		{bad(func(s *Shape) { s.Heads = 3 }), gguf.TypeF32, "head width"},
		{bad(func(s *Shape) { s.KVHeads = 3 }), gguf.TypeF32, "KV heads"},
		{bad(func(s *Shape) { s.FFN = 100 }), gguf.TypeF32, "multiples of 32"},
		{bad(func(s *Shape) { s.Vocab = 200 }), gguf.TypeF32, "vocabulary 200"},
		{bad(func(s *Shape) { s.RMSEps = 0 }), gguf.TypeF32, "epsilon"},
		{tiny, gguf.TypeQ6_K, "not supported"},
		{tiny, gguf.TypeQ4_K, "multiples of 256 for Q4_K"},
	}
	for _, c := range cases {
		if err := WriteShape(&bytes.Buffer{}, c.s, c.w, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: error %v, want one containing %q", c.s, c.w, err, c.want)
		}
	}
	if err := Write(&bytes.Buffer{}, "llama-7b", gguf.TypeF32, 1); err == nil || !strings.Contains(err.Error(), `unknown shape "llama-7b"`) {
		t.Errorf("unknown shape: %v", err)
	}
	if err := WriteShape(failWriter{}, tiny, gguf.TypeF32, 1); !errors.Is(err, errFull) {
		t.Errorf("write error: %v", err)
	}
}

var errFull = errors.New("device full")

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errFull }
