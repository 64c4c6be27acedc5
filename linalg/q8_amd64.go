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

// q8Dot4Tok writes to out[t] the dot of the Q8_0 row of nb blocks at w with token t of
// the 4 tokens interleaved in xi (128·nb codes) and xs (8·nb scales) by interleave4.
//
//go:noescape
func q8Dot4Tok(out *[4]float32, w *byte, xi *int8, xs *float32, nb int)

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

// q8Dot4TokN computes the q8Dot4Tok sums of the row at w for groups consecutive 4-token
// groups of xi and xs, storing token 4g+t's result at out[(4g+t)·rows].
//
//go:noescape
func q8Dot4TokN(out *float32, rows int, w *byte, xi *int8, xs *float32, nb, groups int)

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

// dotQ8x4F16C is dotQ8x4Scalar.
func dotQ8x4F16C(out *[4]float32, w []byte, xi []int8, xs []float32) {
	nb := len(xs) / 8
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_ = w[nb*q8BlockBytes-1]
	_ = xi[nb*4*blockElems-1]
	q8Dot4Tok(out, &w[0], &xi[0], &xs[0], nb)
}

// dotQ8x4NF16C is dotQ8x4NScalar.
func dotQ8x4NF16C(out []float32, rows int, w []byte, xi []int8, xs []float32, groups int) {
	if groups == 0 {
		return
	}
	nb := len(xs) / (8 * groups)
	if nb == 0 {
		for i := 0; i < 4*groups; i++ {
			out[i*rows] = 0
		}
		return
	}
	_ = out[(4*groups-1)*rows]
	_ = w[nb*q8BlockBytes-1]
	_ = xi[groups*nb*4*blockElems-1]
	q8Dot4TokN(&out[0], rows, &w[0], &xi[0], &xs[0], nb, groups)
}
