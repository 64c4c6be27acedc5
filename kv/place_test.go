package kv

import (
	"slices"
	"testing"
)

// TestAdopterGrowsInPlace: a sequence that adopts a cached prefix ending inside a
// span, then diverges from the continuation the prefix's first owner computed,
// takes that continuation's slot and those after it (alloc evicts them), so its span stays in
// consecutive slots and attention reads it in place instead of copying it every
// step; its outputs are the bits of a cold run, and the adopted block stays cached.
func TestAdopterGrowsInPlace(t *testing.T) {
	f := newFixture(t, "f16", 2, 4, 2, 16, 64, 0)
	st := f.st
	B := st.g.B
	a := seqTokens(3*B, 1)
	b := append(slices.Clone(a[:B]), seqTokens(2*B, 900)...) // a's first block, then not a's

	// The cold run of b, on a store of its own.
	cold, err := New(st.Config())
	if err != nil {
		t.Fatal(err)
	}
	f.st = cold
	id, _ := cold.NewSeq()
	want := f.run(t, id, b, 0, 3*B, 1)
	f.st = st

	id, _ = st.NewSeq()
	f.run(t, id, a, 0, 3*B, B)
	if err := st.Drop(id); err != nil {
		t.Fatal(err)
	}
	id, got, err := st.NewSeqWithPrefix(b[:B+1])
	if err != nil || got != B {
		t.Fatalf("adopting b's first block: %d tokens, %v; want %d", got, err, B)
	}
	outs := f.run(t, id, b, B, 3*B, 1)
	s := st.seqs[id]
	for c, off := range s.gathAt {
		if off >= 0 {
			t.Errorf("span %d copied every step: the adopter's blocks %v do not follow the adopted one", c, s.tables[0])
		}
	}
	for l := range outs {
		if w := want[l][B*f.heads*f.d:]; !bitsEqual(outs[l], w) {
			t.Errorf("layer %d: outputs differ from the cold run (max diff %g)", l, maxAbsDiff(outs[l], w))
		}
	}
	if ps := st.PoolStats(); ps.Evictions != 2 {
		t.Errorf("%d evictions, want 2 (the continuation b diverged from, and the block after it)", ps.Evictions)
	}
	if _, got, _ := st.NewSeqWithPrefix(a[:B+1]); got != B {
		t.Errorf("a's first block no longer cached: %d tokens found, want %d", got, B)
	}
}
