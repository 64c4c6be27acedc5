//go:build !amd64

package attn

// detectSIMD reports no SIMD kernels: on this architecture only the portable scalar
// ones exist.
func detectSIMD() *kernelSet { return nil }
