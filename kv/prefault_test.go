package kv

import (
	"errors"
	"testing"
	"time"
)

// prefaultFixture is a store whose extents are several fault pieces (4 layers of 8
// KV heads of 128, f16: 256 KiB blocks, 2 MiB extents) under budget bytes.
func prefaultFixture(t *testing.T, budget int64) *fixture {
	t.Helper()
	return newFixture(t, "f16", 4, 8, 8, 128, 200, budget)
}

// TestPrefault: Prefault makes free blocks an extent at a time until they hold the
// ready bytes asked for, or every whole extent the budget holds is made, and then
// does nothing more; what the budget counts does not move.
func TestPrefault(t *testing.T) {
	probe := prefaultFixture(t, 0).st
	ext := int64(probe.g.E) * int64(probe.g.blockBytes)
	for _, tc := range []struct {
		name          string
		budget, ready int64
		wantExt       int
	}{
		{"ready short of an extent", 10*ext + ext/2, 3*ext - 1, 3},
		{"ready in whole extents", 10*ext + ext/2, 3 * ext, 3},
		{"ready beyond the budget", 10*ext + ext/2, 100 * ext, 10}, // the half extent is left
		{"unlimited budget", 0, 4 * ext, 4},
		{"budget under one extent", ext / 2, 100 * ext, 0},
		{"off", 10 * ext, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := prefaultFixture(t, tc.budget).st
			ps0, u0 := st.PoolStats(), st.Usage()
			if more := st.Prefault(tc.ready, time.Hour); more {
				t.Fatalf("Prefault with an hour to spare reports more to do")
			}
			ps := st.PoolStats()
			want := tc.wantExt * st.g.E
			if ps.BlocksMade != want || ps.BlocksReady != want || ps.BlocksUsed != 0 {
				t.Errorf("made %d, ready %d, used %d blocks; want %d, %d, 0", ps.BlocksMade, ps.BlocksReady, ps.BlocksUsed, want, want)
			}
			if got := ps.PrefaultBytes; got != int64(tc.wantExt)*ext {
				t.Errorf("PrefaultBytes %d, want %d (%d extents of %d)", got, int64(tc.wantExt)*ext, tc.wantExt, ext)
			}
			if ps.HeldBytes != int64(want)*int64(ps.BlockBytes) {
				t.Errorf("HeldBytes %d, want %d blocks of %d", ps.HeldBytes, want, ps.BlockBytes)
			}
			if m := st.pool.mem.Mapped(); m < ps.PrefaultBytes {
				t.Errorf("Mapped %d < PrefaultBytes %d", m, ps.PrefaultBytes)
			}
			if u := st.Usage(); u != u0 || ps.BlocksFree != ps0.BlocksFree || ps.BlocksTotal != ps0.BlocksTotal {
				t.Errorf("budget figures moved: usage %+v → %+v, free blocks %d → %d", u0, u, ps0.BlocksFree, ps.BlocksFree)
			}
			if more := st.Prefault(tc.ready, time.Hour); more || st.PoolStats() != ps {
				t.Errorf("second Prefault: more %v, pool %+v → %+v", more, ps, st.PoolStats())
			}
		})
	}
}

// TestPrefaultResumes: out of time, Prefault stops after one piece and the next call
// goes on from there (every byte faulted once); blocks a sequence takes from the
// extent being faulted keep their contents; and the store then holds exactly the
// tokens, and gives exactly the outputs, of a store that never prefaulted.
func TestPrefaultResumes(t *testing.T) {
	f := prefaultFixture(t, 0)
	st := f.st
	ext := int64(st.g.E) * int64(st.g.blockBytes)
	pieces := int(ext / faultPiece)
	if ext%faultPiece != 0 || pieces < 2 {
		t.Fatalf("extent of %d bytes: want a multiple of %d, two at least", ext, faultPiece)
	}
	twin := &fixture{st: prefaultFixture(t, 0).st, heads: f.heads, kvh: f.kvh, d: f.d, layers: f.layers, k: f.k, v: f.v, q: f.q}
	a, _ := st.NewSeq()
	ta, _ := twin.st.NewSeq()

	// Half of the first extent, then a sequence takes its first blocks.
	const ready = 3 << 20 // two extents
	for i := 1; i <= pieces/2; i++ {
		if !st.Prefault(ready, 0) {
			t.Fatalf("call %d reports nothing more to do", i)
		}
		if got := st.PoolStats().PrefaultBytes; got != int64(i)*faultPiece {
			t.Fatalf("after %d calls out of time: %d bytes faulted, want %d", i, got, int64(i)*faultPiece)
		}
	}
	out := f.mustStep(t, a, 0, 40)
	if want := twin.mustStep(t, ta, 0, 40); !equalOuts(out, want) {
		t.Fatal("outputs differ from a store that never prefaulted")
	}
	calls := pieces / 2
	for st.Prefault(ready, 0) {
		calls++
	}
	calls++ // the last, which reported nothing more
	if want := 2 * pieces; calls != want || st.PoolStats().PrefaultBytes != 2*ext {
		t.Errorf("%d calls faulted %d bytes; want %d calls, %d bytes", calls, st.PoolStats().PrefaultBytes, want, 2*ext)
	}
	for p := 40; p < 200; p += 40 {
		if out, want := f.mustStep(t, a, p, p+40), twin.mustStep(t, ta, p, p+40); !equalOuts(out, want) {
			t.Fatalf("step [%d, %d): outputs differ from a store that never prefaulted", p, p+40)
		}
	}
}

// TestPrefaultBudget: a store prefaulted to its whole budget admits exactly the
// tokens an untouched one does, then refuses the next block with ErrNoSpace.
func TestPrefaultBudget(t *testing.T) {
	probe := prefaultFixture(t, 0).st
	budget := 5*int64(probe.g.E)*int64(probe.g.blockBytes) + 3*int64(probe.g.blockBytes)
	held := func(prefault bool) (int, PoolStats) {
		st := prefaultFixture(t, budget).st
		if prefault {
			st.Prefault(1<<40, time.Hour)
		}
		n := 0
		for {
			id, _ := st.NewSeq()
			err := st.Grow(id, make([]int32, 24))
			if errors.Is(err, ErrNoSpace) {
				return n, st.PoolStats()
			}
			if err != nil {
				t.Fatal(err)
			}
			n += 24
			if st.Usage().AllocBytes > budget {
				t.Fatalf("AllocBytes %d over the budget %d", st.Usage().AllocBytes, budget)
			}
		}
	}
	n0, ps0 := held(false)
	n1, ps1 := held(true)
	if n0 != n1 || ps0.BlocksUsed != ps1.BlocksUsed || ps0.BlocksFree != ps1.BlocksFree || ps0.BlocksMade != ps1.BlocksMade {
		t.Errorf("untouched: %d tokens, %d used, %d free, %d made; prefaulted: %d, %d, %d, %d",
			n0, ps0.BlocksUsed, ps0.BlocksFree, ps0.BlocksMade, n1, ps1.BlocksUsed, ps1.BlocksFree, ps1.BlocksMade)
	}
}
