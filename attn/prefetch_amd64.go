//go:build amd64

package attn

// prefetchBytes asks for the cache lines of the n ≥ 1 bytes at p (PREFETCHT0).
//
//go:noescape
func prefetchBytes(p *byte, n int)

// prefetch asks for the first bytes of b (at most prefetchSpan), where a kernel will
// read next: a cache block's heads lie back to back, and the kernels prefetch past
// their own rows, but the first rows of the next span's first head lie elsewhere.
func prefetch(b []byte) {
	if n := min(len(b), prefetchSpan); n > 0 {
		prefetchBytes(&b[0], n)
	}
}
