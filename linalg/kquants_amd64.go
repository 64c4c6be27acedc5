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
			scalarKRows[gguf.TypeIQ4_NL].rows(out, w, rowBytes, xq, xd, xsum)
			return
		}
		groups(out, w, rowBytes, xq, xd, xsum)
	}
}

// asmKRows returns scalarKRows with the assembly kernels in place.
func asmKRows() map[gguf.TensorType]kKernel {
	m := make(map[gguf.TensorType]kKernel, len(scalarKRows))
	for t, f := range scalarKRows {
		m[t] = f
	}
	m[gguf.TypeQ5_K] = kKernel{dotQ5KRowsAsm, true}
	m[gguf.TypeIQ4_XS] = kKernel{asmRows(iq4xsDotRows, iq4XSBlockBytes), false}
	m[gguf.TypeQ3_K] = kKernel{asmRows(q3kDotRows, q3KBlockBytes), false}
	m[gguf.TypeQ2_K] = kKernel{asmRows(q2kDotRows, q2KBlockBytes), false}
	m[gguf.TypeIQ4_NL] = kKernel{dotIQ4NLRowsAsm(), false}
	return m
}

// AVX-512 VNNI + GFNI rows kernels (iq4_amd64.s), which also take the activation
// blocks' code sums.

//go:noescape
func iq4xsDotRowsZ(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)

//go:noescape
func iq4nlDotRowsZ(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)

// kDotRowsSumsAsm is the signature of the assembly rows kernels that take code sums:
// units of 256 values, each unitBytes bytes of a row.
type kDotRowsSumsAsm func(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)

// asmRowsSums is asmRows for kernels that take the code sums.
func asmRowsSums(dot kDotRowsSumsAsm, unitBytes int) kRowsFunc {
	return func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
		units := len(xd) / 8
		if rowsWork(out, w, rowBytes, xq, units, unitBytes, 256) {
			_ = xd[units*8-1]
			_ = xsum[units*8-1]
			dot(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], &xsum[0], units)
		}
	}
}

// zKRows returns the AVX2 rows kernels m with the AVX-512 ones in place (a new map).
func zKRows(m map[gguf.TensorType]kKernel) map[gguf.TensorType]kKernel {
	z := make(map[gguf.TensorType]kKernel, len(m))
	for t, f := range m {
		z[t] = f
	}
	z[gguf.TypeIQ4_XS] = kKernel{asmRowsSums(iq4xsDotRowsZ, iq4XSBlockBytes), true}
	z[gguf.TypeQ3_K] = kKernel{asmRowsPrep(q3kDotRowsZ, q3KBlockBytes), false}
	z[gguf.TypeQ2_K] = kKernel{asmRowsPrep(q2kDotRowsZ, q2KBlockBytes), false}
	nl := asmRowsSums(iq4nlDotRowsZ, 8*iq4NLBlockBytes)
	z[gguf.TypeIQ4_NL] = kKernel{func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
		if len(xd)%8 != 0 {
			scalarKRows[gguf.TypeIQ4_NL].rows(out, w, rowBytes, xq, xd, xsum)
			return
		}
		nl(out, w, rowBytes, xq, xd, xsum)
	}, true}
	return z
}

//go:noescape
func kPrepZ(tab *float32, xq *int8, xd *float32, units int)

//go:noescape
func q2kDotRowsZ(out *float32, w *byte, rowBytes, rows int, tab *float32, units int)

//go:noescape
func q3kDotRowsZ(out *float32, w *byte, rowBytes, rows int, tab *float32, units int)

// kPrepFloats is the size of kPrepZ's table per super-block of activations, in float32
// (448 bytes: the codes laid out by quads, then three vectors of 16 values).
const kPrepFloats = 112

// asmRowsPrep makes the rows kernel of an AVX-512 kernel that reads the activations
// as kPrepZ lays them out, once per call into a scratch buffer.
func asmRowsPrep(dot func(out *float32, w *byte, rowBytes, rows int, tab *float32, units int), unitBytes int) kRowsFunc {
	return func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
		units := len(xd) / 8
		if !rowsWork(out, w, rowBytes, xq, units, unitBytes, 256) {
			return
		}
		_ = xd[units*8-1]
		bufp := f32Scratch.get(units * kPrepFloats)
		defer f32Scratch.put(bufp)
		tab := (*bufp)[:units*kPrepFloats]
		kPrepZ(&tab[0], &xq[0], &xd[0], units)
		dot(&out[0], &w[0], rowBytes, len(out), &tab[0], units)
	}
}
