//go:build amd64

package prefetch

// write asks for every 64-byte line that holds one of the n ≥ 1 bytes at p, for
// writing.
//
//go:noescape
func write(p *byte, n int)
