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
func newWindowFixture(t *testing.T, spec string, w, B, n int, budget ...int64) *fixture {
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
	cfg := Config{Layers: layers, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: sp, BlockTokens: B, Windows: wins, RoPE: testRoPE(t, d)}
	if len(budget) > 0 {
		cfg.BudgetBytes = budget[0]
	}
	st, err := New(cfg)
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

// TestWindowGroupsRandom runs random operations (grow by steps of 1 to 20 tokens,
// fork, drop, truncate, adopt a prefix) on sequences of a cache with window groups
// under a budget that runs out, and on the same sequences of a cache that keeps
// every block and has no budget: GrowCost predicts every Grow's success, the
// accounting matches what the tables hold after every operation, and every step
// that succeeds attends as the reference does, bit for bit.
func TestWindowGroupsRandom(t *testing.T) {
	for _, spec := range []string{"f16", "kivi4/kivi2", "kivi2:g=16,r=8,sinks=2"} {
		t.Run(spec, func(t *testing.T) {
			const n, w = 400, 40
			probe := newWindowFixture(t, spec, w, 16, 0)
			steady, err := SteadyBytes(probe.st.Config(), 150)
			if err != nil {
				t.Fatal(err)
			}
			budget := 8 * steady
			f := newWindowFixture(t, spec, w, 16, n, budget)
			ref := newWindowFixture(t, spec, w, 1024, n)
			toks := seqTokens(n, 5)
			r := rand.New(rand.NewPCG(7, 9))
			type pair struct{ a, b SeqID }
			var live []pair
			var grown, refused, cuts, cutRefused, adopted int // what the run exercised
			for op := range 400 {
				what := r.IntN(10)
				if len(live) == 0 {
					what = 9
				}
				switch {
				case what < 5: // grow
					i := r.IntN(len(live))
					p := live[i]
					p0 := f.st.Len(p.a)
					m := min(1+r.IntN(20), n-p0)
					if m == 0 {
						continue
					}
					before := f.st.Usage().AllocBytes
					cost, err := f.st.GrowCost(p.a, m)
					if err != nil {
						t.Fatal(err)
					}
					got, err := f.stepTok(t, p.a, toks, p0, p0+m)
					if fits := before+cost <= budget; fits != (err == nil) {
						t.Fatalf("op %d: GrowCost %d with %d of %d allocated predicts fits=%v; Grow: %v", op, cost, before, budget, fits, err)
					}
					if err != nil {
						refused++
						continue
					}
					grown++
					want, err := ref.stepTok(t, p.b, toks, p0, p0+m)
					if err != nil {
						t.Fatal(err)
					}
					for l := range got {
						if !bitsEqual(got[l], want[l]) {
							t.Fatalf("op %d: positions [%d, %d) layer %d attend differently from the cache that keeps every block", op, p0, p0+m, l)
						}
					}
				case what == 5: // fork
					p := live[r.IntN(len(live))]
					a, err := f.st.Fork(p.a)
					if err != nil {
						continue
					}
					b, err := ref.st.Fork(p.b)
					if err != nil {
						t.Fatal(err)
					}
					live = append(live, pair{a, b})
				case what == 6: // drop
					i := r.IntN(len(live))
					if err := f.st.Drop(live[i].a); err != nil {
						t.Fatal(err)
					}
					if err := ref.st.Drop(live[i].b); err != nil {
						t.Fatal(err)
					}
					live = append(live[:i], live[i+1:]...)
				case what < 9: // truncate
					p := live[r.IntN(len(live))]
					cut := r.IntN(f.st.Len(p.a) + 1)
					if err := f.st.Truncate(p.a, cut); err != nil {
						cutRefused++
						continue
					}
					cuts++
					if err := ref.st.Truncate(p.b, cut); err != nil {
						t.Fatalf("op %d: truncate to %d refused only by the reference: %v", op, cut, err)
					}
				default: // a new sequence adopting what it can of a prefix
					m := r.IntN(n)
					a, cached, err := f.st.NewSeqWithPrefix(toks[:m])
					if err != nil {
						t.Fatal(err)
					}
					b, _ := ref.st.NewSeq()
					if cached > 0 {
						adopted++
						if _, err := ref.stepTok(t, b, toks, 0, cached); err != nil {
							t.Fatal(err)
						}
					}
					live = append(live, pair{a, b})
				}
				checkAccounting(t, fmt.Sprintf("op %d", op), f.st)
				if u := f.st.Usage().AllocBytes; u > budget {
					t.Fatalf("op %d: %d bytes allocated, budget %d", op, u, budget)
				}
			}
			t.Logf("%d steps, %d refused for the budget; %d truncations, %d refused; %d prefixes adopted", grown, refused, cuts, cutRefused, adopted)
			if grown == 0 || refused == 0 || cuts == 0 || adopted == 0 {
				t.Errorf("the run left an operation unexercised")
			}
		})
	}
}

// TestWindowGroupsUnequalSpecs: when per-layer specs would give the layer groups
// blocks of different sizes, every layer forms one group that keeps the whole
// history (blocks have one size), and the figures say so.
func TestWindowGroupsUnequalSpecs(t *testing.T) {
	sp, _ := ParseSpec("q4")
	f16, _ := ParseSpec("f16")
	wins := []int{8, 8, 8, 0, 8, 8, 8, 0}
	cfg := Config{Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 16, Spec: sp, Windows: wins}
	for _, tc := range []struct {
		specs  map[int]Spec
		groups int
	}{
		// Sliding layers 0, 1, 2, 4, 5, 6 and global 3, 7 make groups (0 1) (2 4) (5 6)
		// and (3 7).
		{nil, 4},
		{map[int]Spec{0: f16, 2: f16, 5: f16, 3: f16}, 4}, // one f16 layer in each: equal
		{map[int]Spec{0: f16, 4: f16}, 1},                 // (5 6) would be smaller
		{map[int]Spec{3: f16, 7: f16}, 1},                 // the global group's would be larger
		{map[int]Spec{0: f16, 1: f16}, 1},
	} {
		cfg.LayerSpecs = tc.specs
		g, err := newGeometry(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, gr := range g.groups {
			n := 0
			for _, l := range gr.layers {
				n += g.layers[l].bytes
			}
			if n != g.blockBytes {
				t.Errorf("specs %v: group %v takes %d bytes of blocks of %d", tc.specs, gr.layers, n, g.blockBytes)
			}
		}
		if len(g.groups) != tc.groups {
			t.Errorf("specs %v: %d groups, want %d", tc.specs, len(g.groups), tc.groups)
		}
		toks, err := SteadyLayerTokens(cfg, 400)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.groups) == 1 && toks[0] != 400 || len(g.groups) > 1 && toks[0] >= 400 {
			t.Errorf("specs %v: %d groups, a sliding layer holds %d tokens of 400", tc.specs, len(g.groups), toks[0])
		}
	}
}
