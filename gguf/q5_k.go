package gguf

// Q5_K super-block: 256 values in 176 bytes, as 8 sub-blocks of 32 values.
//
//	bytes 0–1      d       f16 super-block scale of the sub-block scales, little-endian
//	bytes 2–3      dmin    f16 super-block scale of the sub-block minimums, little-endian
//	bytes 4–15     scales  eight 6-bit scales sc[i] and minimums m[i], packed as Q4_K's
//	                       (see q4_k.go)
//	bytes 16–47    qh      the fifth (high) bit of every code: bit j of qh[l] belongs to
//	                       value 32j + l (j = 0..7, l = 0..31)
//	bytes 48–175   qs      the low 4 bits, as Q4_K's qs: value 64g + l in the low nibble
//	                       of qs[32g+l], value 64g + 32 + l in its high nibble (g = 0..3)
//
// code of value v = 32j + l: (low 4 bits) | ((qh[l] >> j) & 1) << 4, in 0..31
// value in sub-block j = d·sc[j] · code − dmin·m[j]

func dequantQ5_K(dst *[256]float32, b *[176]byte) {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	scales, qh := b[4:16], b[16:48]
	for g := 0; g < 4; g++ {
		sc0, m0 := scaleMinK4(2*g, scales)
		sc1, m1 := scaleMinK4(2*g+1, scales)
		d0, o0 := d*float32(sc0), dmin*float32(m0)
		d1, o1 := d*float32(sc1), dmin*float32(m1)
		qs := b[48+32*g : 48+32*g+32]
		out := dst[64*g : 64*g+64]
		for l, q := range qs {
			c0 := q&15 | (qh[l]>>(2*g)&1)<<4
			c1 := q>>4 | (qh[l]>>(2*g+1)&1)<<4
			out[l] = float32(d0*float32(c0)) - o0
			out[32+l] = float32(d1*float32(c1)) - o1
		}
	}
}
