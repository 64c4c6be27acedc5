package kv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// ReadKey returns a KIVI key as attention scores it: from its decoded key block,
// rotated to its position when the spec stores keys before RoPE, and in f16 while
// its block is unfinished.
func TestReadKeyKIVI(t *testing.T) {
	const kvh, L = 2, 70 // two full key blocks of 32, then 6 tokens in the tail
	for _, c := range []struct {
		spec string
		d    int
	}{
		{"kivi4/kivi2", 16},
		{"kivi4:rope=pre/kivi2", 16}, // NeoX pairs
		{"kivi8:rope=pre/kivi8", 8},  // adjacent pairs
		{"kivi2:rope=pre/kivi2", 64},
	} {
		t.Run(fmt.Sprintf("%s,d=%d", c.spec, c.d), func(t *testing.T) {
			sp := MustParseSpec(c.spec)
			cfg := Config{Layers: 1, Heads: kvh, KVHeads: kvh, HeadDim: c.d, Spec: sp}
			if sp.K.PreRoPE {
				cfg.RoPE = testRoPE(t, c.d)
			}
			st, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, uint64(c.d)))
			k, v := randRows(r, L, kvh*c.d, true), randRows(r, L, kvh*c.d, false)
			ref := newSim(t, sp, c.d, kvh, k, v, cfg.RoPE)
			id, _ := st.NewSeq()
			appendRange(t, st, id, k, v, 0, L)
			got := make([]float32, c.d)
			for p := range L {
				for h := range kvh {
					if err := st.ReadKey(id, 0, p, h, got); err != nil {
						t.Fatal(err)
					}
					want := slices.Clone(ref.k[p][h*c.d:][:c.d]) // in the tail: f16
					if p < 64 {
						want = slices.Clone(ref.kq[p][h*c.d:][:c.d])
						if cfg.RoPE != nil {
							cfg.RoPE.Rotate(want, 1, c.d, p, 0)
						}
					}
					if e := maxAbsDiff(got, want); e > 1e-6 {
						t.Fatalf("position %d head %d: ReadKey differs from the reference by %.3g", p, h, e)
					}
				}
			}
		})
	}
}
