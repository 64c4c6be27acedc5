//go:build amd64

package linalg

// q6kDotRows writes to out[r] the dot of the Q6_K row of nsb super-blocks at
// w+r·rowBytes with activations quantized per 32 values (codes xq, scales xd), for
// r < rows (rows, nsb ≥ 1): dotQ6KScalar of each row, in assembly (q6k_amd64.s; AVX2,
// FMA and F16C).
//
//go:noescape
func q6kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, nsb int)

// dotQ6KAsm is dotQ6KScalar.
func dotQ6KAsm(w []byte, xq []int8, xd []float32) float32 {
	var out [1]float32
	dotQ6KRowsAsm(out[:], w, 0, xq, xd)
	return out[0]
}

// dotQ6KRowsAsm is dotQ6KRowsScalar.
func dotQ6KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	nsb := len(xd) / 8
	if len(out) == 0 {
		return
	}
	if nsb == 0 {
		clear(out)
		return
	}
	_ = w[(len(out)-1)*rowBytes+nsb*q6KBlockBytes-1]
	_ = xq[nsb*256-1]
	q6kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nsb)
}
