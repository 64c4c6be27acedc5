package gguf

// Q3_K super-block: 256 values in 110 bytes, as 16 sub-blocks of 16 values.
//
//	bytes 0–31     hmask   the third (high) bit of every code: bit j of hmask[l] belongs
//	                       to value 32j + l (j = 0..7, l = 0..31)
//	bytes 32–95    qs      the low 2 bits of the codes in two halves of 32 bytes: value
//	                       128h + 32k + l is (qs[32h+l] >> 2k) & 3 (h = 0, 1; k = 0..3)
//	bytes 96–107   scales  sixteen 6-bit signed scales, stored +32; with s = scales:
//	                         i < 8:   low 4 bits s[i] & 15,      i ≥ 8: s[i−8] >> 4
//	                         high 2 bits (s[8 + i mod 4] >> 2·(i / 4)) & 3
//	                       sc[i] = (low | high << 4) − 32, in −32..31
//	bytes 108–109  d       f16 super-block scale, little-endian
//
// code of value v = 32j + l: ((low 2 bits) − (0 if bit j of hmask[l] is set, else 4)),
// in −4..3; value v = d·sc[v/16] · code

// ScalesQ3K unpacks the sixteen signed 6-bit scales (bytes 96–107) of a Q3_K block.
func ScalesQ3K(s *[12]byte) (sc [16]int8) {
	for i := range 16 {
		lo := s[i%8] >> (4 * (i / 8)) & 15
		hi := s[8+i%4] >> (2 * (i / 4)) & 3
		sc[i] = int8(lo|hi<<4) - 32
	}
	return sc
}

func dequantQ3_K(dst *[256]float32, b *[110]byte) {
	d := f16At(b[108:])
	hmask, sc := b[0:32], ScalesQ3K((*[12]byte)(b[96:108]))
	for h := 0; h < 2; h++ {
		qs := b[32+32*h : 64+32*h]
		for k := 0; k < 4; k++ {
			j := 4*h + k // the hmask bit and the 32-value group
			for half := 0; half < 2; half++ {
				dl := d * float32(sc[2*j+half])
				for l := 16 * half; l < 16*half+16; l++ {
					c := int8(qs[l]>>(2*k)&3) - int8(4*(1-(hmask[l]>>j&1)))
					dst[32*j+l] = dl * float32(c)
				}
			}
		}
	}
}
