package kv

import (
	"fmt"
	"testing"
)

// invarianceSpecs are the caches TestStepsInvariant runs: every codec family, KIVI
// value windows shorter than, equal to and longer than the key group, keys stored
// before RoPE, values stored per channel in blocks other than the key groups, sinks.
var invarianceSpecs = []string{
	"f32", "f16", "q8", "q4", "fp8e4m3",
	"kivi4/kivi2", "kivi4/kivi2:r=16", "kivi4/kivi2:r=20", "kivi4/kivi2:r=5", "kivi4/kivi2:r=48",
	"kivi2:rope=pre/kivi2", "kivi2:rope=pre/kivi2:r=20",
	"kivi4/kivi2:sinks=4", "kivi4/kivi2:r=20,sinks=4", "q4:sinks=4", "q8/kivi4:r=5",
	"kivi2:g=16,r=8,sinks=3", "kivi3:rope=pre,g=16/kivi2:r=8,sinks=3",
	"kivi4/chan4", "kivi2:rope=pre/chan2:g=16",
}

// TestStepsInvariant: a token's attention output is the same bits however its
// sequence's history was split into steps — the whole prompt in one step, one token
// per step, or chunks of any size (an engine cuts prompts by its per-step token
// budget, which depends on what else runs) — on every layer, for every cache type
// and head size, over the whole history or an attention window (whose views start
// anywhere). Each schedule prefills part of the history in its chunks and decodes
// the rest one token per step. With KVQ_NOSIMD=1 it checks the scalar kernels.
func TestStepsInvariant(t *testing.T) {
	const n, decodeFrom = 300, 290
	chunks := []int{1, 5, 20, 37, 129}
	for _, spec := range invarianceSpecs {
		for _, d := range []int{8, 16, 64} {
			if testing.Short() && d != 16 {
				continue
			}
			for _, window := range []int{0, 280} {
				t.Run(fmt.Sprintf("%s/d=%d/window=%d", spec, d, window), func(t *testing.T) {
					f := newFixture(t, spec, 2, 4, 2, d, n, 0)
					if window > 0 {
						// Layer 0 attends over its last window tokens (its views start
						// anywhere), layer 1 over the whole history.
						f.setWindows(t, window, 0)
					}
					run := func(chunk int) [][]float32 {
						id, err := f.st.NewSeq()
						if err != nil {
							t.Fatal(err)
						}
						defer f.st.Drop(id)
						all := make([][]float32, f.layers)
						for p := 0; p < n; {
							b := min(p+chunk, decodeFrom)
							if p >= decodeFrom {
								b = p + 1
							}
							o := f.mustStep(t, id, p, b)
							for l := range all {
								all[l] = append(all[l], o[l]...)
							}
							p = b
						}
						return all
					}
					want := run(n)
					for _, chunk := range chunks {
						got := run(chunk)
						for l := range got {
							if bitsEqual(got[l], want[l]) {
								continue
							}
							hd := f.heads * d
							for i := range got[l] {
								if got[l][i] != want[l][i] {
									t.Fatalf("chunks of %d, layer %d: token %d differs from the whole prefill by %g (first of max diff %g)",
										chunk, l, i/hd, got[l][i]-want[l][i], maxAbsDiff(got[l], want[l]))
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestStepsInvariantLong is TestStepsInvariant over a history longer than an
// attention chunk (attn.DefaultChunkTokens) and than attn.ParallelMinTokens: a decode
// step then splits the history over workers and merges chunks, which a prefill's
// tile of queries must do at the same positions.
func TestStepsInvariantLong(t *testing.T) {
	if testing.Short() {
		t.Skip("long histories")
	}
	const n = 2100
	for _, spec := range []string{"f16", "q4", "kivi4/kivi2:r=20"} {
		t.Run(spec, func(t *testing.T) {
			f := newFixture(t, spec, 1, 4, 2, 16, n, 0)
			// run prefills chunks of chunk tokens up to decodeFrom, then decodes.
			run := func(chunk, decodeFrom int) []float32 {
				id, err := f.st.NewSeq()
				if err != nil {
					t.Fatal(err)
				}
				defer f.st.Drop(id)
				var all []float32
				for p := 0; p < n; {
					b := min(p+chunk, decodeFrom)
					if p >= decodeFrom {
						b = p + 1
					}
					all = append(all, f.mustStep(t, id, p, b)[0]...)
					p = b
				}
				return all
			}
			want := run(n, n)
			for _, sc := range [][2]int{{700, 2060}, {2047, 2070}, {1000, 1000}} {
				if got := run(sc[0], sc[1]); !bitsEqual(got, want) {
					t.Errorf("chunks of %d up to %d, then decode: outputs differ from the whole prefill (max diff %g)", sc[0], sc[1], maxAbsDiff(got, want))
				}
			}
		})
	}
}
