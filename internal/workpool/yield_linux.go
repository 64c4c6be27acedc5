package workpool

import "syscall"

// yield gives the thread's CPU to any other runnable thread of any process
// (sched_yield): a polling goroutine then costs nothing when the machine is busy.
//
// It is a raw system call, as the Go runtime's own spin loops make it: through
// syscall.Syscall the runtime counts the goroutine as blocked in the kernel, may hand
// its P to another thread meanwhile, and the goroutines then move between threads that
// the kernel may place on one CPU. Measured on the 2-vCPU VM this was tuned on, two
// goroutines polling for 2 s: with syscall.Syscall one lost 558 ms to gaps over 16 µs,
// against 66–79 ms each with the raw call (and 51–78 ms without yielding at all); a
// 576×576 Q8_0 product on 2 threads took 21–41 µs (median 27) against 26–40 (median 32).
func yield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
