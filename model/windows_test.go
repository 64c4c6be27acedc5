package model

import (
	"math"
	"testing"

	"kvq/kv"
)

// TestWindowLayersFreeExactly: a gemma3-shaped model (six sliding layers with a window
// of 3, one global) decoding in a cache whose sliding layers free what their window
// left (blocks of 4 tokens) gives the same logits, bit for bit, as a cache that keeps
// every block (blocks longer than the history), and its sliding layers hold only the
// blocks their window reaches (kv.SteadyLayerTokens).
func TestWindowLayersFreeExactly(t *testing.T) {
	m, _ := tinyModel(t, "gemma3", 16)
	for _, spec := range []string{"f16", "q8", "kivi4/kivi2"} {
		bounded, a := newCache(t, m, spec, func(c *kv.Config) { c.BlockTokens = 4 })
		whole, b := newCache(t, m, spec, func(c *kv.Config) { c.BlockTokens = 1024 })
		toks := []int32{1, 17, 250, 3, 99, 42, 7}
		for step := 0; step < 40; step++ {
			got, err := m.Forward(bounded, []Span{{Seq: a, Tokens: toks, AllLogits: true}})
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Forward(whole, []Span{{Seq: b, Tokens: toks, AllLogits: true}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range want[0] {
				if math.Float32bits(got[0][i]) != math.Float32bits(want[0][i]) {
					t.Fatalf("%s: step %d: logit %d is %v with sliding layers' blocks freed, %v with every block kept", spec, step, i, got[0][i], want[0][i])
				}
			}
			toks = []int32{Argmax(got[0][len(got[0])-m.Vocab:])}
		}
		st := bounded.(*kv.Store)
		held, err := st.LayerTokens(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kv.SteadyLayerTokens(st.Config(), bounded.Len(a))
		if err != nil {
			t.Fatal(err)
		}
		for l, n := range held {
			if w := m.LayerWindow(l); n != want[l] || w > 0 && n >= bounded.Len(a) || w == 0 && n < bounded.Len(a) {
				t.Errorf("%s: layer %d (window %d) holds %d tokens of blocks of a history of %d; SteadyLayerTokens says %d", spec, l, w, n, bounded.Len(a), want[l])
			}
		}
	}
}
