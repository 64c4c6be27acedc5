package attn

import (
	"runtime"

	"kvq/internal/workpool"
)

// ParallelMinTokens is the history length from which a Decode with Options.Workers
// 0 spreads its chunks over DefaultWorkers goroutines: below it, handing work to a
// helper goroutine (a few microseconds) is not repaid.
const ParallelMinTokens = 1024

// DefaultWorkers is the number of goroutines a Decode with Options.Workers 0 uses
// for a long history: the CPUs the process may run on at once (runtime.NumCPU,
// bounded by GOMAXPROCS).
func DefaultWorkers() int { return max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0))) }

// parallelFor calls fn(i) for every i in [0, n) on up to workers goroutines, the
// caller included (the shared helpers of internal/workpool), and returns when all
// calls have returned. The calls must be independent.
func parallelFor(workers, n int, fn func(i int)) { workpool.For(workers, n, fn) }
