package gguf

// Q4_0 block: 32 values in 18 bytes.
//
//	bytes 0–1    d   f16 scale, little-endian
//	bytes 2–17   qs  16 bytes of 4-bit codes: the low nibble of qs[j] is value j,
//	                 the high nibble is value j+16 (j = 0..15)
//
// value = d · (code − 8)

func dequantQ4_0(dst *[32]float32, b *[18]byte) {
	d := f16At(b[0:])
	for j := 0; j < 16; j++ {
		q := b[2+j]
		dst[j] = d * float32(int(q&0xf)-8)
		dst[j+16] = d * float32(int(q>>4)-8)
	}
}
