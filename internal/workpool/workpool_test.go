package workpool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestForEveryItemOnce(t *testing.T) {
	for _, spin := range []time.Duration{0, 50 * time.Microsecond} {
		old := SetSpin(spin)
		for _, tc := range []struct{ workers, n int }{{0, 0}, {1, 5}, {2, 1}, {2, 2}, {2, 7}, {4, 100}, {8, 3}, {3, 1000}} {
			t.Run(fmt.Sprintf("spin%v/w%d/n%d", spin, tc.workers, tc.n), func(t *testing.T) {
				hits := make([]atomic.Int32, tc.n)
				For(tc.workers, tc.n, func(i int) { hits[i].Add(1) })
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						t.Fatalf("item %d ran %d times", i, h)
					}
				}
			})
		}
		SetSpin(old)
	}
}

// Concurrent callers and a loop started from inside another loop's item must all
// complete (the caller does the items no helper takes).
func TestForConcurrentAndNested(t *testing.T) {
	var wg sync.WaitGroup
	var total atomic.Int64
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				For(3, 4, func(i int) {
					For(2, 3, func(k int) { total.Add(1) })
				})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("nested/concurrent loops did not complete")
	}
	if got, want := total.Load(), int64(8*50*4*3); got != want {
		t.Fatalf("ran %d inner items, want %d", got, want)
	}
}

// BenchmarkChain is a decode step's shape: a chain of short parallel loops (2 items
// of ~work each). Compare the per-loop cost with Spin 0 (helpers park) and Spin > 0.
func BenchmarkChain(b *testing.B) {
	for _, spin := range []time.Duration{0, 50 * time.Microsecond, 200 * time.Microsecond} {
		for _, work := range []int{2000, 20000} {
			b.Run(fmt.Sprintf("spin=%v/work=%d", spin, work), func(b *testing.B) {
				defer SetSpin(SetSpin(spin))
				var sink [2]float64
				for b.Loop() {
					For(2, 2, func(i int) {
						x := 1.0
						for k := 0; k < work; k++ {
							x = x*1.0000001 + 1e-9
						}
						sink[i] += x
					})
				}
			})
		}
	}
}
