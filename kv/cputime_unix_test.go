//go:build unix

package kv

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time, for benchmarks that must be
// compared on a machine shared with other work (wall time then measures the load).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
