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
