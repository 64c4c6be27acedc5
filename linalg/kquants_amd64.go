//go:build amd64

package linalg

import "kvq/gguf"

// Assembly rows kernels of the types of kquants.go (AVX2, FMA, F16C: q5k_amd64.s,
// q3k_amd64.s for Q3_K and Q2_K, iq4_amd64.s), each computing
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

//go:noescape
func iq4xsDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func iq4nlDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

// dotIQ4XSRowsAsm is the rows kernel of dotIQ4XSScalar.
func dotIQ4XSRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
	nsb := len(xd) / 8
	if rowsWork(out, w, rowBytes, xq, nsb, iq4XSBlockBytes, 256) {
		_ = xd[nsb*8-1]
		iq4xsDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nsb)
	}
}

// dotIQ4NLRowsAsm is the rows kernel of dotIQ4NLScalar for rows of whole groups of 8
// blocks (every real model's: rows are multiples of 256 values); other rows go
// through the scalar kernel.
func dotIQ4NLRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	if len(xd)%8 != 0 {
		scalarKRows[gguf.TypeIQ4_NL](out, w, rowBytes, xq, xd, xsum)
		return
	}
	units := len(xd) / 8
	if rowsWork(out, w, rowBytes, xq, units, 8*iq4NLBlockBytes, 256) {
		_ = xd[units*8-1]
		iq4nlDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], units)
	}
}

//go:noescape
func q3kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

// dotQ3KRowsAsm is the rows kernel of dotQ3KScalar.
func dotQ3KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
	nsb := len(xd) / 8
	if rowsWork(out, w, rowBytes, xq, nsb, q3KBlockBytes, 256) {
		_ = xd[nsb*8-1]
		q3kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nsb)
	}
}

//go:noescape
func q2kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

// dotQ2KRowsAsm is the rows kernel of dotQ2KScalar.
func dotQ2KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
	nsb := len(xd) / 8
	if rowsWork(out, w, rowBytes, xq, nsb, q2KBlockBytes, 256) {
		_ = xd[nsb*8-1]
		q2kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nsb)
	}
}

// asmKRows returns scalarKRows with the assembly kernels in place.
func asmKRows() map[gguf.TensorType]kRowsFunc {
	m := make(map[gguf.TensorType]kRowsFunc, len(scalarKRows))
	for t, f := range scalarKRows {
		m[t] = f
	}
	m[gguf.TypeQ5_K] = dotQ5KRowsAsm
	m[gguf.TypeIQ4_XS] = dotIQ4XSRowsAsm
	m[gguf.TypeQ3_K] = dotQ3KRowsAsm
	m[gguf.TypeQ2_K] = dotQ2KRowsAsm
	m[gguf.TypeIQ4_NL] = dotIQ4NLRowsAsm
	return m
}
