//go:build !amd64

package linalg

// prefetch is a no-op on this architecture.
func prefetch(p *byte, n int) {}
