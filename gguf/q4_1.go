package gguf

// Q4_1 block: 32 values in 20 bytes.
//
//	bytes 0–1    d   f16 scale, little-endian
//	bytes 2–3    m   f16 minimum (offset), little-endian
//	bytes 4–19   qs  16 bytes of 4-bit codes: the low nibble of qs[j] is value j,
//	                 the high nibble is value j+16 (j = 0..15)
//
// value = d · code + m

func dequantQ4_1(dst *[32]float32, b *[20]byte) {
	d, m := f16At(b[0:]), f16At(b[2:])
	for j := 0; j < 16; j++ {
		q := b[4+j]
		dst[j] = d*float32(q&0xf) + m
		dst[j+16] = d*float32(q>>4) + m
	}
}
