//go:build amd64

package linalg

import "unsafe"

// The decode kernels of the block types in assembly (AVX2, FMA and F16C:
// q45_amd64.s, q4k_amd64.s, q6k_amd64.s). Each writes to out[r] the dot of the row at
// w+r·rowBytes, units units (blocks, or super-blocks of 8 blocks) long, with
// activations quantized per 32 values (codes xq, scales xd; for Q4_K also the blocks'
// code sums xsum), for r < rows (rows, units ≥ 1): the rows one after the other in
// memory order, prefetched 4 KiB ahead, without a call per row. Each computes its
// scalar twin's sum (dotQ4Scalar, dotQ5Scalar, dotQ4KScalar, dotQ6KScalar), the
// integer parts exactly, the float sums in another order.

//go:noescape
func q4DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q5DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q4kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)

//go:noescape
func q4Dot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q5Dot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q4kDot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, xsum *int32, units int)

//go:noescape
func q6kDot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, units int)

//go:noescape
func q6kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)

// rowsWork checks the bounds a rows kernel reads (units of unitBytes weight bytes and
// unitElems activations) and reports whether there is work: false when out is empty,
// or when there are no units (out is then cleared).
func rowsWork(out []float32, w []byte, rowBytes int, xq []int8, units, unitBytes, unitElems int) bool {
	if len(out) == 0 {
		return false
	}
	if units == 0 {
		clear(out)
		return false
	}
	_ = w[(len(out)-1)*rowBytes+units*unitBytes-1]
	_ = xq[units*unitElems-1]
	return true
}

// tokensWork is rowsWork for a many-token kernel writing rows values per token for n
// tokens, token t's at out[t·ldo:]: false when there are no rows or tokens, or when
// there are no units (the results are then cleared).
func tokensWork(out []float32, ldo, rows, n, units int) bool {
	if rows == 0 || n == 0 {
		return false
	}
	if units == 0 {
		for t := range n {
			clear(out[t*ldo : t*ldo+rows])
		}
		return false
	}
	return true
}

// dotQ4RowsAsm is dotQ4RowsScalar.
func dotQ4RowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	if rowsWork(out, w, rowBytes, xq, len(xd), q4BlockBytes, blockElems) {
		q4DotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], len(xd))
	}
}

// dotQ5RowsAsm is dotQ5RowsScalar.
func dotQ5RowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	if rowsWork(out, w, rowBytes, xq, len(xd), q5BlockBytes, blockElems) {
		q5DotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], len(xd))
	}
}

// dotQ4KRowsAsm is dotQ4KRowsScalar.
func dotQ4KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	nsb := len(xd) / 8
	if rowsWork(out, w, rowBytes, xq, nsb, q4KBlockBytes, 256) {
		_ = xsum[nsb*8-1]
		q4kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], &xsum[0], nsb)
	}
}

// rows2Work is rowsWork for a two-token rows kernel over rows stored one after the
// other (units of unitBytes weight bytes and unitElems activations per token), which
// also returns the distance from out0 to out1 in values.
func rows2Work(out0, out1 []float32, w []byte, rowBytes int, xq []int8, units, unitBytes, unitElems int) (ldo int, ok bool) {
	if len(out1) != len(out0) {
		panic("linalg: two-token rows kernel: the tokens' outputs differ in length")
	}
	if !rowsWork(out0, w, rowBytes, xq, units, unitBytes, 2*unitElems) {
		clear(out1)
		return 0, false
	}
	if rowBytes != units*unitBytes && len(out0) > 1 {
		panic("linalg: two-token rows kernel: rows are not stored one after the other")
	}
	return int(uintptr(unsafe.Pointer(&out1[0]))-uintptr(unsafe.Pointer(&out0[0]))) / 4, true
}

// dotQ4Rows2Asm is dotQ4Rows for two tokens (rows2 of dotQ4RowsScalar), for rows stored
// one after the other.
func dotQ4Rows2Asm(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	nb := len(xd) / 2
	if ldo, ok := rows2Work(out0, out1, w, rowBytes, xq, nb, q4BlockBytes, blockElems); ok {
		q4Dot2Rows(&out0[0], ldo, &w[0], len(out0), &xq[0], &xd[0], nb)
	}
}

// dotQ5Rows2Asm is dotQ5Rows for two tokens (rows2 of dotQ5RowsScalar), for rows stored
// one after the other.
func dotQ5Rows2Asm(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	nb := len(xd) / 2
	if ldo, ok := rows2Work(out0, out1, w, rowBytes, xq, nb, q5BlockBytes, blockElems); ok {
		q5Dot2Rows(&out0[0], ldo, &w[0], len(out0), &xq[0], &xd[0], nb)
	}
}

// dotQ4KRows2Asm is dotQ4KRows for two tokens (rows2 of dotQ4KRowsScalar), for rows stored
// one after the other.
func dotQ4KRows2Asm(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	nsb := len(xd) / 16
	if ldo, ok := rows2Work(out0, out1, w, rowBytes, xq, nsb, q4KBlockBytes, 256); ok {
		_ = xsum[2*nsb*8-1]
		q4kDot2Rows(&out0[0], ldo, &w[0], len(out0), &xq[0], &xd[0], &xsum[0], nsb)
	}
}

// dotQ6KRows2Asm is dotQ6KRows for two tokens (rows2 of dotQ6KRowsScalar), for rows stored
// one after the other.
func dotQ6KRows2Asm(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	nsb := len(xd) / 16
	if ldo, ok := rows2Work(out0, out1, w, rowBytes, xq, nsb, q6KBlockBytes, 256); ok {
		q6kDot2Rows(&out0[0], ldo, &w[0], len(out0), &xq[0], &xd[0], nsb)
	}
}

// dotQ6KRowsAsm is dotQ6KRowsScalar.
func dotQ6KRowsAsm(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	if nsb := len(xd) / 8; rowsWork(out, w, rowBytes, xq, nsb, q6KBlockBytes, 256) {
		q6kDotRows(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], nsb)
	}
}
