// Package workpool runs parallel loops on one set of persistent helper goroutines
// shared by every package of kvq (matrix products and attention take turns within
// one forward pass, so they share the helpers instead of each keeping its own).
//
// A decode step is a chain of ~100 short parallel loops (tens of microseconds each).
// Handing such a loop to a parked goroutine costs a wake-up of the same order as
// the loop itself, so the helpers spin briefly after each loop (SetSpin), polling for
// the next one, and only then park; the caller likewise waits for the helpers'
// last items by polling rather than parking. A polling goroutine yields its CPU
// between polls, so an idle process goes back to sleep within the polling time and
// other goroutines and processes are not starved.
package workpool

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultSpin is how long, by default, an idle helper keeps polling for work
// before it parks, and a caller polls for its loop's last items before it parks.
// Measured on llama-134m decode with 2 threads on an idle machine: at 4k context
// (q8) 50 tok/s parked vs 70–74 polling 200µs; on a machine whose cores are busy
// with other processes polling costs more than it saves (KVQ_SPIN=0 turns it off).
const DefaultSpin = 200 * time.Microsecond

// spin is the polling time in nanoseconds (see SetSpin).
var spin atomic.Int64

func init() {
	spin.Store(int64(DefaultSpin))
	if v, err := time.ParseDuration(os.Getenv("KVQ_SPIN")); err == nil && v >= 0 {
		spin.Store(int64(v))
	}
}

// SetSpin sets the polling time (0: park at once) and returns the previous one.
// The environment variable KVQ_SPIN (a Go duration, e.g. 0 or 500us) sets it at
// start.
func SetSpin(d time.Duration) time.Duration { return time.Duration(spin.Swap(int64(max(0, d)))) }

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
		if d := time.Duration(spin.Load()); d > 0 {
			j = poll(d)
		}
		if j == nil {
			j = <-pool.jobs
		}
		j.run()
	}
}

// poll returns the next job if one arrives within d, else nil.
func poll(d time.Duration) *job {
	start := time.Now()
	for i := 1; ; i++ {
		select {
		case j := <-pool.jobs:
			return j
		default:
		}
		if i%16 == 0 {
			if time.Since(start) > d {
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
	if d := time.Duration(spin.Load()); d > 0 && j.left.Load() > 0 {
		start := time.Now()
		for i := 1; j.left.Load() > 0; i++ {
			if i%16 == 0 {
				if time.Since(start) > d {
					break
				}
				yield()
			}
		}
	}
	<-j.finished
}
