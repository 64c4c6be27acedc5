//go:build amd64

package quant

import (
	"unsafe"

	"kvq/internal/cpufeat"
)

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
// (a multiple of 8 values, of 16 with NeoX pairs), else the Go loop; no rows or no
// rotated values leave x as it is.
func ropeRowsAsm(x []float32, n, d int, sp []float32, dims int, neox bool) {
	if n <= 0 || dims <= 0 {
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

// rotateRowsSIMD is the SIMD set's ropeRows, called by name (RotateHeads: a stack
// buffer passed to a function value would be moved to the heap).
func rotateRowsSIMD(x []float32, n, d int, sp []float32, dims int, neox bool) {
	ropeRowsAsm(x, n, d, sp, dims, neox)
}

// dotRoPEFold1 is the one-query pre-RoPE score kernel, ropeFoldGo in AVX2 (contract
// in rope_amd64.s).
//
//go:noescape
func dotRoPEFold1(out *float32, codes *byte, w, sp *float32, n, d, bits int, past bool)

// dotRoPEInt1 is the one-query integer pair kernel, ropeIntGo in AVX2 (contract in
// rope_amd64.s).
//
//go:noescape
func dotRoPEInt1(out *float32, codes *byte, w *float32, tab *int16, n, d, bits int)

// ropeIntMaxAVX2 and ropeIntQuantAVX2 are ropeIntPrep's two passes (contracts in
// rope_amd64.s).
//
//go:noescape
func ropeIntMaxAVX2(m, q, s *float32, groups int)

//go:noescape
func ropeIntQuantAVX2(dst *byte, q, lo, s, inv *float32, groups int, zmax *float32)

// ropeIntPrepAsm is ropeIntPrep in AVX2, bit for bit, for d up to 256.
func ropeIntPrepAsm(w []float32, q, lo, s []float32, bits int) bool {
	d := len(q)
	groups := d / 32
	if groups > 8 {
		return ropeIntPrep(w, q, lo, s, bits)
	}
	var m [16]float32
	var inv, zm [8]float32
	_, _, _, _ = w[groups*ropeIntGroup-1], lo[d-1], s[d-1], q[d-1]
	ropeIntMaxAVX2(&m[0], &q[0], &s[0], groups)
	for k := range groups {
		if !ropeIntStep(m[2*k], m[2*k+1]) {
			return false
		}
		inv[k] = 127 / m[2*k]
	}
	ropeIntQuantAVX2((*byte)(unsafe.Pointer(&w[0])), &q[0], &lo[0], &s[0], &inv[0], groups, &zm[0])
	for k := range groups {
		if zm[k] > ropeZMax(bits) {
			return false
		}
		ropeIntScale(w[ropeIntGroup*k+32:][:8], m[2*k])
	}
	return true
}

// ropeIntTakes reports whether ropeDotAsm scores blocks of c with the integer pair
// kernel (when their zero terms fit): F16C and AVX2, interleaved pairs rotating all
// d values, d a multiple of 32 up to 256, 4-, 3- or 2-bit codes.
func ropeIntTakes(c Channel, r *RoPE, d int) bool {
	return haveF16C && cpufeat.AVX2FMA && r.pairs != nil && r.Dims() == d && d%32 == 0 && d <= 256 &&
		(c.Bits == 4 || c.Bits == 3 || c.Bits == 2)
}

// ropeDotAsm is ropeDotGo through the ZMM pair kernel where it takes the block
// (ropeDotZ), else with the block's scales and zeros widened with F16C and the rows
// scored by the AVX2 pair kernel or dotRoPEFold1, for d a multiple of 8 with every
// value rotated (either pair layout); it reports false, having done nothing, for the
// rest.
func ropeDotAsm(c Channel, r *RoPE, out, q, sp []float32, block []byte, t, d, b0, b1 int, qr, lo, s, w []float32) bool {
	if !haveF16C || !cpufeat.AVX2FMA || r.Dims() != d || d%8 != 0 || b0 >= b1 || len(w) < 4*d {
		return false
	}
	if ropeDotZ(c, r, out, q, sp, block, d, b0, b1, w) {
		return true
	}
	copy(qr[:d], q[:d])
	ropeRowsAsm(qr, 1, d, sp, d, r.neox)
	_, _, _, _ = s[d-1], lo[d-1], qr[d-1], out[b1-b0-1]
	rb := packedBytes(d, c.Bits)
	codes := block[4*d+b0*rb : 4*d+b1*rb]
	rows := r.spread[b0*2*d : b1*2*d]
	widenChanParams(&s[0], &lo[0], &block[0], d)
	// The integer pair kernel where it takes the block (ropeIntTakes, and zero
	// terms that fit), else the float one.
	if ropeIntTakes(c, r, d) && len(w) >= d/32*ropeIntGroup && ropeIntPrepAsm(w, qr[:d], lo[:d], s[:d], c.Bits) {
		n, tab := b1-b0, r.pairs[b0*d:]
		if c.Bits != 3 || cap(codes)-len(codes) >= 4 {
			dotRoPEInt1(&out[0], &codes[0], &w[0], &tab[0], n, d, c.Bits)
			return true
		}
		// 3-bit rows are read 16 bytes per 12: the last row from a padded copy
		// where fewer than 4 bytes follow it.
		if n > 1 {
			dotRoPEInt1(&out[0], &codes[0], &w[0], &tab[0], n-1, d, 3)
		}
		var pad [3*256/8 + 4]byte
		copy(pad[:], codes[(n-1)*rb:])
		dotRoPEInt1(&out[n-1], &pad[0], &w[0], &tab[(n-1)*d], 1, d, 3)
		return true
	}
	ropeFoldPrep(w, qr[:d], lo[:d], s[:d], r.neox)
	// 3-bit rows load four bytes per eight codes where a byte past the last is
	// readable (the slice's capacity: the next block or the arena's tail).
	dotRoPEFold1(&out[0], &codes[0], &w[0], &rows[0], b1-b0, d, c.Bits, cap(codes) > len(codes))
	return true
}
