package kv

import (
	"errors"
	"math"
	"testing"
)

// stepTok is fixture.step with real token ids for positions [a, b).
func (f *fixture) stepTok(t *testing.T, id SeqID, toks []int32, a, b int) ([][]float32, error) {
	t.Helper()
	if err := f.st.Grow(id, toks[a:b]); err != nil {
		return nil, err
	}
	outs := make([][]float32, f.layers)
	for l := 0; l < f.layers; l++ {
		if err := f.st.Append(l, id, flat(f.k[l][a:b]), flat(f.v[l][a:b])); err != nil {
			t.Fatalf("append layer %d [%d,%d): %v", l, a, b, err)
		}
		outs[l] = make([]float32, (b-a)*f.heads*f.d)
		if err := f.st.Attend(l, id, flat(f.q[l][a:b]), outs[l]); err != nil {
			t.Fatalf("attend layer %d [%d,%d): %v", l, a, b, err)
		}
	}
	return outs, nil
}

// run feeds toks[a:b) to id in steps of at most chunk tokens and returns the
// outputs of every layer, concatenated over the steps.
func (f *fixture) run(t *testing.T, id SeqID, toks []int32, a, b, chunk int) [][]float32 {
	t.Helper()
	all := make([][]float32, f.layers)
	for p := a; p < b; p += chunk {
		o, err := f.stepTok(t, id, toks, p, min(p+chunk, b))
		if err != nil {
			t.Fatalf("step at %d: %v", p, err)
		}
		for l := range all {
			all[l] = append(all[l], o[l]...)
		}
	}
	return all
}

func seqTokens(n int, salt int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)*7 + salt
	}
	return out
}

func TestBlockHashStable(t *testing.T) {
	// Golden values: the hash must not change between processes or releases, since a
	// shared cache tier keys blocks by it.
	if got := BlockHash(0, []int32{1, 2, 3}); got != 0x707a78e3b84966c8 {
		t.Errorf("BlockHash(0, [1 2 3]) = %#x", got)
	}
	if BlockHash(0, []int32{1, 2, 3}) == BlockHash(0, []int32{1, 2, 4}) || BlockHash(0, []int32{1, 2, 3}) == BlockHash(1, []int32{1, 2, 3}) {
		t.Error("hash ignores tokens or parent")
	}
	mk := func(spec, model string) uint64 {
		st, err := New(Config{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Spec: MustParseSpec(spec), ModelFingerprint: model})
		if err != nil {
			t.Fatal(err)
		}
		return st.RootHash()
	}
	if a, b := mk("q8", "m"), mk("q8", "m"); a != b {
		t.Error("root hash differs between two identical stores")
	}
	if mk("q8", "m") == mk("q4", "m") || mk("q8", "m") == mk("q8", "other") {
		t.Error("root hash ignores the cache spec or the model fingerprint")
	}
}

func TestPrefixReuseIsExact(t *testing.T) {
	for _, spec := range []string{"f32", "f16", "q8", "q4:g=8", "kivi4/q8", "kivi2:g=8,r=1"} {
		t.Run(spec, func(t *testing.T) {
			const n = 70
			f := newFixture(t, spec, 2, 4, 2, 8, n, 0)
			st := f.st
			if !st.PrefixCaching() {
				t.Fatalf("prefix caching off for %s", spec)
			}
			B, U := st.g.B, st.g.U // blocks are shared a unit (U tokens) at a time
			toks := seqTokens(n, 3)
			// Reference: the whole history computed in one sequence.
			ref, _ := st.NewSeq()
			want := f.run(t, ref, toks, 0, n, 5)
			// Donor: computes the first 50 tokens, then is dropped (its full blocks
			// stay cached).
			donor, _ := st.NewSeq()
			f.run(t, donor, toks, 0, 50, 50)
			if err := st.Drop(donor); err != nil {
				t.Fatal(err)
			}
			if err := st.Drop(ref); err != nil {
				t.Fatal(err)
			}
			ps := st.PoolStats()
			if ps.BlocksCached < 50/U*U/B || ps.BlocksUsed != 0 {
				t.Fatalf("after drops: %d cached, %d used", ps.BlocksCached, ps.BlocksUsed)
			}
			// Two sequences adopt the prefix concurrently and continue it.
			for i := range 2 {
				id, cached, err := st.NewSeqWithPrefix(toks[:n-1])
				if err != nil {
					t.Fatal(err)
				}
				wantCached := (n - 1) / U * U // the reference registered every full unit
				if cached != wantCached || st.Len(id) != cached {
					t.Fatalf("seq %d: cached %d (Len %d), want %d", i, cached, st.Len(id), wantCached)
				}
				got := f.run(t, id, toks, cached, n, 3)
				rows := (n - cached) * f.heads * f.d
				for l := range got {
					w := want[l][len(want[l])-rows:]
					// Exact up to float rounding: steps split differently (the
					// reference stepped from position 0) may sum in another order.
					if d := maxAbsDiff(got[l], w); d > 1e-6 {
						t.Errorf("seq %d layer %d: output differs from the computed history by %g", i, l, d)
					}
				}
			}
			ps = st.PoolStats()
			if hit := (n - 1) / U * U / B; ps.BlocksShared != hit || ps.PrefixHitBlocks != int64(2*hit) || ps.PrefixHitBlocks != ps.PrefixQueriedBlocks {
				t.Errorf("pool: %d shared, %d hits of %d queried", ps.BlocksShared, ps.PrefixHitBlocks, ps.PrefixQueriedBlocks)
			}
			// A different prompt shares only what it has in common.
			other := append(append([]int32(nil), toks[:U+3]...), seqTokens(40, 1000)...)
			id, cached, err := st.NewSeqWithPrefix(other)
			if err != nil || cached != U {
				t.Errorf("diverging prompt: cached %d (err %v), want %d", cached, err, U)
			}
			_ = st.Drop(id)
		})
	}
}

