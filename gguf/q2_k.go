package gguf

// Q2_K super-block: 256 values in 84 bytes, as 16 sub-blocks of 16 values.
//
//	bytes 0–15     scales  one byte per sub-block i: scale sc[i] = low 4 bits,
//	                       minimum m[i] = high 4 bits
//	bytes 16–79    qs      2-bit codes in two halves of 32 bytes: value 128h + 32k + l is
//	                       (qs[32h+l] >> 2k) & 3 (h = 0, 1; k = 0..3; l = 0..31)
//	bytes 80–81    d       f16 super-block scale of the scales, little-endian
//	bytes 82–83    dmin    f16 super-block scale of the minimums, little-endian
//
// value v in sub-block i = v/16: d·sc[i] · code − dmin·m[i]

func dequantQ2_K(dst *[256]float32, b *[84]byte) {
	d, dmin := f16At(b[80:]), f16At(b[82:])
	for h := 0; h < 2; h++ {
		qs := b[16+32*h : 48+32*h]
		for k := 0; k < 4; k++ {
			for half := 0; half < 2; half++ {
				i := 8*h + 2*k + half // sub-block
				sc := b[i]
				dl, ml := d*float32(sc&15), dmin*float32(sc>>4)
				for l := 16 * half; l < 16*half+16; l++ {
					dst[128*h+32*k+l] = float32(dl*float32(qs[l]>>(2*k)&3)) - ml
				}
			}
		}
	}
}
