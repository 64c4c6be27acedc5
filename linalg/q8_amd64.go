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

// q8Dot4TokN computes the dots of the Q8_0 row of nb blocks at w with groups consecutive
// 4-token groups of xi and xs (interleaved by interleave4), storing token 4g+t's result
// at out[(4g+t)·rows].
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

// q8Tile computes the dotQ8Tile sums of the 4-row tile of nb blocks at w16 (row stride
// 32·nb codes) with block scales dw (and minimums dm, or nil), for groups 8-token groups
// at xg and xdg (and xsg).
//
//go:noescape
func q8Tile(out *float32, rows int, w16 *int16, dw, dm *float32, xg *int16, xdg, xsg *float32, nb, groups int)

// q8Widen writes the codes of rows Q8_0 rows of nb blocks (row i at w+i·rowBytes) to dst
// as int16, row after row, and their scales to dw[4b+i], widened through the table f16
// (f16Table).
//
//go:noescape
func q8Widen(dst *int16, dw *float32, w *byte, rowBytes, rows, nb int, f16 *float32)

// q4Widen writes the 32·nb codes of the Q4_0 row at w to dst as int16, less 8.
//
//go:noescape
func q4Widen(dst *int16, w *byte, nb int)

// widenQ4AVX2 is widenQ4Scalar: codes by q4Widen, scales through the table.
func widenQ4AVX2(w16 []int16, dw []float32, w []byte, rowBytes, nb int) {
	widenBlocks(w16, dw, w, rowBytes, nb, q4BlockBytes, q4Widen)
}

// q5Widen writes the 32·nb codes of the Q5_0 row at w to dst as int16, less 16.
//
//go:noescape
func q5Widen(dst *int16, w *byte, nb int)

// widenQ5AVX2 is widenQ5Scalar: codes by q5Widen, scales through the table.
func widenQ5AVX2(w16 []int16, dw []float32, w []byte, rowBytes, nb int) {
	widenBlocks(w16, dw, w, rowBytes, nb, q5BlockBytes, q5Widen)
}

// widenBlocks widens rows of nb blocks of blockBytes bytes, each a binary16 scale
// then its codes, for the tile kernel: the codes of each row by codes, the scales
// through the table.
func widenBlocks(w16 []int16, dw []float32, w []byte, rowBytes, nb, blockBytes int, codes func(dst *int16, w *byte, nb int)) {
	if nb == 0 {
		return
	}
	cols := nb * blockElems
	rows := len(w16) / cols
	_ = dw[4*(nb-1)+rows-1]
	for i := 0; i < rows; i++ {
		row := w[i*rowBytes : i*rowBytes+nb*blockBytes]
		codes(&w16[i*cols], &row[0], nb)
		for b := 0; b < nb; b++ {
			dw[4*b+i] = f16Table[uint16(row[b*blockBytes])|uint16(row[b*blockBytes+1])<<8]
		}
	}
}

// q4KWiden writes the 256 codes of the Q4_K super-block codes qs times their sub-block
// scales sc to dst as int16.
//
//go:noescape
func q4KWiden(dst *int16, qs *byte, sc *[8]int16)

// widenQ4KAVX2 is widenQ4KScalar: codes times scales by q4KWiden, the rest in Go.
func widenQ4KAVX2(w16 []int16, dw, dm []float32, w []byte, rowBytes, nb int) {
	cols := nb * blockElems
	rows := len(w16) / cols
	nsb := nb / 8
	if nsb == 0 {
		return
	}
	_, _ = dw[4*(nb-1)+rows-1], dm[4*(nb-1)+rows-1]
	for i := 0; i < rows; i++ {
		row := w[i*rowBytes : i*rowBytes+nsb*q4KBlockBytes]
		dst := w16[i*cols : i*cols+nsb*256]
		for sb := 0; sb < nsb; sb++ {
			blk := (*[q4KBlockBytes]byte)(row[sb*q4KBlockBytes:])
			d := f16Table[uint16(blk[0])|uint16(blk[1])<<8]
			dmin := f16Table[uint16(blk[2])|uint16(blk[3])<<8]
			sc, m := q4KScales((*[12]byte)(blk[4:16]))
			var sc16 [8]int16
			for j := range sc16 {
				sc16[j] = int16(sc[j])
				dw[4*(8*sb+j)+i], dm[4*(8*sb+j)+i] = d, dmin*float32(m[j])
			}
			q4KWiden(&dst[sb*256], &blk[16], &sc16)
		}
	}
}

