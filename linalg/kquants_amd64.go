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

// kDotRowsAsm is the signature of the assembly rows kernels that take no code sums:
// units of 256 values, each unitBytes bytes of a row.
type kDotRowsAsm func(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func iq4xsDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func iq4nlDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q3kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q2kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

// asmRows makes the rows kernel of an assembly kernel over units of 256 values
// (len(xd)/8 of them) of unitBytes bytes each.
func asmRows(dot kDotRowsAsm, unitBytes int) kRowsFunc {
	return func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
		units := len(xd) / 8
		if rowsWork(out, w, rowBytes, xq, units, unitBytes, 256) {
			_ = xd[units*8-1]
			dot(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], units)
		}
	}
}

// dotIQ4NLRowsAsm is the rows kernel of dotIQ4NLScalar for rows of whole groups of 8
// blocks (every real model's: rows are multiples of 256 values); other rows go
// through the scalar kernel.
func dotIQ4NLRowsAsm() kRowsFunc {
	groups := asmRows(iq4nlDotRows, 8*iq4NLBlockBytes)
	return func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
		if len(xd)%8 != 0 {
			scalarKRows[gguf.TypeIQ4_NL](out, w, rowBytes, xq, xd, xsum)
			return
		}
		groups(out, w, rowBytes, xq, xd, xsum)
	}
}

// asmKRows returns scalarKRows with the assembly kernels in place.
func asmKRows() map[gguf.TensorType]kRowsFunc {
	m := make(map[gguf.TensorType]kRowsFunc, len(scalarKRows))
	for t, f := range scalarKRows {
		m[t] = f
	}
	m[gguf.TypeQ5_K] = dotQ5KRowsAsm
	m[gguf.TypeIQ4_XS] = asmRows(iq4xsDotRows, iq4XSBlockBytes)
	m[gguf.TypeQ3_K] = asmRows(q3kDotRows, q3KBlockBytes)
	m[gguf.TypeQ2_K] = asmRows(q2kDotRows, q2KBlockBytes)
	m[gguf.TypeIQ4_NL] = dotIQ4NLRowsAsm()
	return m
}
