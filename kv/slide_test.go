package kv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSlideFreesBlocks: when every layer has an attention window, a decoding sequence
// holds only the blocks its next query can still see, and the accounting says so
// exactly: Usage().AllocBytes equals SteadyBytes after every step (with the room
// for copies of spans whose blocks are scattered), GrowCost equals the
// change Grow makes, and a budget of the window's blocks serves a history many times
// longer. Attention over the kept blocks equals the same cache without sliding (a
// layer window with one layer left whole), step by step.
func TestSlideFreesBlocks(t *testing.T) {
	for _, spec := range []string{"f16", "q4", "kivi4/kivi2", "kivi2:g=16,r=8"} {
		for _, w := range []int{1, 20, 64, 100} {
			t.Run(fmt.Sprintf("%s/window%d", spec, w), func(t *testing.T) { testSlide(t, spec, w) })
		}
	}
}

func testSlide(t *testing.T, spec string, w int) {
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	const d, kvh, heads, L, B = 16, 2, 4, 700, 32
	cfg := Config{Layers: 2, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: sp, BlockTokens: B, Windows: []int{w, w}}
	// The budget: the most a sequence of up to L tokens holds after a step, which
	// is the window's blocks and the tails, exactly, and room to copy the two spans
	// a window of up to 128 tokens touches: blocks freed at the window's start are
	// taken again at its end, in slots that do not follow the previous block.
	for n := 1; n <= L; n++ {
		steady, err := SteadyBytes(cfg, n)
		if err != nil {
			t.Fatal(err)
		}
		cfg.BudgetBytes = max(cfg.BudgetBytes, steady)
	}
	g, err := newGeometry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BudgetBytes += 2 * int64(g.gathSpan)
	st, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: the same windows, one layer longer than the others' history
	// (layer 1 sees everything), so nothing slides; only layer 0 is compared.
	refCfg := cfg
	refCfg.BudgetBytes, refCfg.Windows = 0, []int{w, 0}
	ref, err := New(refCfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(w), 3))
	k, v, q := randRows(r, L, kvh*d, true), randRows(r, L, kvh*d, false), randRows(r, L, heads*d, false)
	a, _ := st.NewSeq()
	b, _ := ref.NewSeq()
	// step grows id by token p and appends and attends it on every layer in turn,
	// returning layer 0's output.
	step := func(c *Store, id SeqID, p int) []float32 {
		if err := c.Grow(id, []int32{int32(p)}); err != nil {
			t.Fatalf("position %d: %v", p, err)
		}
		var out0 []float32
		for l := range c.g.cfg.Layers {
			if err := c.Append(l, id, k[p], v[p]); err != nil {
				t.Fatal(err)
			}
			out := make([]float32, heads*d)
			if err := c.Attend(l, id, q[p], out); err != nil {
				t.Fatal(err)
			}
			if l == 0 {
				out0 = out
			}
		}
		return out0
	}
	for p := 0; p < L; p++ {
		before := st.Usage().AllocBytes
		cost, err := st.GrowCost(a, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := step(st, a, p)
		want := step(ref, b, p)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("position %d: attention %v after sliding, %v without", p, got[i], want[i])
			}
		}
		steady, err := SteadyBytes(cfg, p+1)
		if err != nil {
			t.Fatal(err)
		}
		u, gath := st.Usage(), st.PoolStats().GatherBytes
		if u.AllocBytes != steady+gath || gath > 2*int64(g.gathSpan) {
			t.Fatalf("position %d: AllocBytes %d, SteadyBytes %d + %d bytes of span copies", p, u.AllocBytes, steady, gath)
		}
		held := 0
		for _, blk := range st.seqs[a].tables[0] {
			if blk >= 0 {
				held++
			}
		}
		if most := (w-1+B-1)/B + 1; held > most {
			t.Fatalf("position %d: %d blocks held, a window of %d spans at most %d", p, held, w, most)
		}
		if p > 0 && u.AllocBytes-before != cost {
			t.Fatalf("position %d: the step changed AllocBytes by %d, GrowCost said %d", p, u.AllocBytes-before, cost)
		}
	}
	checkAccounting(t, "slide", st)
	if held, whole := st.Usage().AllocBytes, ref.Usage().AllocBytes; held >= whole && L > w+2*B {
		t.Errorf("sliding holds %d bytes, the whole history %d", held, whole)
	}
}
