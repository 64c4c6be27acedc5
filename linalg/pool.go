package linalg

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// threads is the number of goroutines (the caller included) a MatMul may use.
var threads atomic.Int32

// pool is the set of persistent helper goroutines. Helpers are started on demand and
// never stopped; an idle helper costs one parked goroutine.
var pool struct {
	mu      sync.Mutex
	started int
	jobs    chan *job
}

func init() {
	threads.Store(int32(max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))))
	pool.jobs = make(chan *job, 256)
}

// maxThreads bounds SetThreads.
const maxThreads = 256

// SetThreads sets how many goroutines, the caller included, one MatMul call may use:
// n = 1 runs every product on the calling goroutine. The default is the number of CPUs
// the process may run on at once (runtime.NumCPU, bounded by GOMAXPROCS at start). It returns an error, and changes
// nothing, if n is not in [1, 256].
func SetThreads(n int) error {
	if n < 1 || n > maxThreads {
		return fmt.Errorf("linalg: SetThreads(%d): want 1..%d", n, maxThreads)
	}
	threads.Store(int32(n))
	return nil
}

// Threads returns the number of goroutines one MatMul call may use (see SetThreads).
func Threads() int { return int(threads.Load()) }

// job is one parallel loop: chunks 0..n-1 of fn, claimed one at a time by the caller and
// by whichever helpers pick the job up. A helper that arrives after the last chunk was
// claimed does nothing, so the caller never waits for a busy helper to start.
type job struct {
	fn   func(chunk int)
	n    int32
	next atomic.Int32
	wg   sync.WaitGroup
}

func (j *job) run() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.n {
			return
		}
		j.fn(int(c))
		j.wg.Done()
	}
}

func helper() {
	for j := range pool.jobs {
		j.run()
	}
}

// parallelFor calls fn(c) for every c in [0, n), on up to Threads() goroutines, and returns
// when all calls have returned. The calls must be independent.
func parallelFor(n int, fn func(chunk int)) {
	t := min(Threads(), n)
	if t <= 1 {
		for c := 0; c < n; c++ {
			fn(c)
		}
		return
	}
	helpers := t - 1
	pool.mu.Lock()
	for pool.started < helpers {
		go helper()
		pool.started++
	}
	pool.mu.Unlock()
	j := &job{fn: fn, n: int32(n)}
	j.wg.Add(n)
	for i := 0; i < helpers; i++ {
		select {
		case pool.jobs <- j:
		default: // every helper is busy with queued work: the caller does the rest
		}
	}
	j.run()
	j.wg.Wait()
}
