package linalg

// prefetch asks the CPU to bring the n bytes at p into cache (PREFETCHT0 per 64-byte
// line). It never faults and has no effect on results.
//
//go:noescape
func prefetch(p *byte, n int)
