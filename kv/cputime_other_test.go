//go:build !unix

package kv

import "time"

// cpuTime is not measured on this platform; benchmarks then report 0 cpu-ms/op.
func cpuTime() time.Duration { return 0 }
