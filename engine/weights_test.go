package engine

import (
	"slices"
	"testing"

	"kvq/gguf"
	"kvq/model"
	"kvq/synth"
)

// synthLoader returns a loader of a small random model with weights of type w
// (synth; widths are whole Q4_K super-blocks), each call a fresh model of the same
// weights.
func synthLoader(w gguf.TensorType) func(testing.TB) *model.Model {
	return func(t testing.TB) *model.Model {
		t.Helper()
		shape := synth.Shape{Name: "tiny-llama", Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512,
			Vocab: 512, Ctx: 512, RMSEps: 1e-5, RopeBase: 10000}
		f, err := synth.Parse(shape, w, 9)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.FromGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// TestWeightTypesBatchInvariant runs the engine's batch contract on quantized and
// binary16 weights, and on Q8_0 weights over quantized caches: greedy requests
// batched together, in small steps (chunked prefill beside decode), and sampled
// requests under preemption and recompute, each give the tokens the request gives
// alone. Random weights give nearly flat logits, so a changed bit in a batch would
// change tokens.
func TestWeightTypesBatchInvariant(t *testing.T) {
	for _, tc := range []struct {
		weights gguf.TensorType
		cache   string
	}{
		{gguf.TypeQ8_0, "f32"}, {gguf.TypeQ4_K, "f32"}, {gguf.TypeF16, "f32"}, {gguf.TypeQ4_0, "f32"}, {gguf.TypeQ5_0, "f32"},
		{gguf.TypeQ8_0, "q8"}, {gguf.TypeQ8_0, "q4"},
	} {
		load := synthLoader(tc.weights)
		t.Run(tc.weights.String()+"/"+tc.cache, func(t *testing.T) {
			ref := load(t)
			js := jobs(ref, 30, 7, 45, 1, 20)
			want := make([][]int32, len(js))
			for i, j := range js {
				want[i] = solo(t, ref, tc.cache, j.prompt, j.max, model.SamplerConfig{})
			}
			for _, cfg := range []Config{{}, {MaxBatchTokens: 5, MaxRunning: 3}} {
				m := load(t)
				e := newEngine(t, m, newCache(t, m, tc.cache, 0), cfg)
				for i, r := range runBatch(t, e, js, func(j job) Request {
					return Request{Prompt: j.prompt, MaxTokens: j.max, IgnoreEOS: true}
				}) {
					if got := r.Choices[0].Tokens; !slices.Equal(got, want[i]) {
						t.Errorf("%+v request %d: tokens %v\nwant %v", cfg, i, got, want[i])
					}
				}
			}
			t.Run("preemption", func(t *testing.T) { testPreemption(t, load, tc.cache, testBlockTokens) })
		})
	}
}
