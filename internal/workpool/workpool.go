// Package workpool runs parallel loops on one set of persistent helper goroutines
// shared by every package of kvq (matrix products and attention take turns within
// one forward pass, so they share the helpers instead of each keeping its own).
//
// A decode step is a chain of ~100 short parallel loops (tens of microseconds each).
// Handing such a loop to a parked goroutine costs a wake-up of the same order as
// the loop itself, so the helpers spin briefly after each loop (Spin), polling for
// the next one, and only then park; the caller likewise waits for the helpers'
// last items by polling rather than parking. A helper that is spinning yields its
// thread to other runnable goroutines between polls, so an idle process goes back
// to sleep within Spin and other goroutines are not starved.
package workpool

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Spin is how long an idle helper keeps polling for work before it parks, and how
// long a caller polls for its loop's last items before it parks. 0 disables
// polling.
var Spin time.Duration

func init() {
	if v, err := time.ParseDuration(os.Getenv("KVQ_SPIN")); err == nil {
		Spin = v
	}
}

// The helpers: started on demand, never stopped.
var pool struct {
	mu      sync.Mutex
	started int
	jobs    chan *job
}

func init() { pool.jobs = make(chan *job, 256) }

// job is one parallel loop: items 0..n-1 of fn, claimed one at a time by the caller
// and by whichever helpers pick the job up. A helper that arrives after the last
// item was claimed does nothing, so the caller never waits for a helper to start.
type job struct {
	fn       func(i int)
	n        int32
	next     atomic.Int32
	left     atomic.Int32  // items not finished
	finished chan struct{} // closed when left reaches 0
}

func (j *job) run() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
		if j.left.Add(-1) == 0 {
			close(j.finished)
		}
	}
}

func helper() {
	for {
		var j *job
		if Spin > 0 {
			j = poll()
		}
		if j == nil {
			j = <-pool.jobs
		}
		j.run()
	}
}

// poll returns the next job if one arrives within Spin, else nil.
func poll() *job {
	start := time.Now()
	for i := 1; ; i++ {
		select {
		case j := <-pool.jobs:
			return j
		default:
		}
		if i%16 == 0 {
			if time.Since(start) > Spin {
				return nil
			}
			yield()
		}
	}
}

// For calls fn(i) for every i in [0, n) on up to workers goroutines, the caller
// included, and returns when all calls have returned. The calls must be
// independent. workers ≤ 1 runs every call on the caller. For may be called
// concurrently and from within fn (the caller then does the work the helpers
// cannot take).
func For(workers, n int, fn func(i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	pool.mu.Lock()
	for pool.started < workers-1 {
		pool.started++
		go helper()
	}
	pool.mu.Unlock()
	j := &job{fn: fn, n: int32(n), finished: make(chan struct{})}
	j.left.Store(int32(n))
	for range workers - 1 {
		select {
		case pool.jobs <- j:
		default: // every helper is busy: the caller does the work
		}
	}
	j.run()
	if Spin > 0 && j.left.Load() > 0 {
		start := time.Now()
		for i := 1; j.left.Load() > 0; i++ {
			if i%16 == 0 {
				if time.Since(start) > Spin {
					break
				}
				yield()
			}
		}
	}
	<-j.finished
}