// q6KWiden writes the 256 values of the Q6_K super-block at blk, without its scale d,
// to dst as int16: sc·(code − 32), value by value (widenQ6KScalar's codes).
//
//go:noescape
func q6KWiden(dst *int16, blk *byte)

// widenQ6KAsm is widenQ6KScalar: codes times scales by q6KWiden, the scales d in Go.
func widenQ6KAsm(w16 []int16, dw []float32, w []byte, rowBytes, nb int) {
	cols := nb * blockElems
	rows := len(w16) / cols
	nsb := nb / 8
	if nsb == 0 || rows == 0 {
		return
	}
	_ = dw[4*(nb-1)+rows-1]
	for i := 0; i < rows; i++ {
		row := w[i*rowBytes : i*rowBytes+nsb*q6KBlockBytes]
		dst := w16[i*cols : i*cols+nsb*256]
		for sb := 0; sb < nsb; sb++ {
			blk := (*[q6KBlockBytes]byte)(row[sb*q6KBlockBytes:])
			d := f16Table[uint16(blk[208])|uint16(blk[209])<<8]
			for b := 8 * sb; b < 8*sb+8; b++ {
				dw[4*b+i] = d
			}
			q6KWiden(&dst[sb*256], &blk[0])
		}
	}
}

// q8Pack8 writes the codes of 8 whole tokens (nb blocks each, token t at xq+t·cols) to xg
// as pack8 lays them out.
//
//go:noescape
func q8Pack8(xg *int16, xq *int8, cols, nb int)

// pack8AVX2 is pack8Scalar: the codes of 8 whole tokens by q8Pack8, fewer in Go.
func pack8AVX2(xg []int16, xdg []float32, xq []int8, xd []float32, k int) {
	nb := len(xdg) / 8
	if k < 8 || nb == 0 {
		pack8Scalar(xg, xdg, xq, xd, k)
		return
	}
	cols := nb * blockElems
	_ = xg[8*cols-1]
	_ = xq[8*cols-1]
	q8Pack8(&xg[0], &xq[0], cols, nb)
	xdg, xd = xdg[:8*nb], xd[:8*nb]
	for t := 0; t < 8; t++ {
		for b := 0; b < nb; b++ {
			xdg[8*b+t] = xd[t*nb+b]
		}
	}
}

// dotQ8TileAVX2 is dotQ8TileScalar (AVX2 and FMA only: the scales are already float32).
func dotQ8TileAVX2(out []float32, rows int, w16 []int16, dw, dm []float32, xg []int16, xdg, xsg []float32, groups int) {
	nb := len(dw) / 4
	if groups == 0 {
		return
	}
	_ = out[(8*groups-1)*rows+3]
	if nb == 0 {
		for i := 0; i < 8*groups; i++ {
			clear(out[i*rows : i*rows+4])
		}
		return
	}
	_ = w16[4*nb*blockElems-1]
	_ = xg[groups*8*nb*blockElems-1]
	_ = xdg[groups*8*nb-1]
	var pm, ps *float32
	if dm != nil {
		_ = dm[4*nb-1]
		_ = xsg[groups*8*nb-1]
		pm, ps = &dm[0], &xsg[0]
	}
	q8Tile(&out[0], rows, &w16[0], &dw[0], pm, &xg[0], &xdg[0], ps, nb, groups)
}

// widenQ8AVX2 is widenQ8Scalar, all rows in one q8Widen call.
func widenQ8AVX2(w16 []int16, dw []float32, w []byte, rowBytes, nb int) {
	cols := nb * blockElems
	if nb == 0 || len(w16) < cols {
		return
	}
	rows := len(w16) / cols
	_ = dw[4*(nb-1)+rows-1]
	_ = w[(rows-1)*rowBytes+nb*q8BlockBytes-1]
	q8Widen(&w16[0], &dw[0], &w[0], rowBytes, rows, nb, &f16Table[0])
}

// setTileKernels puts the tile kernels into k. They need only AVX2 and FMA, which
// the assembly set requires.
func setTileKernels(k *kernelSet) {
	k.widenQ8, k.widenQ4, k.widenQ4K, k.dotQ8Tile = widenQ8AVX2, widenQ4AVX2, widenQ4KAVX2, dotQ8TileAVX2
	k.widenQ6K, k.widenQ5 = widenQ6KAsm, widenQ5AVX2
	k.pack8 = pack8AVX2
}
