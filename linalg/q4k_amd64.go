//go:build amd64

package linalg

// q4kDot returns the dot of the Q4_K row of nsb super-blocks at w with activations
// quantized per 32 values (codes xq, scales xd, code sums xsum): dotQ4KScalar, in
// assembly (q4k_amd64.s; AVX2, FMA and F16C).
//
//go:noescape
func q4kDot(w *byte, xq *int8, xd *float32, xsum *int32, nsb int) float32

// dotQ4KAsm is dotQ4KScalar.
func dotQ4KAsm(w []byte, xq []int8, xd []float32, xsum []int32) float32 {
	nsb := len(xd) / 8
	if nsb == 0 {
		return 0
	}
	_ = w[nsb*q4KBlockBytes-1]
	_ = xq[nsb*256-1]
	_ = xsum[nsb*8-1]
	return q4kDot(&w[0], &xq[0], &xd[0], &xsum[0], nsb)
}

// q4kDotRows writes to out[r] the q4kDot of the Q4_K row of nsb super-blocks at
// w+r·rowBytes, for r < rows (rows, nsb ≥ 1), bit for bit.
//
//go:noescape
func q4kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nsb int)

// dotQ4KRowsAsm is dotQ4KRowsScalar.
func dotQ4KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	nsb := len(xd) / 8
	if len(out) == 0 {
		return
	}
	if nsb == 0 {
		clear(out)
		return
	}
	_ = w[(len(out)-1)*rowBytes+nsb*q4KBlockBytes-1]
	_ = xq[nsb*256-1]
	_ = xsum[nsb*8-1]
	q4kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], &xsum[0], nsb)
}
