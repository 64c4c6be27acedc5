package gguf

import "encoding/binary"

// Q5_0 block: 32 values in 22 bytes.
//
//	bytes 0–1    d   f16 scale, little-endian
//	bytes 2–5    qh  u32, little-endian: bit j is the fifth (high) bit of value j
//	bytes 6–21   qs  16 bytes of low 4 bits: the low nibble of qs[j] is value j,
//	                 the high nibble is value j+16 (j = 0..15)
//
// code = low4 | high<<4 (0..31); value = d · (code − 16)

func dequantQ5_0(dst *[32]float32, b *[22]byte) {
	d := f16At(b[0:])
	qh := binary.LittleEndian.Uint32(b[2:])
	for j := 0; j < 16; j++ {
		q := b[6+j]
		lo := int(q&0xf) | int(qh>>j&1)<<4
		hi := int(q>>4) | int(qh>>(j+16)&1)<<4
		dst[j] = d * float32(lo-16)
		dst[j+16] = d * float32(hi-16)
	}
}
