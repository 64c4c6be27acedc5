//go:build amd64

package quant

import "kvq/internal/cpufeat"

// ropeRowsAVX2 rotates n rows of x (row i at x + i·d floats) by the spread angles at
// sp (2·dims floats per row: cos, then signed sin; RoPE.spread), over the first dims
// values of each row: row = row∘cos + partner(row)∘sin, partner swapping the values
// of each pair — adjacent ones (VPERMILPS) or, with neox, the two halves. dims is a
// positive multiple of 8 (of 16 with neox); n ≥ 1. The products are rounded and then
// added, as in rotateRowsGo, so the rows are its bit for bit.
//
//go:noescape
func ropeRowsAVX2(x *float32, n, d int, sp *float32, dims int, neox bool)

// ropeRowsAsm is rotateRowsGo through ropeRowsAVX2 where the rotated width fits it
// (a multiple of 8 values, of 16 with NeoX pairs), else the Go loop.
func ropeRowsAsm(x []float32, n, d int, sp []float32, dims int, neox bool) {
	if n <= 0 {
		return
	}
	if !cpufeat.AVX2FMA || dims%8 != 0 || (neox && dims%16 != 0) {
		rotateRowsGo(x, n, d, sp, dims, neox)
		return
	}
	_ = x[(n-1)*d+dims-1]
	_ = sp[n*2*dims-1]
	ropeRowsAVX2(&x[0], n, d, &sp[0], dims, neox)
}

// dotRoPERows1 is the one-query pre-RoPE score kernel (contract in rope_amd64.s).
//
//go:noescape
func dotRoPERows1(out, q *float32, codes *byte, lo, s, sp *float32, n, d, bits int)

// ropeDotAsm is the one-query path of DotChannelRoPE for a block's rows b0..b1 (the
// queries already rotated back to the block's first position, qr) where
// dotRoPERows1 takes the shape: interleaved pairs rotating all d values, d a multiple
// of 8, F16C and AVX2. The block's scales and zeros are widened into s and lo. It
// reports false, having done nothing, for the rest.
func ropeDotAsm(c Channel, r *RoPE, out, qr []float32, block []byte, t, d, b0, b1 int, lo, s []float32) bool {
	if !haveF16C || !cpufeat.AVX2FMA || r.neox || r.Dims() != d || d%8 != 0 || b0 >= b1 {
		return false
	}
	_, _, _, _ = s[d-1], lo[d-1], qr[d-1], out[b1-b0-1]
	rb := packedBytes(d, c.Bits)
	codes := block[4*d+b0*rb : 4*d+b1*rb]
	sp := r.spread[b0*2*d : b1*2*d]
	widenChanParams(&s[0], &lo[0], &block[0], d)
	dotRoPERows1(&out[0], &qr[0], &codes[0], &lo[0], &s[0], &sp[0], b1-b0, d, c.Bits)
	return true
}
