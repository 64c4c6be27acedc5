package gguf

import "math"

// F16ToF32 converts an IEEE-754 binary16 value (as its bits) to float32. Every f16
// value, including subnormals, infinities and NaNs, has an exact float32 image.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // infinity or NaN: keep the payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0: // zero or subnormal: mant · 2^-24, exact in float32
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+(127-15))<<23 | mant<<13)
}

// F32ToF16 converts a float32 to IEEE-754 binary16 bits, rounding to nearest with ties
// to even. Values beyond the f16 range become ±Inf, values below half the smallest
// subnormal become ±0, and NaNs stay NaNs (quiet, with the payload's top bits).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7c00 | 0x200 | uint16(mant>>13)
	}
	e := exp - 127 + 15 // f16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// f16 subnormal: the result is full · 2^(e-14) in units of 2^-24.
		s := uint(14 - e)
		if s > 24 {
			return sign
		}
		full := mant | 0x800000
		h := full >> s
		rem := full & (1<<s - 1)
		half := uint32(1) << (s - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to 0x7c00 = Inf, which is the correct rounding
	}
	return sign | uint16(h)
}

// BF16ToF32 converts bfloat16 bits (the top half of a float32) to float32, exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
