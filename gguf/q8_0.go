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
		// |x| as bits: for non-negative floats the bit patterns order like the values,
		// and every pattern at or above +Inf's is non-finite.
		var amaxBits uint32
		for _, v := range x {
			amaxBits = max(amaxBits, math.Float32bits(v)&0x7fffffff)
		}
		if amaxBits >= 0x7f800000 {
			for j, v := range x {
				if math.Float32bits(v)&0x7fffffff >= 0x7f800000 {
					return fmt.Errorf("gguf: quantize Q8_0: value %d is %v", 32*b+j, v)
				}
			}
		}
		d := math.Float32frombits(amaxBits) / 127
		binary.LittleEndian.PutUint16(out[0:], F32ToF16(d))
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		if math.IsInf(float64(id), 0) {
			// d is so small (amax < 4e-37) that 1/d overflows; the stored f16 d is 0
			// and every value decodes to 0, so write zero codes.
			clear(out[2:])
			continue
		}
		for j, v := range x {
			out[2+j] = byte(roundCode(v * id))
		}
	}
	return nil
}

// roundCode rounds a finite x to the nearest integer, halves away from zero (C's
// roundf), clamped to [-127, 127]. In float64, x ± 0.5 is exact for float32 x of
// magnitude at least 2^-29 and rounds to ±0.5 below that, so truncating it toward zero
// always gives roundf's result.
func roundCode(x float32) int8 {
	r := int32(float64(x) + math.Copysign(0.5, float64(x)))
	return int8(min(max(r, -127), 127))
}
