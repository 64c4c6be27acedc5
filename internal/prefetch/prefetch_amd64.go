//go:build amd64

package prefetch

// read asks for every 64-byte line that holds one of the n ≥ 1 bytes at p
// (PREFETCHT0).
//
//go:noescape
func read(p *byte, n int)

// write asks for every 64-byte line that holds one of the n ≥ 1 bytes at p, for
// writing (PREFETCHW).
//
//go:noescape
func write(p *byte, n int)
