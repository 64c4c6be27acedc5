package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/internal/blockmem"
	"kvq/quant"
)

// fixture is a small multi-layer store with a random history to feed it.
type fixture struct {
	st            *Store
	heads, kvh, d int
	layers        int
	k, v, q       [][][]float32 // [layer][position] rows
	r             *rand.Rand
}

func newFixture(t *testing.T, spec string, layers, heads, kvh, d, n int, budget int64) *fixture {
	t.Helper()
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of 16 tokens: the fixtures' short histories cross several blocks.
	st, err := New(Config{Layers: layers, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: sp, BudgetBytes: budget, BlockTokens: 16, RoPE: testRoPE(t, d)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, heads: heads, kvh: kvh, d: d, layers: layers, r: rand.New(rand.NewPCG(11, uint64(n)))}
	f.extend(n)
	return f
}

// setWindows replaces f's store with an empty one of the same configuration whose
// layers attend over windows (Config.Windows).
func (f *fixture) setWindows(t *testing.T, windows ...int) {
	t.Helper()
	cfg := f.st.Config()
	cfg.Windows = windows
	st, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.st = st
}

// extend adds n more random positions to the history.
func (f *fixture) extend(n int) {
	for len(f.k) < f.layers {
		f.k, f.v, f.q = append(f.k, nil), append(f.v, nil), append(f.q, nil)
	}
	for l := 0; l < f.layers; l++ {
		f.k[l] = append(f.k[l], randRows(f.r, n, f.kvh*f.d, true)...)
		f.v[l] = append(f.v[l], randRows(f.r, n, f.kvh*f.d, false)...)
		f.q[l] = append(f.q[l], randRows(f.r, n, f.heads*f.d, false)...)
	}
}

// step grows id by positions [a, b) of history h (layer-major rows), appends them on
// every layer and returns the attention outputs of every layer, flattened.
func (f *fixture) step(t *testing.T, id SeqID, k, v, q [][][]float32, a, b int) ([][]float32, error) {
	t.Helper()
	if err := f.st.Grow(id, make([]int32, b-a)); err != nil {
		return nil, err
	}
	outs := make([][]float32, f.layers)
	for l := 0; l < f.layers; l++ {
		if err := f.st.Append(l, id, flat(k[l][a:b]), flat(v[l][a:b])); err != nil {
			t.Fatalf("append layer %d [%d,%d): %v", l, a, b, err)
		}
		outs[l] = make([]float32, (b-a)*f.heads*f.d)
		if err := f.st.Attend(l, id, flat(q[l][a:b]), outs[l]); err != nil {
			t.Fatalf("attend layer %d [%d,%d): %v", l, a, b, err)
		}
	}
	return outs, nil
}

func (f *fixture) mustStep(t *testing.T, id SeqID, a, b int) [][]float32 {
	t.Helper()
	o, err := f.step(t, id, f.k, f.v, f.q, a, b)
	if err != nil {
		t.Fatalf("step [%d,%d): %v", a, b, err)
	}
	return o
}

func equalOuts(a, b [][]float32) bool {
	for l := range a {
		if maxAbsDiff(a[l], b[l]) != 0 {
			return false
		}
	}
	return true
}

// TestLayersAndOverrides: each layer follows its own spec (checked against the
// reference simulation), and a multi-token step equals single steps on every layer.
func TestLayersAndOverrides(t *testing.T) {
	ov, err := ParseLayerOverrides("0,-1=f16;1=kivi4:g=8,r=6,sinks=2;2=kivi3:g=8,rope=pre/q4", 4)
	if err != nil {
		t.Fatal(err)
	}
	sp := MustParseSpec("q4:g=16")
	const layers, heads, kvh, d, L = 4, 6, 3, 16, 50
	rope := testRoPE(t, d)
	st, err := New(Config{Layers: layers, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: sp, LayerSpecs: ov, BlockTokens: 10, RoPE: rope})
	if err != nil {
		t.Fatal(err)
	}
	if st.Config().BlockTokens != 16 {
		t.Errorf("BlockTokens 10 with a KIVI group of 8: got %d, want 16", st.Config().BlockTokens)
	}
	f := &fixture{st: st, heads: heads, kvh: kvh, d: d, layers: layers, r: rand.New(rand.NewPCG(5, 5))}
	f.extend(L)
	a, _ := st.NewSeq()
	b, _ := st.NewSeq()
	outA := f.mustStep(t, a, 0, L)
	for p := 0; p < L; p++ {
		o := f.mustStep(t, b, p, p+1)
		for l := 0; l < layers; l++ {
			if e := maxAbsDiff(o[l], outA[l][p*heads*d:(p+1)*heads*d]); e > 1e-5 {
				t.Fatalf("layer %d query %d: step differs from prefill by %.3g", l, p, e)
			}
		}
	}
	for l := 0; l < layers; l++ {
		lsp, err := st.LayerSpec(l)
		if err != nil {
			t.Fatal(err)
		}
		var lr *quant.RoPE
		if lsp.K.PreRoPE {
			lr = rope
		}
		ref := newSim(t, lsp, d, kvh, f.k[l], f.v[l], lr)
		for p := 0; p < L; p++ {
			want := ref.attend(t, f.q[l][p], p, heads)
			if e := maxAbsDiff(outA[l][p*heads*d:(p+1)*heads*d], want); e > 1e-4 {
				t.Fatalf("layer %d (%v) query %d: |fused − reference| = %.3g", l, lsp, p, e)
			}
		}
	}
	for l, want := range []string{"f16", "kivi4:g=8,r=6,sinks=2", "kivi3:g=8,rope=pre/q4", "f16"} {
		if got, _ := st.LayerSpec(l); got.String() != want {
			t.Errorf("layer %d spec %s, want %s", l, got, want)
		}
	}
	if _, err := st.LayerSpec(layers); err == nil {
		t.Errorf("LayerSpec(%d) of %d layers: no error", layers, layers)
	}
	checkAccounting(t, "layers", st)
}

// TestForkCopyOnWrite: a fork shares blocks; writes after the fork copy the shared
// block they touch and never change what the other sequence sees.
func TestForkCopyOnWrite(t *testing.T) {
	for _, spec := range append([]string{"kivi2:g=8,r=5,sinks=1"}, conformanceSpecs...) {
		// L is not a multiple of the block length: the last block is shared and
		// partial. At 53 the fork is in the second block of a KIVI key group of 32
		// split over two blocks of 16: closing that group writes into the shared
		// block before, which must be copied too.
		for _, L := range []int{37, 53} {
			t.Run(fmt.Sprintf("%s/L=%d", spec, L), func(t *testing.T) { testForkCopyOnWrite(t, spec, L) })
		}
	}
}

func testForkCopyOnWrite(t *testing.T, spec string, L int) {
	f := newFixture(t, spec, 2, 4, 2, 8, L, 0)
	st := f.st
	src, _ := st.NewSeq()
	f.mustStep(t, src, 0, L-3)
	f.mustStep(t, src, L-3, L)
	before := st.PoolStats()
	child, err := st.Fork(src)
	if err != nil {
		t.Fatal(err)
	}
	after := st.PoolStats()
	if after.BlocksUsed != before.BlocksUsed || after.BlocksShared != before.BlocksUsed {
		t.Fatalf("fork: used %d→%d shared %d, want all %d blocks shared", before.BlocksUsed, after.BlocksUsed, after.BlocksShared, before.BlocksUsed)
	}
	if st.Len(child) != L {
		t.Fatalf("child Len %d, want %d", st.Len(child), L)
	}
	checkAccounting(t, spec, st)

	// Two different continuations of 20 tokens.
	other := newFixture(t, spec, 2, 4, 2, 8, L+20, 0) // an independent history source
	kC, vC, qC := mix(f, other, L)
	f.extend(20)
	outSrc := f.mustStep(t, src, L, L+1)
	if got := st.PoolStats(); got.BlocksUsed != before.BlocksUsed+1 || got.BlocksShared != before.BlocksUsed-1 {
		t.Errorf("first write after fork: used %d shared %d, want %d and %d (one block copied)", got.BlocksUsed, got.BlocksShared, before.BlocksUsed+1, before.BlocksUsed-1)
	}
	outChild, err := f.step(t, child, kC, vC, qC, L, L+1)
	if err != nil {
		t.Fatal(err)
	}
	for p := L + 1; p < L+20; p++ {
		o1 := f.mustStep(t, src, p, p+1)
		o2, err := f.step(t, child, kC, vC, qC, p, p+1)
		if err != nil {
			t.Fatal(err)
		}
		outSrc, outChild = o1, o2
	}
	// Fresh sequences with the same full histories must see exactly the same.
	fresh1, _ := st.NewSeq()
	fresh2, _ := st.NewSeq()
	f.mustStep(t, fresh1, 0, L)
	if _, err := f.step(t, fresh2, kC, vC, qC, 0, L); err != nil {
		t.Fatal(err)
	}
	var w1, w2 [][]float32
	for p := L; p < L+20; p++ {
		w1 = f.mustStep(t, fresh1, p, p+1)
		if w2, err = f.step(t, fresh2, kC, vC, qC, p, p+1); err != nil {
			t.Fatal(err)
		}
	}
	if !equalOuts(outSrc, w1) {
		t.Errorf("source after fork differs from a fresh run of its history")
	}
	if !equalOuts(outChild, w2) {
		t.Errorf("child differs from a fresh run of its history")
	}
	if equalOuts(outSrc, outChild) {
		t.Errorf("source and child gave equal outputs for different continuations")
	}
	checkAccounting(t, spec, st)
	for _, id := range []SeqID{src, child, fresh1, fresh2} {
		if err := st.Drop(id); err != nil {
			t.Fatal(err)
		}
	}
	if ps := st.PoolStats(); ps.BlocksUsed != 0 || ps.TailBytes != 0 || st.Usage().AllocBytes != 0 {
		t.Errorf("after dropping everything: %+v", ps)
	}
}

// mix returns layer-major histories equal to f's before position L and to other's
// from L on.
func mix(f, other *fixture, L int) (k, v, q [][][]float32) {
	for l := 0; l < f.layers; l++ {
		k = append(k, append(append([][]float32(nil), f.k[l][:L]...), other.k[l][L:]...))
		v = append(v, append(append([][]float32(nil), f.v[l][:L]...), other.v[l][L:]...))
		q = append(q, append(append([][]float32(nil), f.q[l][:L]...), other.q[l][L:]...))
	}
	return k, v, q
}

// TestGrowRollback: when the budget cannot hold a Grow or a Fork, the call fails
// with ErrNoSpace and the pool, the usage figures and the sequence are unchanged.
func TestGrowRollback(t *testing.T) {
	for _, spec := range append([]string{"kivi4/kivi2:r=20,sinks=2"}, conformanceSpecs...) {
		t.Run(spec, func(t *testing.T) {
			probe := newFixture(t, spec, 2, 4, 2, 16, 0, 0)
			bb := int64(probe.st.BlockBytes())
			// Nine blocks, plus the steady f16 rows of two sequences and work rows for
			// steps of up to 40 tokens.
			steady, err := SteadyBytes(probe.st.Config(), 1)
			if err != nil {
				t.Fatal(err)
			}
			rowBytes := int64(2 * 16 * 2) // f16 tail rows
			// other's blocks, freed at the end, make room for a block and the copy
			// of the span it lands in.
			otherBlocks := 2 + (int64(probe.st.g.gathSpan)+bb-1)/bb
			budget := (6+otherBlocks)*bb + 2*(steady-bb) + 2*2*(40+int64(probe.st.g.B))*rowBytes
			f := newFixture(t, spec, 2, 4, 2, 16, 3000, budget)
			st := f.st
			other, _ := st.NewSeq()
			f.mustStep(t, other, 0, int(otherBlocks)*st.g.B)
			a, _ := st.NewSeq()
			pos := 0
			var failed bool
			for pos < 2000 {
				n := 1 + f.r.IntN(40)
				n = min(n, 2000-pos)
				beforePS, beforeU, beforeLen := st.PoolStats(), st.Usage(), st.Len(a)
				cost, cerr := st.GrowCost(a, n)
				if cerr != nil {
					t.Fatal(cerr)
				}
				_, err := f.step(t, a, f.k, f.v, f.q, pos, pos+n)
				if fits := beforeU.AllocBytes+cost <= budget; fits != (err == nil) {
					t.Fatalf("GrowCost %d with %d allocated of %d predicts fits=%v, Grow: %v", cost, beforeU.AllocBytes, budget, fits, err)
				}
				if err == nil && st.Usage().AllocBytes-beforeU.AllocBytes != cost {
					t.Fatalf("Grow of %d changed AllocBytes by %d, GrowCost said %d", n, st.Usage().AllocBytes-beforeU.AllocBytes, cost)
				}
				if err != nil {
					if !errors.Is(err, ErrNoSpace) {
						t.Fatalf("grow: %v, want ErrNoSpace", err)
					}
					if ps, u := st.PoolStats(), st.Usage(); ps != beforePS || u != beforeU || st.Len(a) != beforeLen {
						t.Fatalf("failed grow changed state:\npool %+v\n  → %+v\nusage %+v\n   → %+v\nlen %d → %d", beforePS, ps, beforeU, u, beforeLen, st.Len(a))
					}
					failed = true
					break
				}
				pos += n
				if u := st.Usage(); u.AllocBytes > budget {
					t.Fatalf("AllocBytes %d over budget %d", u.AllocBytes, budget)
				}
			}
			if !failed {
				t.Fatalf("budget of %d bytes held 2000 tokens", budget)
			}
			// Single-token steps fill the rest of the budget exactly up to failure.
			for {
				if _, err := f.step(t, a, f.k, f.v, f.q, pos, pos+1); err != nil {
					if !errors.Is(err, ErrNoSpace) {
						t.Fatal(err)
					}
					break
				}
				pos++
			}
			// The sequence still works after the failures once memory is freed.
			if err := st.Drop(other); err != nil {
				t.Fatal(err)
			}
			if _, err := f.step(t, a, f.k, f.v, f.q, pos, pos+1); err != nil {
				t.Fatalf("step after freeing memory: %v", err)
			}
			// Fork needs tail memory (and, on its first write, a copy of the shared block).
			beforePS, beforeU := st.PoolStats(), st.Usage()
			if _, err := st.Fork(a); err == nil {
				c := st.Len(a)
				// The fork fit; its first write must copy a shared block and fail cleanly if it cannot.
				id := SeqID(st.next - 1)
				before2 := st.PoolStats()
				if err := st.Grow(id, []int32{1}); err != nil && (!errors.Is(err, ErrNoSpace) || st.PoolStats() != before2 || st.Len(id) != c) {
					t.Fatalf("grow of fork: err %v, pool %+v → %+v", err, before2, st.PoolStats())
				}
			} else {
				if !errors.Is(err, ErrNoSpace) {
					t.Fatalf("fork: %v", err)
				}
				if st.PoolStats() != beforePS || st.Usage() != beforeU {
					t.Fatalf("failed fork changed state")
				}
			}
			checkAccounting(t, spec, st)
			if err := st.Drop(a); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAccountingFormula: in the steady state of single-token steps the Store holds
// exactly ⌈L/B⌉ blocks plus rings of G key rows and r value rows per layer plus the
// sink rows, and the block size is what the codec layouts say.
func TestAccountingFormula(t *testing.T) {
	const d, kvh, layers = 128, 2, 3
	rowBytes := int64(kvh * d * 2) // f16 tail rows
	cases := []struct {
		spec        string
		perTokenRow int // bytes per token per layer per kv head, K+V, from the codec docs (d=128)
		ringRows    int // steady f16 ring rows per layer (G keys + r−1 values)
		sinks       int
		workRows    int // f32 work rows per sequence (one per side with rings)
	}{
		{"f32", 512 + 512, 0, 0, 0},
		{"f16", 256 + 256, 0, 0, 0},
		{"bf16:sinks=4", 256 + 256, 0, 4, 0},
		{"q8", 130 + 130, 0, 0, 0},
		{"fp8e4m3", 130 + 130, 0, 0, 0},
		{"q4", 80 + 80, 0, 0, 0},
		{"q2", 48 + 48, 0, 0, 0},
		{"q4:g=128", 68 + 68, 0, 0, 0},
		{"kivi8", 144 + 144, 32 + 31, 0, 2},
		{"kivi4", 80 + 80, 32 + 31, 0, 2},
		{"kivi2", 48 + 48, 32 + 31, 0, 2},
		{"kivi4/kivi2:r=64,sinks=4", 80 + 48, 32 + 63, 4, 2},
		{"kivi4/q8", 80 + 130, 32, 0, 1},
		{"f32/q8:sinks=3", 512 + 130, 0, 3, 0},
	}
	for _, c := range cases {
		sp := MustParseSpec(c.spec)
		cfg := Config{Layers: layers, Heads: 4, KVHeads: kvh, HeadDim: d, Spec: sp}
		bpt, err := BytesPerToken(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(layers * kvh * c.perTokenRow); bpt != want {
			t.Errorf("%s: BytesPerToken = %v, want %v", c.spec, bpt, want)
		}
		comp, _ := CompressionVsF16(cfg)
		if want := float64(2*256) / float64(c.perTokenRow); comp != want {
			t.Errorf("%s: CompressionVsF16 = %v, want %v", c.spec, comp, want)
		}
		st, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{st: st, heads: 4, kvh: kvh, d: d, layers: layers, r: rand.New(rand.NewPCG(1, 1))}
		const L = 300
		f.extend(L)
		id, _ := st.NewSeq()
		f.mustStep(t, id, 0, 100)
		for p := 100; p < L; p++ {
			f.mustStep(t, id, p, p+1)
		}
		// Measure in the steady state, right after the Grow of one more token.
		if err := st.Grow(id, []int32{0}); err != nil {
			t.Fatal(err)
		}
		blocks := int64((L + 1 + st.g.B - 1) / st.g.B)
		sinkBytes := 0
		if c.sinks > 0 {
			lossySides := 0
			if !lossless(sp.K.Type) {
				lossySides++
			}
			if !lossless(sp.V.Type) {
				lossySides++
			}
			sinkBytes = c.sinks * lossySides
		}
		want := blocks*int64(st.BlockBytes()) + int64(layers)*rowBytes*int64(c.ringRows+sinkBytes) + rowBytes*int64(c.workRows)
		if got := st.Usage().AllocBytes; got != want {
			t.Errorf("%s: AllocBytes = %d, want %d (%d blocks of %d, %d ring and %d sink rows per layer, %d work rows)", c.spec, got, want, blocks, st.BlockBytes(), c.ringRows, sinkBytes, c.workRows)
		}
		if sb, err := SteadyBytes(cfg, L+1); err != nil || sb != want {
			t.Errorf("%s: SteadyBytes = %d (%v), want %d", c.spec, sb, err, want)
		}
		if got := int64(st.BlockBytes()); float64(got) != bpt*float64(st.g.B) {
			t.Errorf("%s: block bytes %d ≠ BytesPerToken × B", c.spec, got)
		}
		checkAccounting(t, c.spec, st)
	}
}

// TestPlanCap: a ring takes its steady size from its first row on (no doubling,
// whose outgrown buffers are garbage), holds exactly a step beyond steady, and
// shrinks back after it.
func TestPlanCap(t *testing.T) {
	const steady = 127
	cases := []struct {
		name            string
		cur, need, want int
	}{
		{"first token", 0, 1, steady},
		{"single steps", steady, steady, steady},
		{"prompt pass of 64", 0, 64, steady},
		{"beyond steady: exactly need", steady, 600, 600},
		{"shrink after a large step", 600, 40, steady},
		{"emptied ring keeps its buffer", steady, 0, steady},
		{"never used: no buffer", 0, 0, 0},
	}
	for _, c := range cases {
		if got := planCap(c.cur, c.need, steady); got != c.want {
			t.Errorf("%s: planCap(%d, %d, %d) = %d, want %d", c.name, c.cur, c.need, steady, got, c.want)
		}
	}
}

// TestTruncate: undoing a Grow; cutting a cache without full-precision rows to any
// length; refusing lengths whose rows are gone; a truncated sequence continues
// exactly like a fresh one with the same history.
func TestTruncate(t *testing.T) {
	t.Run("kivi", func(t *testing.T) {
		const spec = "kivi2:g=8,r=4,sinks=1"
		f := newFixture(t, spec, 2, 2, 1, 8, 80, 0)
		st := f.st
		a, _ := st.NewSeq()
		f.mustStep(t, a, 0, 30)
		f.mustStep(t, a, 30, 37)
		// Undo a Grow before any Append, in two moves.
		if err := st.Grow(a, make([]int32, 5)); err != nil {
			t.Fatal(err)
		}
		if err := st.Truncate(a, 39); err != nil { // keep 2 of the 5
			t.Fatal(err)
		}
		if err := st.Truncate(a, 37); err != nil {
			t.Fatal(err)
		}
		if st.Len(a) != 37 {
			t.Fatalf("Len %d", st.Len(a))
		}
		// The f32 rows length 30 needs (keys from 24, values from 27) are gone.
		err := st.Truncate(a, 30)
		if err == nil || !errors.Is(err, errNotExact) || !strings.Contains(err.Error(), "held from") {
			t.Fatalf("truncate to 30: %v, want a not-exact error", err)
		}
		if st.Len(a) != 37 {
			t.Fatalf("failed truncate changed Len to %d", st.Len(a))
		}
		var got [][]float32
		for p := 37; p < 45; p++ {
			got = f.mustStep(t, a, p, p+1)
		}
		b, _ := st.NewSeq()
		var want [][]float32
		for p := 0; p < 45; p++ {
			want = f.mustStep(t, b, p, p+1)
		}
		if !equalOuts(got, want) {
			t.Errorf("sequence after a refused truncate differs from a fresh one")
		}
		if err := st.Truncate(a, 0); err != nil {
			t.Fatal(err)
		}
		if st.Len(a) != 0 || st.seqs[a].nblocks() != 0 {
			t.Errorf("truncate to 0 left %d tokens, %d blocks", st.Len(a), st.seqs[a].nblocks())
		}
		// A half-appended step cannot be truncated.
		if err := st.Grow(b, []int32{1}); err != nil {
			t.Fatal(err)
		}
		f.extend(1)
		if err := st.Append(0, b, f.k[0][45], f.v[0][45]); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{45, 0} {
			if err := st.Truncate(b, n); err == nil || !strings.Contains(err.Error(), "half appended") {
				t.Errorf("truncate of a half-appended step to %d: %v, want a half-appended error", n, err)
			}
		}
		if st.Len(b) != 46 {
			t.Errorf("refused truncates changed Len to %d", st.Len(b))
		}
		checkAccounting(t, spec, st)
	})
	t.Run("q4 sinks", func(t *testing.T) {
		const spec = "q4:g=8,sinks=3"
		f := newFixture(t, spec, 2, 4, 2, 16, 80, 0)
		st := f.st
		a, _ := st.NewSeq()
		f.mustStep(t, a, 0, 50)
		for _, n := range []int{41, 33, 32, 2} {
			if err := st.Truncate(a, n); err != nil {
				t.Fatalf("truncate to %d: %v", n, err)
			}
			checkAccounting(t, spec, st)
		}
		// Refill to 40 in steps, continue, and compare with a fresh sequence.
		f.mustStep(t, a, 2, 20)
		var got [][]float32
		for p := 20; p < 40; p++ {
			got = f.mustStep(t, a, p, p+1)
		}
		b, _ := st.NewSeq()
		want := f.mustStep(t, b, 0, 40)
		for l := range want {
			if e := maxAbsDiff(got[l], want[l][39*4*16:]); e > 1e-5 {
				t.Errorf("layer %d: truncated and refilled sequence differs by %.3g", l, e)
			}
		}
	})
}

// TestErrors: misuse is an error naming what was wrong, never a panic.
func TestErrors(t *testing.T) {
	f := newFixture(t, "q8", 2, 4, 2, 8, 4, 0)
	st := f.st
	a, _ := st.NewSeq()
	row := make([]float32, 16)
	q := make([]float32, 32)
	checks := []struct {
		name    string
		err     error
		mention string
		is      error
	}{
		{"drop unknown", st.Drop(99), "sequence 99", ErrUnknownSeq},
		{"fork unknown", func() error { _, err := st.Fork(99); return err }(), "sequence 99", ErrUnknownSeq},
		{"grow unknown", st.Grow(99, []int32{1}), "sequence 99", ErrUnknownSeq},
		{"append before grow", st.Append(0, a, row, row), "call Grow first", nil},
		{"truncate beyond", st.Truncate(a, 3), "Len=0", nil},
	}
	if err := st.Grow(a, []int32{1}); err != nil {
		t.Fatal(err)
	}
	checks = append(checks, []struct {
		name    string
		err     error
		mention string
		is      error
	}{
		{"attend before append", st.Attend(0, a, q, q), "not appended", nil},
		{"bad layer", st.Append(2, a, row, row), "layer 2 out of range", nil},
		{"short k", st.Append(0, a, row[:15], row), "len(k)=15", nil},
		{"fork mid-step", func() error { _, err := st.Fork(a); return err }(), "step is open", nil},
	}...)
	if err := st.Append(0, a, row, row); err != nil {
		t.Fatal(err)
	}
	checks = append(checks, []struct {
		name    string
		err     error
		mention string
		is      error
	}{
		{"append twice", st.Append(0, a, row, row), "already appended", nil},
		{"grow mid-step", st.Grow(a, []int32{1}), "incomplete", nil},
		{"attend short out", st.Attend(0, a, q, q[:8]), "len(out)=8", nil},
	}...)
	for _, c := range checks {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(c.err.Error(), c.mention) {
			t.Errorf("%s: error %q does not mention %q", c.name, c.err, c.mention)
		}
		if c.is != nil && !errors.Is(c.err, c.is) {
			t.Errorf("%s: error %q is not %v", c.name, c.err, c.is)
		}
	}
	for _, bad := range []Config{
		{Layers: 0, Heads: 1, KVHeads: 1, HeadDim: 8, Spec: MustParseSpec("f32")},
		{Layers: 1, Heads: 3, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec("f32")},
		{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8},
		{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec("f32"), LayerSpecs: map[int]Spec{3: MustParseSpec("q8")}},
		{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec("f32"), BudgetBytes: 10},
		{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec("f32"), BlockTokens: -1},
		{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec("f32"), BlockTokens: 1 << 20},
		{Layers: 1 << 20, Heads: 64, KVHeads: 64, HeadDim: 128, Spec: MustParseSpec("f32")},
		{Layers: 2, Heads: 2, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec("kivi2:g=1024"), LayerSpecs: map[int]Spec{1: MustParseSpec("kivi2:g=1023")}},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v): no error", bad)
		}
	}
}

// TestConcurrentSequences: one step of several sequences may run Append and Attend
// from several goroutines; results equal the sequential ones.
func TestConcurrentSequences(t *testing.T) {
	f := newFixture(t, "kivi4:g=8,r=6", 2, 4, 2, 16, 40, 0)
	st := f.st
	const nseq = 4
	ids := make([]SeqID, nseq)
	for i := range ids {
		ids[i], _ = st.NewSeq()
	}
	ref, _ := st.NewSeq()
	var want [][]float32
	for p := 0; p < 40; p++ {
		want = f.mustStep(t, ref, p, p+1)
		for _, id := range ids {
			if err := st.Grow(id, []int32{int32(p)}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, nseq)
		outs := make([][][]float32, nseq)
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = make([][]float32, f.layers)
				for l := 0; l < f.layers; l++ {
					if err := st.Append(l, id, f.k[l][p], f.v[l][p]); err != nil {
						errs[i] = err
						return
					}
					outs[i][l] = make([]float32, f.heads*f.d)
					if err := st.Attend(l, id, f.q[l][p], outs[i][l]); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if !equalOuts(outs[i], want) {
				t.Fatalf("sequence %d position %d differs from the sequential run", i, p)
			}
		}
	}
}

func TestPoolStatsWaste(t *testing.T) {
	f := newFixture(t, "q8", 1, 2, 1, 8, 40, 1<<20)
	st := f.st
	B := st.g.B
	var ids []SeqID
	for i, n := range []int{1, B, B + 3, 2*B - 1} {
		id, _ := st.NewSeq()
		ids = append(ids, id)
		f.mustStep(t, id, 0, n)
		_ = i
	}
	ps := st.PoolStats()
	wantWaste := (B - 1) + 0 + (B - 3) + 1
	if ps.WasteTokens != wantWaste || ps.BlocksUsed != 1+1+2+2 {
		t.Errorf("waste %d blocks %d, want %d and 6", ps.WasteTokens, ps.BlocksUsed, wantWaste)
	}
	if ps.BlocksTotal != int((1<<20)/int64(ps.BlockBytes)) || ps.BlocksFree != ps.BlocksTotal-6 {
		t.Errorf("total %d free %d", ps.BlocksTotal, ps.BlocksFree)
	}
	for _, id := range ids {
		_ = st.Drop(id)
	}
	id, _ := st.NewSeq()
	f.mustStep(t, id, 0, 2*B)
	// Memory is made an extent (one span's blocks) at a time: a new sequence's
	// first block takes an empty one. Freed blocks are reused: nothing more is made.
	if ps2 := st.PoolStats(); ps2.BlocksMade != ps.BlocksMade || ps2.BlocksUsed != 2 {
		t.Errorf("after reuse: made %d used %d, want freed blocks reused (%d made, 2 used)", ps2.BlocksMade, ps2.BlocksUsed, ps.BlocksMade)
	}
}

// TestAttnWorkers: parallel attention (queries of a prefill, chunks of a decode)
// gives the sequential result.
func TestAttnWorkers(t *testing.T) {
	mk := func(workers int) *fixture {
		sp := MustParseSpec("kivi4/q8:sinks=2")
		st, err := New(Config{Layers: 2, Heads: 8, KVHeads: 2, HeadDim: 16, Spec: sp, AttnWorkers: workers, AttnChunkTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{st: st, heads: 8, kvh: 2, d: 16, layers: 2, r: rand.New(rand.NewPCG(2, 2))}
		f.extend(300)
		return f
	}
	seqf, parf := mk(0), mk(2)
	a, _ := seqf.st.NewSeq()
	b, _ := parf.st.NewSeq()
	for _, r := range [][2]int{{0, 250}, {250, 251}, {251, 300}} {
		want := seqf.mustStep(t, a, r[0], r[1])
		got := parf.mustStep(t, b, r[0], r[1])
		for l := range want {
			if e := maxAbsDiff(got[l], want[l]); e > 1e-5 {
				t.Errorf("positions %v layer %d: parallel differs by %.3g", r, l, e)
			}
		}
	}
}

// TestBlocksOutsideHeap: block memory does not count in the Go heap (the collector
// paces itself on the heap, so blocks in it would let garbage grow as large as the
// pool), it is mapped only as far as the budget asks, and it is released once the
// Store is unreachable.
func TestBlocksOutsideHeap(t *testing.T) {
	sp, err := ParseSpec("f16")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 64, Spec: sp, BlockTokens: 16}
	probe, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const blocks = 256
	cfg.BudgetBytes = blocks * int64(probe.BlockBytes()) // 8 MiB
	st, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	heap0 := heapObjectBytes()
	id, err := st.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Grow(id, make([]int32, blocks*16)); err != nil {
		t.Fatal(err)
	}
	mem := st.pool.mem
	if !blockmem.Supported {
		t.Skipf("no anonymous mappings on %s: blocks come from the heap", runtime.GOOS)
	}
	held := int64(blocks * st.BlockBytes())
	if got := mem.Mapped(); got < held || got > held+int64(blocks*64) {
		t.Errorf("%d blocks of %d bytes under a budget of as many: %d bytes mapped, want %d plus alignment", blocks, st.BlockBytes(), got, held)
	}
	if grew := heapObjectBytes() - heap0; grew > held/4 {
		t.Errorf("Go heap objects grew by %d bytes for %d bytes of blocks", grew, held)
	}
	st = nil
	for deadline := time.Now().Add(5 * time.Second); mem.Mapped() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still mapped 5 s after the Store became unreachable", mem.Mapped())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func heapObjectBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