// TestPrefixEverySpec: for every cache type, windows and sinks included, a sequence
// that adopts cached blocks attends bit for bit as the same history computed from
// position 0, whether the donor computed its prefix in one prefill or in steps.
func TestPrefixEverySpec(t *testing.T) {
	specs := append([]string{"kivi4/kivi2", "kivi4/kivi2:sinks=4", "q4:sinks=4", "kivi2:g=8,r=40,sinks=19", "kivi4/kivi2:r=5", "f16:sinks=1"}, conformanceSpecs...)
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			const n = 90
			for _, donorChunk := range []int{n, 7, 1} {
				f := newFixture(t, spec, 2, 4, 2, 8, n, 0)
				st := f.st
				U := st.g.U
				toks := seqTokens(n, 5)
				donor, _ := st.NewSeq()
				f.run(t, donor, toks, 0, 70, donorChunk)
				if err := st.Drop(donor); err != nil {
					t.Fatal(err)
				}
				id, cached, err := st.NewSeqWithPrefix(toks[:n-1])
				if err != nil {
					t.Fatal(err)
				}
				if want := 70 / U * U; cached != want {
					t.Fatalf("donor chunk %d: adopted %d tokens, want %d", donorChunk, cached, want)
				}
				got := f.run(t, id, toks, cached, n, n)
				// Cold: the same history computed from 0, the adopted part in one step.
				cold, _ := st.NewSeq()
				f.run(t, cold, toks, 0, cached, cached)
				want := f.run(t, cold, toks, cached, n, n)
				for l := range got {
					if !bitsEqual(got[l], want[l]) {
						t.Errorf("donor chunk %d layer %d: adopted prefix attends differently from the computed one (max diff %g)", donorChunk, l, maxAbsDiff(got[l], want[l]))
					}
				}
				checkAccounting(t, spec, st)
			}
		})
	}
	sp := MustParseSpec("q8")
	st, err := New(Config{Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 8, Spec: sp, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.PrefixCaching() {
		t.Error("NoPrefixCache ignored")
	}
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestPrefixLRUEviction(t *testing.T) {
	// Blocks of a whole span: blocks taken from the cache never scatter a span, so
	// the pool needs no room for span copies.
	f := newFixture(t, "q8", 1, 2, 1, 8, 8*SpanTokens, 0)
	cfg := f.st.Config()
	cfg.BlockTokens = SpanTokens
	probe, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	B, bb := SpanTokens, int64(probe.g.blockBytes)
	// A budget of exactly 8 blocks (q8 has no tails).
	cfg.BudgetBytes = 8 * bb
	if f.st, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	st := f.st
	a, b := seqTokens(3*B, 1), seqTokens(3*B, 500)
	for _, toks := range [][]int32{a, b} {
		id, _ := st.NewSeq()
		f.run(t, id, toks, 0, 3*B, B)
		if err := st.Drop(id); err != nil {
			t.Fatal(err)
		}
	}
	if ps := st.PoolStats(); ps.BlocksCached != 6 || ps.BlocksFree != 8 || ps.Evictions != 0 {
		t.Fatalf("after two drops: %+v", ps)
	}
	// Five new blocks: two never made, then three taken from the cache, oldest
	// released first: a's blocks, last block first.
	c, _ := st.NewSeq()
	f.run(t, c, seqTokens(5*B, 9000), 0, 5*B, B)
	ps := st.PoolStats()
	if ps.Evictions != 3 || ps.BlocksCached != 3 || ps.BlocksUsed != 5 {
		t.Fatalf("after reuse: %d evictions, %d cached, %d used", ps.Evictions, ps.BlocksCached, ps.BlocksUsed)
	}
	if _, got, _ := st.NewSeqWithPrefix(a); got != 0 {
		t.Errorf("a's blocks were evicted, but %d tokens were found", got)
	}
	id, got, _ := st.NewSeqWithPrefix(b)
	if got != 3*B {
		t.Errorf("b's blocks should still be cached: found %d tokens, want %d", got, 3*B)
	}
	// Adopting b took its blocks out of the queue: 8 used, none free, growth fails.
	if ps := st.PoolStats(); ps.BlocksUsed != 8 || ps.BlocksCached != 0 {
		t.Errorf("after adoption: %d used %d cached", ps.BlocksUsed, ps.BlocksCached)
	}
	if err := st.Grow(id, []int32{1}); !errors.Is(err, ErrNoSpace) {
		t.Errorf("grow beyond the budget: %v", err)
	}
}

func TestPrefixRewriteUnregisters(t *testing.T) {
	f := newFixture(t, "f16", 1, 2, 1, 8, 64, 0)
	st := f.st
	B := st.g.B
	toks := seqTokens(2*B, 5)
	a, _ := st.NewSeq()
	f.run(t, a, toks, 0, 2*B, 2*B)
	// c shares a's blocks, then rewrites its second block with other tokens: the
	// shared block is copied, a and the cache entry are untouched.
	c, cached, _ := st.NewSeqWithPrefix(toks)
	if cached != 2*B {
		t.Fatalf("cached %d", cached)
	}
	if err := st.Truncate(c, B+2); err != nil {
		t.Fatal(err)
	}
	alt := append(append([]int32(nil), toks[:B+2]...), seqTokens(B-2, 777)...)
	f.k[0][B+2], f.v[0][B+2] = f.v[0][B+2], f.k[0][B+2] // different rows
	f.run(t, c, alt, B+2, 2*B, 4)
	if _, got, _ := st.NewSeqWithPrefix(toks); got != 2*B {
		t.Errorf("original prefix: %d cached tokens, want %d", got, 2*B)
	}
	if _, got, _ := st.NewSeqWithPrefix(alt); got != 2*B {
		t.Errorf("rewritten prefix: %d cached tokens, want %d (c's own second block registers once full)", got, 2*B)
	}
	// a alone rewrites its registered second block in place: it must stop being found.
	_ = st.Drop(c)
	b, _ := st.NewSeq()
	f.run(t, b, seqTokens(2*B, 31), 0, 2*B, 2*B)
	if err := st.Truncate(b, B+2); err != nil {
		t.Fatal(err)
	}
	f.run(t, b, append(seqTokens(B+2, 31), seqTokens(B, 4000)...), B+2, B+6, 4)
	if _, got, _ := st.NewSeqWithPrefix(seqTokens(2*B, 31)); got != B {
		t.Errorf("overwritten block still found: %d cached tokens, want %d", got, B)
	}
}

// TestPrefixSidesUnderPressure: side rows are free memory that new blocks take back
// (least recently used first); a lookup then adopts only as far as the side rows it
// needs are held, still bit for bit as the computed history, and the accounting
// stays exact. Both adoptions compared with a cold run adopt a non-empty prefix.
func TestPrefixSidesUnderPressure(t *testing.T) {
	const spec = "kivi4/kivi2:r=40" // a window of 39 rows: three blocks' side rows per boundary
	probe := newFixture(t, spec, 1, 2, 1, 8, 0, 0)
	B, U, bb := probe.st.g.B, probe.st.g.U, int64(probe.st.g.blockBytes)
	tail, err := SteadyTail(probe.st.Config())
	if err != nil {
		t.Fatal(err)
	}
	const units = 3
	n := units * U
	// Room for the prefix's blocks, as many again, and two sequences' tails with
	// prefill work rows.
	budget := int64(4*n/B)*bb + 2*tail.Bytes + 2*int64(4*B*tail.RowBytes)
	f := newFixture(t, spec, 1, 2, 1, 8, n+1, budget)
	st := f.st
	toks := seqTokens(n+1, 3)
	donor, _ := st.NewSeq()
	f.run(t, donor, toks, 0, n, B)
	if err := st.Drop(donor); err != nil {
		t.Fatal(err)
	}
	ps := st.PoolStats()
	if ps.BlocksSide == 0 || ps.BlocksCached != n/B {
		t.Fatalf("after the donor: %d side blocks, %d cached, want %d", ps.BlocksSide, ps.BlocksCached, n/B)
	}
	// adopt looks up toks[:P+1], checks the adopted length, and compares the
	// sequence's next step with a cold sequence that computed toks[:got] itself.
	adopt := func(P int, check func(got int) bool) int {
		t.Helper()
		id, cached, err := st.NewSeqWithPrefix(toks[:P+1])
		if err != nil || !check(cached) {
			t.Fatalf("looking up %d tokens: adopted %d (err %v); pool %+v", P, cached, err, st.PoolStats())
		}
		got := f.run(t, id, toks, cached, P+1, P+1)
		checkAccounting(t, spec, st)
		_ = st.Drop(id)
		cold, _ := st.NewSeq()
		f.run(t, cold, toks, 0, cached, cached)
		exp := f.run(t, cold, toks, cached, P+1, P+1)
		if !bitsEqual(got[0], exp[0]) {
			t.Errorf("adopting %d tokens: attention differs from the computed history", cached)
		}
		_ = st.Drop(cold)
		return cached
	}
	adopt(n, func(got int) bool { return got == n })
	// A short lookup makes the first unit's blocks and side rows the most recently
	// used: pressure takes the later blocks' side rows first.
	adopt(U, func(got int) bool { return got == U })
	// Another sequence's blocks (and their own side rows) take memory back until
	// the last block of the prefix has lost its side rows (or is gone).
	lastReady := func() bool {
		parent := st.RootHash()
		for i := range n / B {
			lo, hi := st.BlockTokenRange(i)
			parent = BlockHash(parent, toks[lo:hi])
		}
		id, ok := st.pool.idx.byHash[blockKey{parent, 0}]
		return ok && st.pool.idx.meta[id].sideReady
	}
	other, _ := st.NewSeq()
	f.extend(4 * n)
	otherToks := seqTokens(5*n, 900)
	for p := 0; lastReady(); p += B {
		if _, err := f.stepTok(t, other, otherToks, p, p+B); err != nil {
			t.Fatalf("growing until side blocks are taken back: %v (%+v)", err, st.PoolStats())
		}
	}
	_ = st.Drop(other)
	// The whole prefix lacks its side rows now; the first unit still has them.
	got := adopt(n, func(got int) bool { return got >= U && got < n })
	t.Logf("after the pressure: %d of %d tokens adoptable, %+v", got, n, st.PoolStats())
}

// TestPrefixBlockExportImport: blocks exported from one store and imported into
// another of the same configuration are adopted there, side rows included, and
// attend bit for bit as the history computed there; bad blocks are refused.
func TestPrefixBlockExportImport(t *testing.T) {
	for _, spec := range []string{"q4", "kivi4/kivi2:r=40,sinks=4"} {
		t.Run(spec, func(t *testing.T) {
			const n = 100
			a := newFixture(t, spec, 2, 4, 2, 8, n, 0)
			b := newFixture(t, spec, 2, 4, 2, 8, n, 0) // same rows: same seeds
			U := a.st.g.U
			toks := seqTokens(n, 7)
			donor, _ := a.st.NewSeq()
			a.run(t, donor, toks, 0, n, 9)
			parent := a.st.RootHash()
			for i := range a.st.g.unitBlocks(n) {
				lo, hi := a.st.BlockTokenRange(i)
				h := BlockHash(parent, toks[lo:hi])
				blk, ok := a.st.ExportPrefixBlock(h)
				if !ok {
					t.Fatalf("block %d not exported", i)
				}
				if blk.Index != i || (a.st.sides && blk.Side == nil) {
					t.Fatalf("block %d: index %d, %d side bytes", i, blk.Index, len(blk.Side))
				}
				bad := blk
				bad.Tokens = append([]int32{-5}, blk.Tokens[1:]...)
				if err := b.st.ImportPrefixBlock(bad); err == nil {
					t.Error("a block whose tokens do not match its hash was imported")
				}
				bad = blk
				bad.Bytes = blk.Bytes[1:]
				if err := b.st.ImportPrefixBlock(bad); err == nil {
					t.Error("a short block was imported")
				}
				if err := b.st.ImportPrefixBlock(blk); err != nil {
					t.Fatal(err)
				}
				parent = h
			}
			id, cached, err := b.st.NewSeqWithPrefix(toks[:n-1])
			if err != nil || cached != (n-1)/U*U {
				t.Fatalf("adopted %d tokens (err %v), want %d", cached, err, (n-1)/U*U)
			}
			got := b.run(t, id, toks, cached, n, n)
			cold, _ := b.st.NewSeq()
			b.run(t, cold, toks, 0, cached, cached)
			want := b.run(t, cold, toks, cached, n, n)
			for l := range got {
				if !bitsEqual(got[l], want[l]) {
					t.Errorf("layer %d: imported prefix attends differently from the computed one", l)
				}
			}
			checkAccounting(t, spec, b.st)
		})
	}
}
