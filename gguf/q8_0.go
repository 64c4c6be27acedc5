package gguf

// Q8_0 block: 32 values in 34 bytes.
//
//	bytes 0–1    d   f16 scale, little-endian
//	bytes 2–33   qs  32 × int8 codes; qs[j] is value j
//
// value[j] = d · qs[j]

func dequantQ8_0(dst *[32]float32, b *[34]byte) {
	d := f16At(b[0:])
	for j := range dst {
		dst[j] = d * float32(int8(b[2+j]))
	}
}
