package kv

import "testing"

// Side blocks go only to blocks that can be registered: none to a block holding a
// row grown without token ids, whether that block is completed by GrowWithoutTokens
// or by a later Grow with ids, while the earlier block of real ids keeps its own.
func TestGrowWithoutTokensLeavesNoSides(t *testing.T) {
	const n = 80
	f := newFixture(t, "kivi2:g=8,r=8", 2, 2, 1, 8, n, 0)
	if !f.st.sides {
		t.Fatal("kivi2:g=8,r=8 should keep side rows")
	}
	id, _ := f.st.NewSeq()
	f.mustStep(t, id, 0, 16) // block 0: real ids
	appendRows := func(a, b int) {
		for l := 0; l < f.layers; l++ {
			if err := f.st.Append(l, id, flat(f.k[l][a:b]), flat(f.v[l][a:b])); err != nil {
				t.Fatalf("append layer %d [%d,%d): %v", l, a, b, err)
			}
		}
	}
	if err := f.st.GrowWithoutTokens(id, 8); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		s, err := f.st.lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.st.pool.idx.meta[s.tables[0][0]].side) == 0 {
			t.Errorf("%s: block 0, all real ids, has no side blocks", when)
		}
		for i := 1; i < s.nblocks(); i++ {
			if side := f.st.pool.idx.meta[s.tables[0][i]].side; len(side) != 0 {
				t.Errorf("%s: block %d, past the first row without ids, holds %d side blocks", when, i, len(side))
			}
		}
	}
	appendRows(16, 24)
	f.mustStep(t, id, 24, 56) // completes blocks 1 (opaque from 16) and 2 with ids
	check("after Grow")
	if err := f.st.GrowWithoutTokens(id, 24); err != nil { // completes block 3, grows 4
		t.Fatal(err)
	}
	appendRows(56, 80)
	check("after GrowWithoutTokens")
}
