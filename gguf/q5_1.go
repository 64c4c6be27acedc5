package gguf

import "encoding/binary"

// Q5_1 block: 32 values in 24 bytes.
//
//	bytes 0–1    d   f16 scale, little-endian
//	bytes 2–3    m   f16 minimum (offset), little-endian
//	bytes 4–7    qh  u32, little-endian: bit j is the fifth (high) bit of value j
//	bytes 8–23   qs  16 bytes of low 4 bits: the low nibble of qs[j] is value j,
//	                 the high nibble is value j+16 (j = 0..15)
//
// code = low4 | high<<4 (0..31); value = d · code + m

func dequantQ5_1(dst *[32]float32, b *[24]byte) {
	d, m := f16At(b[0:]), f16At(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	for j := 0; j < 16; j++ {
		q := b[8+j]
		lo := uint32(q&0xf) | (qh>>j&1)<<4
		hi := uint32(q>>4) | (qh>>(j+16)&1)<<4
		dst[j] = d*float32(lo) + m
		dst[j+16] = d*float32(hi) + m
	}
}
