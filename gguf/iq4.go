package gguf

// IQ4_NL and IQ4_XS store 4-bit indices into a fixed non-linear table of sixteen
// int8 levels, IQ4NLValues (denser near zero, as weights are).
//
// IQ4_NL block: 32 values in 18 bytes.
//
//	bytes 0–1    d    f16 block scale, little-endian
//	bytes 2–17   qs   value l (l < 16) in the low nibble of qs[l], value 16 + l in its
//	                  high nibble
//
// value = d · IQ4NLValues[index]
//
// IQ4_XS super-block: 256 values in 136 bytes, as 8 sub-blocks of 32 values.
//
//	bytes 0–1    d         f16 super-block scale, little-endian
//	bytes 2–3    scales_h  little-endian uint16: bits 2j, 2j+1 are the high 2 bits of
//	                       sub-block j's scale
//	bytes 4–7    scales_l  low 4 bits of the scales: sub-block j in the low nibble of
//	                       scales_l[j/2] for even j, the high nibble for odd j
//	bytes 8–135  qs        16 bytes per sub-block j (qs[16j:]), laid out as IQ4_NL's
//
// sub-block scale ls[j] = (low | high << 4) − 32, in −32..31;
// value = d·ls[j] · IQ4NLValues[index]

// IQ4NLValues are the sixteen levels of IQ4_NL and IQ4_XS codes.
var IQ4NLValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func dequantIQ4_NL(dst *[32]float32, b *[18]byte) {
	d := f16At(b[0:])
	for l, q := range b[2:18] {
		dst[l] = d * float32(IQ4NLValues[q&15])
		dst[16+l] = d * float32(IQ4NLValues[q>>4])
	}
}

// ScaleIQ4XS returns the signed scale, in −32..31, of sub-block j (0..7) of an IQ4_XS
// block.
func ScaleIQ4XS(b *[136]byte, j int) int32 {
	h := uint16(b[2]) | uint16(b[3])<<8
	lo := b[4+j/2] >> (4 * (j % 2)) & 15
	return int32(lo|uint8(h>>(2*j)&3)<<4) - 32
}

func dequantIQ4_XS(dst *[256]float32, b *[136]byte) {
	d := f16At(b[0:])
	for j := 0; j < 8; j++ {
		dl := d * float32(ScaleIQ4XS(b, j))
		qs := b[8+16*j : 24+16*j]
		out := dst[32*j : 32*j+32]
		for l, q := range qs {
			out[l] = dl * float32(IQ4NLValues[q&15])
			out[16+l] = dl * float32(IQ4NLValues[q>>4])
		}
	}
}
