package gguf

// Q4_K super-block: 256 values in 144 bytes, as 8 sub-blocks of 32 values.
//
//	bytes 0–1     d       f16 super-block scale of the sub-block scales, little-endian
//	bytes 2–3     dmin    f16 super-block scale of the sub-block minimums, little-endian
//	bytes 4–15    scales  12 bytes holding eight 6-bit scales sc[i] and eight 6-bit
//	                      minimums m[i] (i = 0..7, s = scales):
//	                        i < 4:  sc[i] = s[i] & 63          m[i] = s[i+4] & 63
//	                        i ≥ 4:  sc[i] = s[i+4] & 15 | (s[i-4] >> 6) << 4
//	                                m[i]  = s[i+4] >> 4 | (s[i]   >> 6) << 4
//	bytes 16–143  qs      128 bytes of 4-bit codes in four groups of 32 bytes; group g
//	                      (bytes 16+32g .. 16+32g+31) holds sub-block 2g in its low
//	                      nibbles and sub-block 2g+1 in its high nibbles: value
//	                      64g + l is qs[32g+l] & 15, value 64g + 32 + l is qs[32g+l] >> 4
//
// value in sub-block i = d · sc[i] · code − dmin · m[i]

// scaleMinK4 unpacks the 6-bit scale and minimum of sub-block i (0..7) of a Q4_K block.
func scaleMinK4(i int, s []byte) (sc, m uint8) {
	if i < 4 {
		return s[i] & 63, s[i+4] & 63
	}
	return s[i+4]&15 | (s[i-4]>>6)<<4, s[i+4]>>4 | (s[i]>>6)<<4
}

func dequantQ4_K(dst *[256]float32, b *[144]byte) {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	scales := b[4:16]
	for g := 0; g < 4; g++ {
		sc0, m0 := scaleMinK4(2*g, scales)
		sc1, m1 := scaleMinK4(2*g+1, scales)
		d0, o0 := d*float32(sc0), dmin*float32(m0)
		d1, o1 := d*float32(sc1), dmin*float32(m1)
		qs := b[16+32*g : 16+32*g+32]
		out := dst[64*g : 64*g+64]
		for l, q := range qs {
			out[l] = d0*float32(q&15) - o0
			out[32+l] = d1*float32(q>>4) - o1
		}
	}
}
