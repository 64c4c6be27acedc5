package engine

import (
	"runtime"
	"runtime/metrics"
)

// maxYields bounds how many times the scheduler goroutine yields between two steps
// (see yielder.yield): enough for the Go runtime to run some hundred woken
// goroutines, whatever other goroutines of the process keep runnable.
const maxYields = 16

// yielder lets the goroutines a step woke run before the next step. The scheduler
// goroutine does not block while requests run, and the forward pass's helpers poll
// between loops with the OS's yield, not the runtime's: without yielding, the
// goroutines that read a step's tokens (stream pumps, HTTP handlers writing them)
// and new requests' handlers wait for the runtime's preemption, ~10 ms (llama-134m,
// 2 threads: a token reached its HTTP handler a whole step late). One
// runtime.Gosched is not always enough: the runtime takes a goroutine from its
// global queue, where Gosched puts the yielding one, every 61st time it schedules,
// so with many readers the scheduler goroutine may come back before all of them
// ran; it yields again while goroutines wait for a processor.
type yielder struct {
	runnable []metrics.Sample // goroutines waiting for a processor
}

func newYielder() yielder {
	return yielder{runnable: []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}}
}

// yield returns when no other goroutine waits for a processor, or after maxYields
// yields.
func (y *yielder) yield() {
	for range maxYields {
		runtime.Gosched()
		metrics.Read(y.runnable)
		if v := y.runnable[0].Value; v.Kind() != metrics.KindUint64 || v.Uint64() == 0 {
			return
		}
	}
}
