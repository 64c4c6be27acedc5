//go:build !linux

package workpool

import "runtime"

// yield lets other goroutines run between polls.
func yield() { runtime.Gosched() }
