package linalg

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"kvq/internal/workpool"
)

// threads is the number of goroutines (the caller included) a MatMul may use.
var threads atomic.Int32

func init() {
	threads.Store(int32(max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))))
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

// parallelFor calls fn(c) for every c in [0, n), on up to Threads() goroutines (the
// shared helpers of internal/workpool), and returns when all calls have returned. The
// calls must be independent.
func parallelFor(n int, fn func(chunk int)) { workpool.For(Threads(), n, fn) }
