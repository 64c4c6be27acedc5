//go:build amd64

package linalg

// Q8_0 kernels in assembly (q8_amd64.s), used when the CPU has AVX2, FMA and F16C: binary16
// weight scales are widened by VCVTPH2PS, which simd/archsimd does not expose. Each
// computes what its scalar twin in kernels.go computes: integer block dots exactly, float
// sums in a different order.

// q8Dot1 returns the dot of the Q8_0 row of nb blocks at w with xq and xd.
//
//go:noescape
func q8Dot1(w *byte, xq *int8, xd *float32, nb int) float32

// q8DotRows writes to out[r] the dot of the Q8_0 row of nb blocks at w+r·rowBytes with xq
// and xd, for r < rows.
//
//go:noescape
func q8DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int)

// dotQ8F16C is dotQ8Scalar.
func dotQ8F16C(w []byte, xq []int8, xd []float32) float32 {
	nb := len(xd)
	if nb == 0 {
		return 0
	}
	_ = w[nb*q8BlockBytes-1]
	_ = xq[nb*blockElems-1]
	return q8Dot1(&w[0], &xq[0], &xd[0], nb)
}

// dotQ8RowsF16C is dotQ8RowsScalar.
func dotQ8RowsF16C(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	nb := len(xd)
	if len(out) == 0 {
		return
	}
	if nb == 0 {
		clear(out)
		return
	}
	_ = w[(len(out)-1)*rowBytes+nb*q8BlockBytes-1]
	_ = xq[nb*blockElems-1]
	q8DotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nb)
}
