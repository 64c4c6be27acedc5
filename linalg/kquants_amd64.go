//go:build amd64

package linalg

import "kvq/gguf"

// Assembly rows kernels of the types of kquants.go (AVX2, FMA, F16C), each computing
// its scalar twin's sum (the integer parts exactly, the float sums in another order).

//go:noescape
func q5kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)

// dotQ5KRowsAsm is the rows kernel of dotQ5KScalar.
func dotQ5KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	nsb := len(xd) / 8
	if rowsWork(out, w, rowBytes, xq, nsb, q5KBlockBytes, 256) {
		_ = xsum[nsb*8-1]
		q5kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], &xsum[0], nsb)
	}
}

// asmKRows returns scalarKRows with the assembly kernels in place.
func asmKRows() map[gguf.TensorType]kRowsFunc {
	m := make(map[gguf.TensorType]kRowsFunc, len(scalarKRows))
	for t, f := range scalarKRows {
		m[t] = f
	}
	m[gguf.TypeQ5_K] = dotQ5KRowsAsm
	return m
}
