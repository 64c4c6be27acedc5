//go:build !amd64

package attn

// prefetch does nothing on this architecture.
func prefetch([]byte) {}
