package gguf

// Q6_K super-block: 256 values in 210 bytes, as 16 sub-blocks of 16 values.
//
//	bytes 0–127    ql      low 4 bits of the codes
//	bytes 128–191  qh      high 2 bits of the codes
//	bytes 192–207  scales  16 × int8 sub-block scales; sc[k] scales values 16k..16k+15
//	bytes 208–209  d       f16 super-block scale, little-endian
//
// The block is two halves of 128 values (h = 0, 1), each using 64 bytes of ql
// (L = ql[64h:]) and 32 bytes of qh (H = qh[32h:]). For l = 0..31, value 128h + l + 32k
// (k = 0..3) has the code
//
//	k = 0:  L[l]    & 15 | (H[l]      & 3) << 4
//	k = 1:  L[l+32] & 15 | (H[l] >> 2 & 3) << 4
//	k = 2:  L[l]    >> 4 | (H[l] >> 4 & 3) << 4
//	k = 3:  L[l+32] >> 4 | (H[l] >> 6 & 3) << 4
//
// and value = d · sc[(128h + l + 32k) / 16] · (code − 32).

func dequantQ6_K(dst *[256]float32, b *[210]byte) {
	d := f16At(b[208:])
	for h := 0; h < 2; h++ {
		ql := b[64*h : 64*h+64]
		qh := b[128+32*h : 128+32*h+32]
		sc := b[192+8*h : 192+8*h+8]
		out := dst[128*h : 128*h+128]
		for l := 0; l < 32; l++ {
			is := l / 16
			q0 := int(ql[l]&15|(qh[l]&3)<<4) - 32
			q1 := int(ql[l+32]&15|(qh[l]>>2&3)<<4) - 32
			q2 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q3 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			out[l] = d * float32(int8(sc[is])) * float32(q0)
			out[l+32] = d * float32(int8(sc[is+2])) * float32(q1)
			out[l+64] = d * float32(int8(sc[is+4])) * float32(q2)
			out[l+96] = d * float32(int8(sc[is+6])) * float32(q3)
		}
	}
}
