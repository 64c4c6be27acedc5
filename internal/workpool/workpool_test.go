package workpool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kvq/internal/raceflag"
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
// complete (the caller does the items no helper takes), with For and with ForRuns.
func TestConcurrentAndNested(t *testing.T) {
	forRuns := func(workers, n int, fn func(i int)) {
		ForRuns(workers, n, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				fn(i)
			}
		})
	}
	for _, l := range []struct {
		name string
		loop func(workers, n int, fn func(i int))
	}{{"For", For}, {"ForRuns", forRuns}} {
		t.Run(l.name, func(t *testing.T) {
			var wg sync.WaitGroup
			var total atomic.Int64
			for c := 0; c < 8; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < 50; r++ {
						l.loop(3, 4, func(i int) {
							l.loop(2, 3, func(k int) { total.Add(1) })
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
		})
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

// Every item of a ForRuns loop runs once, in runs inside [0, n).
func TestForRunsEveryItemOnce(t *testing.T) {
	for _, spin := range []time.Duration{0, 50 * time.Microsecond} {
		old := SetSpin(spin)
		for _, tc := range []struct{ workers, n int }{{0, 0}, {1, 5}, {2, 0}, {2, 1}, {2, 2}, {2, 7}, {2, 1000}, {3, 10}, {4, 100}, {8, 3}, {5, 4099}} {
			t.Run(fmt.Sprintf("spin%v/w%d/n%d", spin, tc.workers, tc.n), func(t *testing.T) {
				hits := make([]atomic.Int32, tc.n)
				var bad atomic.Int32
				ForRuns(tc.workers, tc.n, func(i0, i1 int) {
					if i0 < 0 || i1 > tc.n || i0 >= i1 {
						bad.Add(1)
						return
					}
					for i := i0; i < i1; i++ {
						hits[i].Add(1)
					}
				})
				if b := bad.Load(); b > 0 {
					t.Fatalf("%d runs out of [0, %d) or empty", b, tc.n)
				}
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

// While the caller is stuck in its first run, the helper runs its own share and
// then the rest of the caller's share from the back: no item waits for a slow
// goroutine's share.
func TestForRunsTakesSlowShare(t *testing.T) {
	defer SetSpin(SetSpin(50 * time.Millisecond))
	drain(t)
	const n = 100
	var done atomic.Int32
	timeout := time.After(10 * time.Second)
	var stuck atomic.Bool
	ForRuns(2, n, func(i0, i1 int) {
		if i0 == 0 {
			// The caller's first run (its share is [0, 50)): wait for every other item.
			for done.Load() < int32(n-i1) {
				select {
				case <-timeout:
					stuck.Store(true)
					return
				default:
					time.Sleep(time.Millisecond)
				}
			}
		} else {
			done.Add(int32(i1 - i0))
		}
	})
	if stuck.Load() {
		t.Fatalf("only %d items besides the first run finished while it waited", done.Load())
	}
}

// drain waits until the helpers have taken every job offered so far (the loops of
// earlier tests leave jobs whose items their callers did): a job is offered to
// helpers only while the queue has room.
func drain(t *testing.T) {
	t.Helper()
	For(2, 2, func(int) {}) // helpers started
	deadline := time.Now().Add(10 * time.Second)
	for len(pool.jobs) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still queued", len(pool.jobs))
		}
		time.Sleep(time.Millisecond)
	}
}

// With every helper busy elsewhere, the caller runs the whole loop, each share from
// its front: the runs come in increasing order, one forward stream.
func TestForRunsAloneInOrder(t *testing.T) {
	defer SetSpin(SetSpin(50 * time.Millisecond))
	drain(t)
	pool.mu.Lock()
	helpers := pool.started
	pool.mu.Unlock()
	release := make(chan struct{})
	var arrived atomic.Int32
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		For(helpers+1, helpers+1, func(int) { arrived.Add(1); <-release })
	}()
	deadline := time.Now().Add(10 * time.Second)
	for arrived.Load() < int32(helpers+1) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("only %d of %d goroutines took a blocking item", arrived.Load(), helpers+1)
		}
		time.Sleep(time.Millisecond)
	}
	const n = 203
	next := 0
	ForRuns(2, n, func(i0, i1 int) {
		if i0 != next {
			t.Errorf("run [%d, %d) after run ending at %d", i0, i1, next)
		}
		next = i1
	})
	close(release)
	<-busy
	if next != n {
		t.Fatalf("runs ended at %d, want %d", next, n)
	}
}

// TestJobReuse runs many short loops back to back, alternating For and ForRuns and
// their widths, so that pooled jobs are reused while helpers offered an earlier loop
// may still be arriving: every item of every loop must run exactly once, and the loop
// must not return before its items are done.
func TestJobReuse(t *testing.T) {
	for _, spin := range []time.Duration{0, 20 * time.Microsecond} {
		old := SetSpin(spin)
		for r := 0; r < 4000; r++ {
			n, workers := 1+r%5, 2+r%3
			hits := make([]atomic.Int32, n)
			if r%2 == 0 {
				For(workers, n, func(i int) { hits[i].Add(1) })
			} else {
				ForRuns(workers, n, func(i0, i1 int) {
					for i := i0; i < i1; i++ {
						hits[i].Add(1)
					}
				})
			}
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("spin %v loop %d: item %d ran %d times", spin, r, i, h)
				}
			}
		}
		SetSpin(old)
	}
}

// TestNoAllocs: a parallel loop allocates nothing once the pool is warm (a decode
// step runs ~100 of them).
func TestNoAllocs(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("the race detector makes sync.Pool drop pooled jobs at random")
	}
	var sink atomic.Int64
	fn := func(i int) { sink.Add(int64(i)) }
	runs := func(i0, i1 int) { sink.Add(int64(i1 - i0)) }
	for _, tc := range []struct {
		name string
		loop func()
	}{
		{"For", func() { For(2, 16, fn) }},
		{"ForRuns", func() { ForRuns(2, 16, runs) }},
		{"ForRuns/4 workers", func() { ForRuns(4, 16, runs) }},
	} {
		tc.loop() // warm the pool
		if a := testing.AllocsPerRun(200, tc.loop); a > 0.1 {
			t.Errorf("%s: %.2f allocations per loop, want 0", tc.name, a)
		}
	}
}
