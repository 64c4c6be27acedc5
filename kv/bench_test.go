package kv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"kvq/attn"
	"kvq/internal/procstat"
)

// BenchmarkDecodeAttention measures one decode step's attention (one query, one
// layer) over a history of ctx tokens, per cache type: head size 64, 8 KV heads,
// 32 query heads (GQA 4). Bytes per op are the layer's cache bytes the step reads
// (blocks plus full-precision tails), so MB/s is the cache read bandwidth and
// tok/s the decode rate of one layer; cpu-ms/op is the process CPU time per step,
// the figure to compare when the machine is shared.
//
//	go test ./kv -run '^$' -bench DecodeAttention -benchtime=200ms
func BenchmarkDecodeAttention(b *testing.B) {
	specs := []string{"f32", "f16", "bf16", "q8", "fp8e4m3", "fp8e5m2", "q4", "q2", "kivi8", "kivi4", "kivi2", "kivi4/kivi2"}
	for _, ctx := range []int{512, 4096, 32768} {
		for _, spec := range specs {
			b.Run(fmt.Sprintf("ctx=%d/%s", ctx, spec), func(b *testing.B) { benchDecode(b, spec, ctx, 0) })
		}
	}
}

// BenchmarkDecodeAttentionWorkers is the 32k decode with its chunks spread over two
// goroutines (flash-decoding split and merge).
func BenchmarkDecodeAttentionWorkers(b *testing.B) {
	for _, spec := range []string{"f32", "q8", "kivi4/kivi2"} {
		b.Run(fmt.Sprintf("ctx=32768/%s/workers=2", spec), func(b *testing.B) { benchDecode(b, spec, 32768, 2) })
	}
}

