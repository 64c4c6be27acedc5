package model

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"kvq/gguf"
)

// TestLogitsMatchLlamaCpp compares the logits of small random gemma2 and phi3 models
// (tinyFile: F32 weights, sliding windows shorter than the tokens) with llama.cpp's on
// the same tokens: testdata/<arch>.logits holds llama.cpp b4747's logits of every token,
// computed in one batch with an f32 KV cache (llama_decode, all logits requested),
// vocabulary-many float32 per token. To remake them, run this test with
// KVQ_WRITE_MODELS=dir, which writes the models there, and run llama.cpp on them.
//
// llama.cpp's CPU GELU (GGML_GELU_FP16) looks its result up in a binary16 table: input
// and output rounded to binary16. The gemma2 model runs here with that GELU
// (geluF16Table); with kvq's exact one its logits differ from llama.cpp's by up to
// 3.6e-3 of the largest logit (26 layers of weights 10 times the usual size), which
// the test also bounds (5e-3).
func TestLogitsMatchLlamaCpp(t *testing.T) {
	t.Run("gemma2-26/exact-gelu", func(t *testing.T) { compareLlamaCpp(t, "gemma2-26", 32, 5e-3) })
	defer func(g func(float32) float32) { gelu = g }(gelu)
	gelu = geluF16Table
	t.Run("gemma2-26", func(t *testing.T) { compareLlamaCpp(t, "gemma2-26", 32, 1e-3) })
	gelu = geluTanh
	t.Run("phi3", func(t *testing.T) { compareLlamaCpp(t, "phi3", 8, 1e-3) })
}

// geluF16Table is llama.cpp's CPU GELU: inputs at or below −10 give 0, at or above 10
// themselves, others the tanh-form GELU of the input rounded to binary16, rounded to
// binary16.
func geluF16Table(v float32) float32 {
	switch {
	case v <= -10:
		return 0
	case v >= 10:
		return v
	}
	return gguf.F16ToF32(gguf.F32ToF16(geluTanh(gguf.F16ToF32(gguf.F32ToF16(v)))))
}

// compareLlamaCpp checks that tinyModel(arch)'s logits lie within tol·max|logit| of
// llama.cpp's at every position.
func compareLlamaCpp(t *testing.T, arch string, ropeDims int, tol float64) {
	toks := []int32{1, 17, 250, 3, 99, 42, 7, 7, 120, 5, 64, 200}
	if dir := os.Getenv("KVQ_WRITE_MODELS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, arch+".gguf"), tinyFile(t, arch, ropeDims), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := tinyModel(t, arch, ropeDims)
	raw, err := os.ReadFile(filepath.Join("testdata", arch+".logits"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*len(toks)*m.Vocab {
		t.Fatalf("%d bytes of llama.cpp logits, want %d tokens × %d", len(raw), len(toks), m.Vocab)
	}
	c, seq := newCache(t, m, "f32")
	got, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks, AllLogits: true}})
	if err != nil {
		t.Fatal(err)
	}
	for pos := range toks {
		var scale, worst float64
		for i := range m.Vocab {
			want := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(pos*m.Vocab+i):])))
			scale = math.Max(scale, math.Abs(want))
			worst = math.Max(worst, math.Abs(float64(got[0][pos*m.Vocab+i])-want))
		}
		if scale < 0.5 {
			t.Fatalf("pos %d: llama.cpp's logits nearly flat (max |logit| %g); the test would prove little", pos, scale)
		}
		if worst > tol*scale {
			t.Errorf("pos %d: max |logit − llama.cpp's| %.3g, max |logit| %.3g (relative %.2g)", pos, worst, scale, worst/scale)
		} else {
			t.Logf("pos %d: max |logit − llama.cpp's| %.3g, max |logit| %.3g (relative %.2g)", pos, worst, scale, worst/scale)
		}
	}
}
