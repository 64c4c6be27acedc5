package kv

import (
	"math"
	"testing"
)

// Blocks reported by OnRegister, exported and imported into another store, leave a
// sequence that adopts them exactly as computing them would: the same attention
// outputs, bit for bit, for every kind of layout.
func TestOnRegisterExportImportExact(t *testing.T) {
	for _, spec := range []string{"f16", "q8", "q4:g=8", "kivi4/q8", "kivi2:g=8,r=1", "kivi4/kivi2:r=8", "q8:sinks=4"} {
		t.Run(spec, func(t *testing.T) {
			const n, cut = 70, 64 // 4 full blocks of 16 before cut
			toks := seqTokens(n, 9)
			src := newFixture(t, spec, 2, 4, 2, 8, n, 0)
			var registered []uint64
			src.st.OnRegister(func(h uint64) { registered = append(registered, h) })
			a, _ := src.st.NewSeq()
			src.run(t, a, toks, 0, cut, 24)
			if err := src.st.Drop(a); err != nil { // registers the last full block
				t.Fatal(err)
			}
			B := src.st.g.B
			if len(registered) != cut/B {
				t.Fatalf("OnRegister saw %d blocks, want %d", len(registered), cut/B)
			}

			// Cold: a fresh store computes the same history with the same steps.
			cold := newFixture(t, spec, 2, 4, 2, 8, n, 0)
			c, _ := cold.st.NewSeq()
			cold.run(t, c, toks, 0, cut, 24)
			want := cold.run(t, c, toks, cut, n, 3)

			// Warm: another fresh store imports the blocks and adopts them.
			dst := newFixture(t, spec, 2, 4, 2, 8, n, 0)
			dst.st.OnRegister(func(h uint64) { t.Errorf("imported block %#x reported as registered here", h) })
			for i, h := range registered {
				blk, ok := src.st.ExportPrefixBlock(h)
				if !ok {
					t.Fatalf("block %d not exported", i)
				}
				if err := dst.st.ImportPrefixBlock(blk); err != nil {
					t.Fatal(err)
				}
				if !dst.st.HasBlock(h) {
					t.Fatalf("block %d imported but not held", i)
				}
			}
			dst.st.OnRegister(nil)
			w, cached, err := dst.st.NewSeqWithPrefix(toks[:n-1])
			if err != nil || cached != cut {
				t.Fatalf("adopted %d tokens (err %v), want %d", cached, err, cut)
			}
			got := dst.run(t, w, toks, cut, n, 3)
			for l := range got {
				for i := range got[l] {
					if math.Float32bits(got[l][i]) != math.Float32bits(want[l][i]) {
						t.Fatalf("layer %d output %d: %g after import, %g computed", l, i, got[l][i], want[l][i])
					}
				}
			}
		})
	}
}

// Blocks of salted sequences are not reported: they must not leave the process.
func TestOnRegisterSkipsSalted(t *testing.T) {
	f := newFixture(t, "q8", 1, 2, 1, 8, 64, 0)
	B := f.st.g.B
	f.st.OnRegister(func(h uint64) { t.Errorf("salted block %#x reported", h) })
	sid, _, err := f.st.NewSeqWithPrefixSalt(nil, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	f.run(t, sid, seqTokens(2*B, 8), 0, 2*B, B)
	if err := f.st.Drop(sid); err != nil {
		t.Fatal(err)
	}
	if f.st.HasBlock(BlockHash(f.st.RootHash(), seqTokens(2*B, 8)[:B])) {
		t.Error("salted block findable under the unsalted hash")
	}
}
