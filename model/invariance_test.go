package model

import (
	"fmt"
	"math"
	"testing"

	"kvq/gguf"
	"kvq/kv"
	"kvq/synth"
)

// synthModel writes a small random model with weights of type w (synth) and loads it.
// Widths are whole Q4_K super-blocks.
func synthModel(t *testing.T, w gguf.TensorType) *Model {
	t.Helper()
	shape := synth.Shape{Name: "tiny-llama", Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512,
		Vocab: 512, Ctx: 256, RMSEps: 1e-5, RopeBase: 10000}
	f, err := synth.Parse(shape, w, 5)
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// longPrompt is a prompt of n tokens.
func longPrompt(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(1 + i*37%500)
	}
	return p
}

// TestLogitsBatchInvariant checks the forward pass's batch contract on quantized and
// binary16 weights: every logit of a sequence is the same bits whatever else shares
// its steps — alone or beside other sequences, its prompt in one step, token by token
// or in chunks, in one pass or split into passes — so a sequence recomputed after
// preemption continues exactly. Each schedule prefills four prompts and then decodes
// them together for a few steps on fixed tokens; the reference runs each sequence
// alone, whole prompt first.
func TestLogitsBatchInvariant(t *testing.T) {
	prompts := [][]int32{
		{1, 17, 300, 42, 9, 250, 77, 3, 128, 64, 11},
		{1, 500},
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23},
		{1, 99, 98, 97, 96, 95},
		longPrompt(150), // beyond KIVI's full-precision windows: a tile shares their older part
	}
	next := []int32{40, 41, 42, 43, 44, 45} // decode steps, the same token for every sequence
	for _, tc := range []struct {
		weights   gguf.TensorType
		cacheSpec string
	}{
		{gguf.TypeQ8_0, "f32"}, {gguf.TypeQ4_K, "f32"}, {gguf.TypeF16, "f32"},
		{gguf.TypeQ8_0, "fp8e4m3"}, {gguf.TypeQ8_0, "kivi4/kivi2"}, {gguf.TypeQ8_0, "q8"}, {gguf.TypeQ8_0, "q4"},
		{gguf.TypeQ8_0, "kivi4/chan4"}, {gguf.TypeQ8_0, "kivi2:rope=pre/chan2:g=16"}, // value blocks of 16 in key groups of 32
		{gguf.TypeQ8_0, "kivi4/kivi2:r=20"}, // a value window shorter than the key group
	} {
		t.Run(tc.weights.String()+"/"+tc.cacheSpec, func(t *testing.T) {
			m := synthModel(t, tc.weights)
			// run returns each sequence's logits for every prompt token and decode step,
			// prefilled chunk tokens per step (0: the whole prompt), the sequences in
			// seqs together, with passes of pass tokens.
			run := func(seqs []int, chunk, pass int) map[int][]float32 {
				m.PassTokens = pass
				defer func() { m.PassTokens = 0 }()
				cfg, err := m.CacheConfig(tc.cacheSpec, "")
				if err != nil {
					t.Fatal(err)
				}
				c, err := kv.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ids := map[int]kv.SeqID{}
				got := map[int][]float32{}
				done := map[int]int{}
				for _, s := range seqs {
					if ids[s], err = c.NewSeq(); err != nil {
						t.Fatal(err)
					}
				}
				for {
					var batch []Span
					var who []int
					for _, s := range seqs {
						p := prompts[s]
						if done[s] == len(p) {
							continue
						}
						k := len(p) - done[s]
						if chunk > 0 {
							k = min(k, chunk)
						}
						batch = append(batch, Span{Seq: ids[s], Tokens: p[done[s] : done[s]+k], AllLogits: true})
						who = append(who, s)
						done[s] += k
					}
					if len(batch) == 0 {
						break
					}
					out, err := m.Forward(c, batch)
					if err != nil {
						t.Fatal(err)
					}
					for i, s := range who {
						got[s] = append(got[s], out[i]...)
					}
				}
				for _, tok := range next {
					var batch []Span
					for _, s := range seqs {
						batch = append(batch, Span{Seq: ids[s], Tokens: []int32{tok}})
					}
					out, err := m.Forward(c, batch)
					if err != nil {
						t.Fatal(err)
					}
					for i, s := range seqs {
						got[s] = append(got[s], out[i]...)
					}
				}
				return got
			}
			want := map[int][]float32{}
			for s := range prompts {
				want[s] = run([]int{s}, 0, 0)[s]
			}
			for _, sc := range []struct {
				seqs        []int
				chunk, pass int
			}{
				{[]int{0}, 1, 0},
				{[]int{2}, 5, 0},
				{[]int{0, 1, 2, 3}, 0, 0},
				{[]int{3, 2, 1, 0}, 3, 0},
				{[]int{0, 1, 2, 3}, 0, 7},
				{[]int{2, 0}, 4, 5},
				{[]int{4}, 1, 0},
				{[]int{4, 1}, 37, 0},
			} {
				got := run(sc.seqs, sc.chunk, sc.pass)
				for _, s := range sc.seqs {
					what := fmt.Sprintf("sequence %d among %v, chunks of %d, passes of %d", s, sc.seqs, sc.chunk, sc.pass)
					if len(got[s]) != len(want[s]) {
						t.Fatalf("%s: %d logits, alone %d", what, len(got[s]), len(want[s]))
					}
					for i := range got[s] {
						if math.Float32bits(got[s][i]) != math.Float32bits(want[s][i]) {
							t.Fatalf("%s: token %d logit %d: %v, alone %v", what, i/m.Vocab, i%m.Vocab, got[s][i], want[s][i])
						}
					}
				}
			}
		})
	}
}
