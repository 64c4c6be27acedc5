package linalg

import (
	"runtime"
	"sync"
	"sync/atomic"

	"kvq/internal/workpool"
)

// maxWarm is how many matrices one Warm call takes.
const maxWarm = 4

// Warm asks a helper goroutine that is waiting for work (see internal/workpool.Idle)
// to read the weights of ws, in order, into the CPU caches while the caller goes on
// with serial work, so that the products over them that follow read them from cache
// rather than from memory. It returns at once. The reading stops at the next parallel
// loop of any kind (attention over a long history, for one) and at the next MatMul or
// MatMulMany call, which do not wait for it; what was read by then stays in the caches
// the products read from. The weights must stay valid (mapped) until StopWarm, which
// waits for the reading to stop, returns. Only the first 4 matrices are read. It does
// nothing with one thread (SetThreads(1)) or when the helpers park at once
// (workpool.SetSpin(0)), and it has no effect on any result.
//
// Decode is bound by reading the weights from memory, and between its products a
// decode step runs serial code (attention over a short history, norms) with the other
// CPUs idle: Warm lets one of them read the next weights meanwhile.
func Warm(ws ...Matrix) {
	if Threads() < 2 || len(ws) == 0 {
		return
	}
	j, _ := warmPool.Get().(*warmJob)
	if j == nil {
		j = &warmJob{}
		j.fn = j.run // bound once: no closure per call
	}
	j.n = min(len(ws), maxWarm)
	for i := range j.n {
		j.data[i] = ws[i].Data
	}
	j.gen = warmGen.Load()
	if !workpool.Idle(j.fn) {
		j.release()
	}
}

// StopWarm stops the reading started by Warm and returns when no helper reads any
// more. Call it before the weights passed to Warm go away (a forward pass calls it
// before it returns). A helper stops within 4 KiB of reading, so StopWarm waits about
// a microsecond, unless the helper has lost its CPU to other work, when StopWarm
// sleeps until it is back.
func StopWarm() {
	signalWarm()
	if warmActive.Load() == 0 {
		return
	}
	for i := 0; i < 64; i++ {
		if warmActive.Load() == 0 {
			return
		}
		runtime.Gosched()
	}
	warmMu.Lock()
	for warmActive.Load() > 0 {
		warmIdle.Wait()
	}
	warmMu.Unlock()
}

// signalWarm tells the running warm jobs to stop, without waiting for them.
func signalWarm() { warmGen.Add(1) }

var (
	// warmGen counts stop signals: a warm job stops when it changes.
	warmGen atomic.Uint64
	// warmActive counts the warm jobs that may read: a job counts itself before it
	// checks warmGen, and StopWarm changes warmGen before it checks the count, so
	// either StopWarm waits for the job or the job sees the change and reads nothing.
	warmActive atomic.Int32
	// warmIdle is signalled, under warmMu, when warmActive drops to 0.
	warmMu   sync.Mutex
	warmIdle = sync.NewCond(&warmMu)
)

// warmJob is one Warm call's matrices.
type warmJob struct {
	data [maxWarm][]byte
	n    int
	gen  uint64 // warmGen when offered
	fn   func(stop func() bool)
}

var warmPool sync.Pool

// warmSink keeps the bytes read by warm jobs observable, so the loads are not
// optimized away; warmRead counts the bytes read (for tests).
var (
	warmSink atomic.Uint32
	warmRead atomic.Int64
)

// warmStep is how many bytes a warm job reads between checks for a stop: 4 KiB take
// about 0.3 µs from memory.
const warmStep = 4 << 10

func (j *warmJob) run(stop func() bool) {
	defer j.release()
	warmActive.Add(1)
	defer func() {
		if warmActive.Add(-1) == 0 {
			warmMu.Lock()
			warmIdle.Broadcast()
			warmMu.Unlock()
		}
	}()
	var s byte
	read := 0
	defer func() {
		warmSink.Add(uint32(s))
		warmRead.Add(int64(read))
	}()
	for _, d := range j.data[:j.n] {
		for off := 0; off < len(d); off += warmStep {
			if warmGen.Load() != j.gen || stop() {
				return
			}
			read += min(warmStep, len(d)-off)
			// One load per 64-byte line; the loads are independent, so the CPU keeps
			// many lines in flight, and the hardware prefetcher follows the stream.
			blk := d[off:min(len(d), off+warmStep)]
			for i := 0; i < len(blk); i += 64 {
				s += blk[i]
			}
		}
	}
}

func (j *warmJob) release() {
	clear(j.data[:])
	warmPool.Put(j)
}
