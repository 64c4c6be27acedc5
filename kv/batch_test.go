package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"kvq/internal/procstat"
	"kvq/internal/workpool"
)

// TestAttendBatchShared: sequences sharing blocks — forks of one prompt, and a
// sequence adopting the prompt's cached blocks — decoding side by side get from
// AttendBatch the bits Attend gives each alone, for every codec family, with and
// without attention windows and sinks; the history they share is computed once for
// all of them (AttendStats.SharedQueries), its rows read once (AttendStats.SharedRows,
// and fewer rows read than the queries see), while a sequence with its own copy is
// attended alone.
func TestAttendBatchShared(t *testing.T) {
	const prompt, steps = 600, 4
	specs := []string{"f16", "q8", "q4", "fp8e4m3", "kivi4/kivi2", "kivi4/kivi2:r=20", "kivi2:rope=pre/kivi2", "q4:sinks=4"}
	for _, spec := range specs {
		for _, window := range []int{0, 300} {
			t.Run(fmt.Sprintf("%s/window=%d", spec, window), func(t *testing.T) {
				f := newFixture(t, spec, 2, 4, 2, 16, prompt+steps, 0)
				if window > 0 {
					f.setWindows(t, window, 0)
				}
				st := f.st
				toks := seqTokens(prompt, 5)
				a, err := st.NewSeq()
				if err != nil {
					t.Fatal(err)
				}
				f.run(t, a, toks, 0, prompt, 256)
				ids := []SeqID{a}
				for range 2 {
					id, err := st.Fork(a)
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, id)
				}
				adopted, cached, err := st.NewSeqWithPrefix(toks)
				if err != nil {
					t.Fatal(err)
				}
				if cached == 0 {
					t.Fatal("no block adopted")
				}
				f.run(t, adopted, toks, cached, prompt, 64)
				lone, _ := st.NewSeq() // another prompt: shares nothing
				ids = append(ids, adopted)
				f.run(t, lone, seqTokens(prompt, 9), 0, prompt, 300)
				ids = append(ids, lone)

				hq := f.heads * f.d
				before := st.AttendStats()
				seen, wantShared := int64(0), int64(0) // rows the queries see; queries sharing
				for step := range steps {
					q, out, alone := make([][]float32, len(ids)), make([][]float32, len(ids)), make([]float32, hq)
					for _, id := range ids {
						if err := st.Grow(id, []int32{int32(step)}); err != nil {
							t.Fatal(err)
						}
					}
					for l := 0; l < f.layers; l++ {
						for i, id := range ids {
							k := randRows(f.r, 1, f.kvh*f.d, true)
							v := randRows(f.r, 1, f.kvh*f.d, false)
							if err := st.Append(l, id, flat(k), flat(v)); err != nil {
								t.Fatal(err)
							}
							q[i], out[i] = flat(randRows(f.r, 1, hq, false)), make([]float32, hq)
						}
						pre := st.AttendStats()
						if err := st.AttendBatch(l, ids, q, out); err != nil {
							t.Fatal(err)
						}
						// Sink rows are each sequence's own and start its view: a layer
						// that sees them shares nothing.
						ly := &st.g.layers[l]
						if st.layerWindow(l) > 0 || ly.sinksK+ly.sinksV == 0 {
							wantShared += int64(len(ids) - 1)
						}
						if d := st.AttendStats().SharedQueries - pre.SharedQueries; d != wantShared-(pre.SharedQueries-before.SharedQueries) {
							t.Errorf("step %d layer %d: %d queries computed with others", step, l, d)
						}
						for i, id := range ids {
							if err := st.Attend(l, id, q[i], alone); err != nil {
								t.Fatal(err)
							}
							if !bitsEqual(out[i], alone) {
								t.Fatalf("step %d layer %d sequence %d: AttendBatch differs from Attend (max diff %g)", step, l, id, maxAbsDiff(out[i], alone))
							}
							n := st.Len(id)
							if w := st.layerWindow(l); w > 0 {
								n = min(n, w)
							}
							seen += int64(n * f.kvh)
						}
					}
				}
				got := st.AttendStats()
				got.Queries -= before.Queries
				got.SharedQueries -= before.SharedQueries
				got.Rows -= before.Rows
				got.SharedRows -= before.SharedRows
				got.AttendedRows -= before.AttendedRows
				queries := int64(steps * f.layers * len(ids))
				if got.Queries != queries {
					t.Errorf("stats %+v: want %d queries", got, queries)
				}
				if got.SharedQueries != wantShared {
					t.Errorf("stats %+v: want %d shared queries", got, wantShared)
				}
				if got.AttendedRows != seen {
					t.Errorf("stats %+v: want %d rows attended", got, seen)
				}
				if sharing := wantShared > 0; sharing != (got.SharedRows > 0) || (sharing && got.Rows >= seen) || (!sharing && got.Rows != seen) {
					t.Errorf("stats %+v: the queries see %d rows; want rows read once for all sharers: %v", got, seen, sharing)
				}
			})
		}
	}
}

// BenchmarkAttendBatch measures one decode step's attention (one layer) of 16
// sequences of 1100 tokens whose first 1024 are one prompt, in three ways: cascade,
// the sequences forked from one that computed the prompt and attended by
// AttendBatch (the shared part computed once for all); forks, the same sequences
// attended one by one, two at a time (each Attend reads the shared blocks, from the
// CPU's caches after the first); copies, each sequence holding its own copy of the
// prompt, attended by AttendBatch (nothing shared). Shape of llama-134m: 12 heads
// and KV heads of 64. cpu-ms/op is the process CPU time per step, the figure to
// compare when the machine is shared.
//
//	go test ./kv -run '^$' -bench AttendBatch -benchtime=30x -count=4
func BenchmarkAttendBatch(b *testing.B) {
	for _, spec := range []string{"f16", "q8", "q4", "kivi4/kivi2"} {
		for _, mode := range []string{"cascade", "forks", "copies"} {
			b.Run(spec+"/"+mode, func(b *testing.B) { benchAttendBatch(b, spec, mode) })
		}
	}
}

func benchAttendBatch(b *testing.B, spec, mode string) {
	shared := mode != "copies"
	const heads, kvh, d, seqs, prefix, own = 12, 12, 64, 16, 1024, 76
	st, err := New(Config{Layers: 1, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: MustParseSpec(spec)})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	rows := func(n, w int) []float32 { return normals(r, n*w) }
	step := func(id SeqID, n int) {
		if err := st.Grow(id, make([]int32, n)); err != nil {
			b.Fatal(err)
		}
		if err := st.Append(0, id, rows(n, kvh*d), rows(n, kvh*d)); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]SeqID, seqs)
	for i := range ids {
		switch {
		case i > 0 && shared:
			ids[i], err = st.Fork(ids[0])
		default:
			ids[i], err = st.NewSeq()
			if err == nil {
				step(ids[i], prefix)
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, id := range ids {
		step(id, own-1)
		step(id, 1)
	}
	q, out := make([][]float32, seqs), make([][]float32, seqs)
	for i := range q {
		q[i], out[i] = rows(1, heads*d), make([]float32, heads*d)
	}
	b.ResetTimer()
	cpu0 := procstat.CPU()
	errs := make([]error, seqs)
	for range b.N {
		if mode == "forks" {
			workpool.For(2, seqs, func(i int) { errs[i] = st.Attend(0, ids[i], q[i], out[i]) })
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if err := st.AttendBatch(0, ids, q, out); err != nil {
			b.Fatal(err)
		}
	}
	cpu := procstat.CPU() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}
