package kv

import (
	"math/rand/v2"
	"testing"
)

// TestSpansFollowPositions: attention reads the history in spans of logical
// positions (SpanTokens), so a sequence gives the same bits whatever its block size
// and wherever its blocks sit (KIVI key groups of 32 tokens split over two blocks
// of 16 included): blocks of 16, 32 and 64 tokens laid out adjacent in
// their extents (read in place) or scattered over the pool (copied into the
// sequence's scratch first) attend exactly as blocks of 128 tokens do. Prefill in
// steps of several tokens and single-token decode both cross span boundaries.
func TestSpansFollowPositions(t *testing.T) {
	specs := append([]string{"kivi4/kivi2:sinks=4", "q4:sinks=4", "kivi4/kivi2:r=5"}, conformanceSpecs...)
	const n = 300
	steps := []int{0, 100, 229, 256, 270, 271, 272, n} // step boundaries: prefill chunks, then decode
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			f := newFixture(t, spec, 2, 4, 2, 16, n, 0)
			cfg := f.st.Config()
			run := func(blockTokens int, scatter bool) ([][]float32, *Store, *seq) {
				t.Helper()
				c := cfg
				c.BlockTokens, c.BudgetBytes = blockTokens, 1<<20
				st, err := New(c)
				if err != nil {
					t.Fatal(err)
				}
				if scatter {
					scatterPool(t, st)
				}
				f.st = st
				id, err := st.NewSeq()
				if err != nil {
					t.Fatal(err)
				}
				all := make([][]float32, f.layers)
				for i := 0; i+1 < len(steps); i++ {
					for p := steps[i]; p < steps[i+1]; {
						b := steps[i+1]
						if i >= 4 { // decode: one token per step
							b = p + 1
						}
						o := f.mustStep(t, id, p, b)
						// Attend copied spans within the room Grow planned and counted.
						if g := st.PoolStats().GatherBytes; g != int64(cap(st.seqs[id].gath)) {
							t.Fatalf("step [%d, %d): %d bytes of span copies counted, %d held", p, b, g, cap(st.seqs[id].gath))
						}
						for l := range all {
							all[l] = append(all[l], o[l]...)
						}
						p = b
					}
				}
				return all, st, st.seqs[id]
			}
			want, _, _ := run(128, false)
			for _, B := range []int{16, 32, 64} {
				for _, scatter := range []bool{false, true} {
					got, st, s := run(B, scatter)
					// KIVI key groups of 32 split over blocks of 16; blocks of values
					// stored per channel do not split (B rounds up to their G).
					wantB := B
					if v := st.g.layers[0].vG; v > 0 {
						wantB = (B + v - 1) / v * v
					}
					if st.g.B != wantB {
						t.Fatalf("blocks of %d asked for, %d in force, want %d", B, st.g.B, wantB)
					}
					gathered := 0
					for _, off := range s.gathAt {
						if off >= 0 {
							gathered++
						}
					}
					switch {
					case !scatter && gathered > 0:
						t.Errorf("blocks of %d adjacent: %d of %d spans copied, want all read in place", st.g.B, gathered, len(s.gathAt))
					case scatter && st.g.B < 128 && gathered == 0:
						t.Errorf("blocks of %d scattered: no span copied, the test scattered nothing", st.g.B)
					case (gathered > 0) != (st.PoolStats().GatherBytes > 0):
						t.Errorf("blocks of %d (scattered %v): %d spans copied, %d bytes planned", st.g.B, scatter, gathered, st.PoolStats().GatherBytes)
					}
					for l := range got {
						if !bitsEqual(got[l], want[l]) {
							t.Errorf("blocks of %d (scattered %v) layer %d: outputs differ from blocks of 128 (max diff %g)", st.g.B, scatter, l, maxAbsDiff(got[l], want[l]))
						}
					}
				}
			}
		})
	}
}

// scatterPool makes all of st's block memory, holds the last slot of every extent
// (so that no extent is empty) and shuffles the free list: blocks given to a
// sequence then rarely follow one another.
func scatterPool(t *testing.T, st *Store) {
	t.Helper()
	p := &st.pool
	for p.made() < p.maxBlocks {
		p.extend()
	}
	for x := range p.data {
		p.alloc(int32(min(p.made(), (x+1)*p.ext) - 1))
	}
	r := rand.New(rand.NewPCG(3, 5))
	r.Shuffle(len(p.free), func(i, j int) { p.free[i], p.free[j] = p.free[j], p.free[i] })
	for i, id := range p.free {
		p.freeAt[id] = int32(i)
	}
	if p.freshSlot() >= 0 {
		t.Fatal("scatterPool left an empty extent")
	}
}
