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
// and by whichever helpers pick the job up; or, for ForRuns, runs of items from the
// workers' shares. A helper that arrives after the last item was claimed does
// nothing, so the caller never waits for a helper to start.
//
// Jobs are reused (a decode step runs ~100 loops, and fresh jobs were most of its
// garbage): refs counts the caller and every offer a helper has not finished with (an
// offer may be taken after the loop is done), and the last to let go puts the job
// back into jobPool.
type job struct {
	fn       func(i int)
	runs     func(i0, i1 int) // ForRuns
	n        int32
	next     atomic.Int32
	joined   atomic.Int32  // ForRuns: helpers that took the job
	left     atomic.Int32  // items not finished
	refs     atomic.Int32  // the caller and the offers not yet finished with
	finished chan struct{} // receives one value when left reaches 0 (buffered, 1)
	shares   []share       // ForRuns: one per worker
	inline   [2]share      // backs shares for two workers
	more     []share       // backs shares for more, kept for reuse
}

var jobPool = sync.Pool{New: func() any { return &job{finished: make(chan struct{}, 1)} }}

// newJob returns a job of n items ready to be started, with no references yet.
func newJob(n int) *job {
	j := jobPool.Get().(*job)
	j.n = int32(n)
	j.next.Store(0)
	j.joined.Store(0)
	j.left.Store(int32(n))
	return j
}

// release drops one reference; the last one puts j back into jobPool.
func (j *job) release() {
	if j.refs.Add(-1) == 0 {
		j.fn, j.runs, j.shares = nil, nil, nil
		jobPool.Put(j)
	}
}

// share is the items [lo, hi) of one worker of a ForRuns loop not yet claimed, lo
// in the low and hi in the high 32 bits of one word: the owner claims runs from the
// front, the other workers from the back (from the front too while the owner has not
// started), each with one compare-and-swap.
type share struct {
	lohi  atomic.Uint64
	owned atomic.Bool // the owner has started
	_     [55]byte    // one cache line per share: owners claim without contention
}

func (j *job) run(w int) {
	if j.runs != nil {
		j.runShares(w)
		return
	}
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
		j.done(1)
	}
}

// done records k finished items.
func (j *job) done(k int32) {
	if j.left.Add(-k) == 0 {
		j.finished <- struct{}{}
	}
}

// runShares runs worker w's share of a ForRuns loop from the front, a quarter of
// what is left at a time, then takes runs of a quarter of what is left from the share
// with the most items left: from its back, or, while its owner has not started (a
// helper that is late, or busy with other work), from its front, so that a share run
// by another goroutine alone is still one forward stream.
func (j *job) runShares(w int) {
	if w < len(j.shares) {
		sh := &j.shares[w]
		sh.owned.Store(true)
		for {
			v := sh.lohi.Load()
			lo, hi := uint32(v), uint32(v>>32)
			if lo >= hi {
				break
			}
			k := max(1, (hi-lo)/4)
			if sh.lohi.CompareAndSwap(v, v+uint64(k)) {
				j.runs(int(lo), int(lo+k))
				j.done(int32(k))
			}
		}
	}
	for {
		var sh *share
		var most uint32
		for i := range j.shares {
			v := j.shares[i].lohi.Load()
			if lo, hi := uint32(v), uint32(v>>32); hi > lo && hi-lo > most {
				sh, most = &j.shares[i], hi-lo
			}
		}
		if sh == nil {
			return
		}
		owned := sh.owned.Load()
		v := sh.lohi.Load()
		lo, hi := uint32(v), uint32(v>>32)
		if lo >= hi {
			continue
		}
		k := max(1, (hi-lo)/4)
		switch {
		case !owned && sh.lohi.CompareAndSwap(v, v+uint64(k)):
			j.runs(int(lo), int(lo+k))
			j.done(int32(k))
		case owned && sh.lohi.CompareAndSwap(v, v-uint64(k)<<32):
			j.runs(int(hi-k), int(hi))
			j.done(int32(k))
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
		j.run(int(j.joined.Add(1)))
		j.release()
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
	j := newJob(n)
	j.fn = fn
	start(j, workers)
	j.run(0)
	wait(j)
}

// ForRuns calls fn(i0, i1) for runs [i0, i1) of items that together cover [0, n)
// once, on up to workers goroutines, the caller included, and returns when all calls
// have returned; as For, for items that are better taken in increasing order by one
// goroutine, like the rows of a matrix that the CPU prefetches ahead of the row being
// read. Each goroutine owns a contiguous share of the items and runs it from the
// front, a quarter of what is left at a time (each of its runs starts where the last
// ended: one forward stream); a goroutine whose share is done takes runs from the
// back of the share with the most items left, so a goroutine slowed by other load is
// caught up, and the shrinking runs keep the goroutines' finishing times close. A
// share whose goroutine has not started (a helper busy elsewhere, or not yet awake) is
// taken from its front, still one forward stream. Claiming single items from one
// counter, as For does, interleaves the goroutines and breaks each one's stream at
// every item. n must be below 2³¹.
func ForRuns(workers, n int, fn func(i0, i1 int)) {
	workers = min(workers, n)
	if workers <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	j := newJob(n)
	j.runs = fn
	j.shares = j.inline[:0]
	if workers > len(j.inline) {
		if cap(j.more) < workers {
			j.more = make([]share, workers)
		}
		j.shares = j.more
	}
	j.shares = j.shares[:workers]
	for w := range j.shares {
		lo, hi := uint64(w*n/workers), uint64((w+1)*n/workers)
		j.shares[w].lohi.Store(lo | hi<<32)
		j.shares[w].owned.Store(false)
	}
	start(j, workers)
	j.run(0)
	wait(j)
}

// start offers j to workers-1 helpers, starting helpers as needed. j holds a
// reference for the caller and one per offer made (taken back if the offer fails).
func start(j *job, workers int) {
	pool.mu.Lock()
	for pool.started < workers-1 {
		pool.started++
		go helper()
	}
	pool.mu.Unlock()
	j.refs.Store(int32(workers))
	for range workers - 1 {
		select {
		case pool.jobs <- j:
		default: // every helper is busy: the caller does the work
			j.refs.Add(-1)
		}
	}
}

// wait returns when j's items are all finished, polling for the spin time first.
func wait(j *job) {
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
	<-j.finished // also after polling saw 0: the value must not be left for the next use
	j.release()
}
