package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

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

// QuantizeQ8_0 encodes src into Q8_0 blocks in dst, with llama.cpp's reference
// semantics: per block of 32, d = max|x| / 127 (stored as f16), and each code is
// round(x / d) (computed as x · (1/d) in float32, halves away from zero), so codes lie
// in [-127, 127]; an all-zero block has d = 0 and zero codes. len(src) must be a multiple of 32 and len(dst) equal
// len(src)/32 · 34. Non-finite inputs are rejected; on error dst is partly written.
func QuantizeQ8_0(dst []byte, src []float32) error {
	if len(src)%32 != 0 {
		return fmt.Errorf("gguf: quantize Q8_0: %d values is not a multiple of 32", len(src))
	}
	if len(dst) != len(src)/32*34 {
		return fmt.Errorf("gguf: quantize Q8_0: destination has %d bytes, want %d for %d values", len(dst), len(src)/32*34, len(src))
	}
	for b := 0; b < len(src)/32; b++ {
		x := (*[32]float32)(src[32*b:])
		out := (*[34]byte)(dst[34*b:])
		var amax float32
		for j, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("gguf: quantize Q8_0: value %d is %v", 32*b+j, v)
			}
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(out[0:], F32ToF16(d))
		for j, v := range x {
			// Clamping only matters when d is subnormal and 1/d overflows (the stored
			// f16 d is then 0 and every value decodes to 0 anyway).
			r := math.Round(float64(v * id))
			switch {
			case r > 127:
				r = 127
			case r < -127:
				r = -127
			case math.IsNaN(r):
				r = 0
			}
			out[2+j] = byte(int8(r))
		}
	}
	return nil
}
