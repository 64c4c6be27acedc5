//go:build amd64

package linalg

// q5DotRows writes to out[r] the dot of the Q5_0 row of nb blocks at w+r·rowBytes with
// activations quantized per 32 values (codes xq, scales xd), for r < rows (rows, nb ≥
// 1): dotQ5Scalar of each row, in assembly (q5_amd64.s; AVX2, FMA and F16C).
//
//go:noescape
func q5DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int)

// dotQ5Asm is dotQ5Scalar.
func dotQ5Asm(w []byte, xq []int8, xd []float32) float32 {
	var out [1]float32
	dotQ5RowsAsm(out[:], w, 0, xq, xd)
	return out[0]
}

// dotQ5RowsAsm is dotQ5RowsScalar.
func dotQ5RowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	nb := len(xd)
	if len(out) == 0 {
		return
	}
	if nb == 0 {
		clear(out)
		return
	}
	_ = w[(len(out)-1)*rowBytes+nb*q5BlockBytes-1]
	_ = xq[nb*blockElems-1]
	q5DotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nb)
}