func benchDecode(b *testing.B, spec string, ctx, workers int) {
	const heads, kvh, d = 32, 8, 64
	st, err := New(Config{Layers: 1, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: MustParseSpec(spec), AttnWorkers: workers})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := st.NewSeq()
	r := rand.New(rand.NewPCG(1, uint64(ctx)))
	const chunk = 512
	k, v := normalKV(r, chunk*kvh*d)
	// History of ctx−1 tokens, then the decode token.
	for n := 0; n < ctx-1; {
		m := min(chunk, ctx-1-n)
		if err := st.Grow(id, make([]int32, m)); err != nil {
			b.Fatal(err)
		}
		if err := st.Append(0, id, k[:m*kvh*d], v[:m*kvh*d]); err != nil {
			b.Fatal(err)
		}
		n += m
	}
	if err := st.Grow(id, []int32{0}); err != nil {
		b.Fatal(err)
	}
	if err := st.Append(0, id, k[:kvh*d], v[:kvh*d]); err != nil {
		b.Fatal(err)
	}
	q := normals(r, heads*d)
	out := make([]float32, heads*d)
	b.SetBytes(st.Usage().AllocBytes)
	b.ResetTimer()
	cpu0 := procstat.CPU()
	for i := 0; i < b.N; i++ {
		if err := st.Attend(0, id, q, out); err != nil {
			b.Fatal(err)
		}
	}
	cpu := procstat.CPU() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
	// CPU time per step: comparable across cache types even when other processes
	// share the cores (wall time then also measures their load).
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkDecodeAttentionKernels is the 32k decode with the scalar kernels and with
// the SIMD ones, one
// worker and the automatic split: the kernels' speed-up measured in one run.
//
//	go test ./kv -run '^$' -bench DecodeAttentionKernels -benchtime=200ms
func BenchmarkDecodeAttentionKernels(b *testing.B) {
	defer attn.SetSIMD(true)
	for _, spec := range []string{"f32", "q8", "q4", "kivi4/kivi2"} {
		for _, simd := range []bool{false, true} {
			for _, workers := range []int{1, 0} {
				name := fmt.Sprintf("ctx=32768/%s/simd=%v/workers=%d", spec, simd, workers)
				b.Run(name, func(b *testing.B) {
					attn.SetSIMD(simd)
					benchDecode(b, spec, 32768, workers)
				})
			}
		}
	}
}

// BenchmarkStepAttention measures the cache's share of one batched decode step of
// llama-134m's shape (12 layers, 12 heads of 64, no GQA): 16 sequences of ctx
// tokens each (and one of 4096) grow by one token, and for every layer each appends its keys and
// values and attends, one sequence after another on one goroutine (the model runs
// the sequences of a layer on its threads, each such call alone). The step is then
// undone (Truncate), so the blocks are written again, not faulted in; where the
// cache cannot be cut back (KIVI keeps the rows of an unfinished group only), the
// history grows by a token per step instead. cpu-ms/op is the process CPU time per
// step.
//
//	go test ./kv -run '^$' -bench StepAttention -benchtime=100x
func BenchmarkStepAttention(b *testing.B) {
	for _, spec := range []string{"f16", "q8", "kivi4/kivi2"} {
		for _, c := range [][2]int{{16, 16}, {16, 64}, {16, 144}, {16, 512}, {1, 4096}} {
			b.Run(fmt.Sprintf("%s/seqs=%d/ctx=%d", spec, c[0], c[1]), func(b *testing.B) { benchStep(b, spec, c[0], c[1], false) })
		}
	}
}

// BenchmarkStepAttendBatch is BenchmarkStepAttention's step as a model runs it: per
// layer every sequence appends, then one AttendBatch attends them all (on
// DefaultWorkers goroutines).
//
//	go test ./kv -run '^$' -bench StepAttendBatch -benchtime=100x
func BenchmarkStepAttendBatch(b *testing.B) {
	for _, spec := range []string{"f16", "q8"} {
		for _, ctx := range []int{16, 64, 144} {
			b.Run(fmt.Sprintf("%s/seqs=16/ctx=%d", spec, ctx), func(b *testing.B) { benchStep(b, spec, 16, ctx, true) })
		}
	}
}

// benchStep runs BenchmarkStepAttention's step, through AttendBatch if batch.
func benchStep(b *testing.B, spec string, seqs, ctx int, batch bool) {
	const layers, heads, d = 12, 12, 64
	st, err := New(Config{Layers: layers, Heads: heads, KVHeads: heads, HeadDim: d, Spec: MustParseSpec(spec)})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, uint64(ctx)))
	rl := heads * d
	k, v := normalKV(r, ctx*rl)
	ids := make([]SeqID, seqs)
	for i := range ids {
		if ids[i], err = st.NewSeq(); err != nil {
			b.Fatal(err)
		}
		// A history of ctx−1 tokens; the step adds the ctx-th.
		if err := st.Grow(ids[i], make([]int32, ctx-1)); err != nil {
			b.Fatal(err)
		}
		for l := range layers {
			if err := st.Append(l, ids[i], k[:(ctx-1)*rl], v[:(ctx-1)*rl]); err != nil {
				b.Fatal(err)
			}
		}
	}
	q := normals(r, rl)
	out := make([]float32, rl)
	qs, outs := make([][]float32, seqs), make([][]float32, seqs)
	for i := range qs {
		qs[i], outs[i] = q, make([]float32, rl)
	}
	undo := true
	step := func() {
		for _, id := range ids {
			if err := st.Grow(id, []int32{0}); err != nil {
				b.Fatal(err)
			}
		}
		for l := range layers {
			for _, id := range ids {
				if err := st.Append(l, id, k[(ctx-1)*rl:], v[(ctx-1)*rl:]); err != nil {
					b.Fatal(err)
				}
				if batch {
					continue
				}
				if err := st.Attend(l, id, q, out); err != nil {
					b.Fatal(err)
				}
			}
			if batch {
				if err := st.AttendBatch(l, ids, qs, outs); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, id := range ids {
			if !undo {
				break
			}
			if err := st.Truncate(id, ctx-1); err != nil {
				if id != ids[0] {
					b.Fatal(err)
				}
				undo = false
			}
		}
	}
	step() // the step's blocks are faulted in once, before the timing
	b.ResetTimer()
	cpu0 := procstat.CPU()
	for i := 0; i < b.N; i++ {
		step()
	}
	cpu := procstat.CPU() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// normals returns n values drawn from a standard normal.
func normals(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// normalKV returns n keys and n values drawn from a standard normal, a key and a
// value in turn.
func normalKV(r *rand.Rand, n int) (k, v []float32) {
	k, v = make([]float32, n), make([]float32, n)
	for i := range k {
		k[i] = float32(r.NormFloat64())
		v[i] = float32(r.NormFloat64())
	}
	return k, v
}
