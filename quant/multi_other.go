//go:build !amd64

package quant

// detectSIMD reports no SIMD kernels: this build has only the portable scalar ones.
func detectSIMD() *kernelSet { return nil }

// zmmLevel names no ZMM kernels: this build has none.
func zmmLevel() string { return "" }
