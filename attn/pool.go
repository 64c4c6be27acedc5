package attn

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// ParallelMinTokens is the history length from which a Decode with Options.Workers
// 0 spreads its chunks over DefaultWorkers goroutines: below it, handing work to a
// helper goroutine (a few microseconds) is not repaid.
const ParallelMinTokens = 1024

// DefaultWorkers is the number of goroutines a Decode with Options.Workers 0 uses
// for a long history: the CPUs the process may run on at once (runtime.NumCPU,
// bounded by GOMAXPROCS).
func DefaultWorkers() int { return max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0))) }

// The helpers are persistent goroutines that run parallel loops: started on demand,
// never stopped; an idle helper costs one parked goroutine.
var pool struct {
	mu      sync.Mutex
	started int
	jobs    chan *job
}

func init() { pool.jobs = make(chan *job, 64) }

// job is one parallel loop: items 0..n-1 of fn, claimed one at a time by the caller
// and by whichever helpers pick the job up. A helper that arrives after the last item
// was claimed does nothing, so the caller never waits for a busy helper to start.
type job struct {
	fn   func(i int)
	n    int32
	next atomic.Int32
	wg   sync.WaitGroup
}

func (j *job) run() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
		j.wg.Done()
	}
}

func helper() {
	for j := range pool.jobs {
		j.run()
	}
}

// parallelFor calls fn(i) for every i in [0, n) on up to workers goroutines, the
// caller included, and returns when all calls have returned. The calls must be
// independent.
func parallelFor(workers, n int, fn func(i int)) {
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
	j := &job{fn: fn, n: int32(n)}
	j.wg.Add(n)
	for range workers - 1 {
		select {
		case pool.jobs <- j:
		default: // every helper is busy: the caller does the work
		}
	}
	j.run()
	j.wg.Wait()
}
