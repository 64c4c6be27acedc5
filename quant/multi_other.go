//go:build !amd64

package quant

// detectSIMD reports no SIMD kernels: this build has only the portable scalar ones.
func detectSIMD() *kernelSet { return nil }

// zmmLevel names no ZMM kernels: this build has none.
func zmmLevel() string { return "" }

// rotateRowsSIMD is never called in this build (no SIMD set): rotateRowsGo.
func rotateRowsSIMD(x []float32, n, d int, sp []float32, dims int, neox bool) {
	rotateRowsGo(x, n, d, sp, dims, neox)
}
