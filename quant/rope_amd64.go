//go:build amd64

package quant

// ropeRowsAsm is rotateRowsGo (for now the Go loop on every set).
func ropeRowsAsm(x []float32, n, d int, sp []float32, dims int, neox bool) {
	rotateRowsGo(x, n, d, sp, dims, neox)
}
