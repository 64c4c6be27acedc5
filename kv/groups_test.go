package kv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWindowGroups: a model whose layers mix attention windows with layers that see
// the whole history (Gemma 3's pattern) keeps, per window group, only the blocks its
// next query can see: every window layer holds at most w + B tokens of blocks,
// AllocBytes equals SteadyBytes after each decode step and GrowCost the change a Grow
// makes. Attention equals, bit for bit on every layer, the same cache with blocks
// longer than the history (nothing is ever freed there; spans follow positions, so
// the block size changes no sum), in single-token and multi-token steps, after a
// fork, and for a sequence adopting a cached prefix.
func TestWindowGroups(t *testing.T) {
	for _, spec := range []string{"f16", "q4", "kivi4/kivi2", "kivi2:g=16,r=8", "kivi4/kivi2:r=40,sinks=4"} {
		for _, w := range []int{1, 20, 64} {
			t.Run(fmt.Sprintf("%s/window%d", spec, w), func(t *testing.T) { testWindowGroups(t, spec, w) })
		}
	}
}

// newWindowFixture is a fixture of 8 layers, every fourth seeing the whole history,
// the others a window of w, in blocks of B tokens.
func newWindowFixture(t *testing.T, spec string, w, B, n int) *fixture {
	t.Helper()
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	const layers, heads, kvh, d = 8, 4, 2, 16
	wins := make([]int, layers)
	for l := range wins {
		if l%4 != 3 {
			wins[l] = w
		}
	}
	st, err := New(Config{Layers: layers, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: sp, BlockTokens: B, Windows: wins, RoPE: testRoPE(t, d)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, heads: heads, kvh: kvh, d: d, layers: layers, r: rand.New(rand.NewPCG(uint64(w), uint64(n)))}
	f.extend(n)
	return f
}

func testWindowGroups(t *testing.T, spec string, w int) {
	const n = 300
	f := newWindowFixture(t, spec, w, 16, n)
	B := f.st.g.B                                // 32 with KIVI keys of 32
	ref := newWindowFixture(t, spec, w, 1024, n) // same rows: same seeds
	if got := len(f.st.g.groups); got != 4 {
		t.Fatalf("%d layer groups, want 4 (3 of window layers, 1 of whole-history layers, 2 layers each)", got)
	}
	toks := seqTokens(n, 3)
	a, _ := f.st.NewSeq()
	ra, _ := ref.st.NewSeq()
	check := func(what string, got, want [][]float32) {
		t.Helper()
		for l := range got {
			if !bitsEqual(got[l], want[l]) {
				t.Fatalf("%s: layer %d attends differently from the cache that keeps every block", what, l)
			}
		}
	}
	// A prefill, then single tokens, then steps of 13 tokens.
	steps := []int{0, 37}
	for p := 38; p <= 220; p++ {
		steps = append(steps, p)
	}
	for p := 233; p <= 272; p += 13 {
		steps = append(steps, p)
	}
	for i := 1; i < len(steps); i++ {
		p0, p1 := steps[i-1], steps[i]
		before := f.st.Usage().AllocBytes
		cost, err := f.st.GrowCost(a, p1-p0)
		if err != nil {
			t.Fatal(err)
		}
		got := f.run(t, a, toks, p0, p1, p1-p0)
		check(fmt.Sprintf("positions [%d, %d)", p0, p1), got, ref.run(t, ra, toks, p0, p1, p1-p0))
		if after := f.st.Usage().AllocBytes; after-before != cost {
			t.Fatalf("positions [%d, %d): the step changed AllocBytes by %d, GrowCost said %d", p0, p1, after-before, cost)
		}
		s := f.st.seqs[a]
		for g, tb := range s.tables {
			held := 0
			for _, blk := range tb {
				if blk >= 0 {
					held++
				}
			}
			// Windows free whole units (a KIVI key group split over blocks together).
			U := f.st.g.U
			if win := f.st.g.groups[g].window; win > 0 && held > ((win-1+U-1)/U+1)*U/B+(p1-p0-1+B-1)/B {
				t.Fatalf("positions [%d, %d): group %d holds %d blocks beside a window of %d", p0, p1, g, held, win)
			}
		}
		if p1-p0 == 1 && p1 > 64 {
			steady, err := SteadyBytes(f.st.Config(), p1)
			if err != nil {
				t.Fatal(err)
			}
			if u := f.st.Usage().AllocBytes; u != steady {
				t.Fatalf("length %d: AllocBytes %d, SteadyBytes %d", p1, u, steady)
			}
			held, err := f.st.LayerTokens(a)
			if err != nil {
				t.Fatal(err)
			}
			want, err := SteadyLayerTokens(f.st.Config(), p1)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(held, want) {
				t.Fatalf("length %d: layers hold %v tokens of blocks, SteadyLayerTokens says %v", p1, held, want)
			}
		}
	}
	checkAccounting(t, "window groups", f.st)
	if whole := ref.st.Usage().AllocBytes; f.st.Usage().AllocBytes >= whole {
		t.Errorf("the window groups hold %d bytes, the cache keeping every block %d", f.st.Usage().AllocBytes, whole)
	}

	// A fork continues as its parent would.
	b, err := f.st.Fork(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := ref.st.Fork(ra)
	check("fork", f.run(t, b, toks, 272, 280, 1), ref.run(t, rb, toks, 272, 280, 1))
	for _, id := range []SeqID{a, b} {
		if err := f.st.Drop(id); err != nil {
			t.Fatal(err)
		}
	}

	// A sequence adopting the cached prefix of 250 tokens attends as one computing it.
	const m = 250
	c, cached, err := f.st.NewSeqWithPrefix(toks[:m])
	if U := f.st.g.U; err != nil || cached != m/U*U {
		t.Fatalf("adopted %d tokens (err %v), want %d", cached, err, m/U*U)
	}
	s := f.st.seqs[c]
	for g := range s.tables {
		if f.st.g.groups[g].window > 0 && s.winFree[g] == 0 && f.st.g.layers[f.st.g.groups[g].layers[0]].sinksK == 0 && cached > w+B {
			t.Errorf("group %d adopted every block of a prefix of %d tokens beside a window of %d", g, cached, w)
		}
	}
	cold, _ := ref.st.NewSeq()
	ref.run(t, cold, toks, 0, cached, cached)
	want := ref.run(t, cold, toks, cached, m+20, 7)
	check("adopted prefix", f.run(t, c, toks, cached, m+20, 7), want)
	checkAccounting(t, "window groups after adoption", f.st)

	// The same prefix moved to another store through ExportPrefixBlock and
	// ImportPrefixBlock (a shared tier) is adopted there as computed.
	other := newWindowFixture(t, spec, w, 16, n)
	parent := f.st.RootHash()
	for i := range cached / B {
		lo, hi := f.st.BlockTokenRange(i)
		h := BlockHash(parent, toks[lo:hi])
		blk, ok := f.st.ExportPrefixBlock(h)
		if !ok {
			t.Fatalf("block %d not exported", i)
		}
		if len(blk.Bytes) != f.st.Layout().BlockBytes || len(blk.Side) != 0 && len(blk.Side) != f.st.SideBytes(i) {
			t.Fatalf("block %d: %d bytes and %d side bytes, want %d and %d", i, len(blk.Bytes), len(blk.Side), f.st.Layout().BlockBytes, f.st.SideBytes(i))
		}
		if err := other.st.ImportPrefixBlock(blk); err != nil {
			t.Fatal(err)
		}
		if !other.st.HasBlock(h) {
			t.Fatalf("block %d imported but not held", i)
		}
		parent = h
	}
	d, got, err := other.st.NewSeqWithPrefix(toks[:m])
	if err != nil || got != cached {
		t.Fatalf("imported prefix: adopted %d tokens (err %v), want %d", got, err, cached)
	}
	check("imported prefix", other.run(t, d, toks, cached, m+20, 7), want)
	checkAccounting(t, "window groups after import", other.st)
}
