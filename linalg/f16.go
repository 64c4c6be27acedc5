package linalg

import "math"

// f16Table maps every IEEE 754 binary16 bit pattern to its float32 value
// (subnormals, infinities and NaNs included). 256 KiB, built at init.
var f16Table [1 << 16]float32

func init() {
	for i := range f16Table {
		f16Table[i] = f16ToF32Slow(uint16(i))
	}
}

// f16ToF32Slow converts a binary16 bit pattern to float32 exactly, bit by bit.
func f16ToF32Slow(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN; keep the payload
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0: // signed zero
		return math.Float32frombits(sign)
	default: // subnormal: value = mant × 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
}

// F16ToF32 returns the float32 value of the binary16 bit pattern h (exact).
func F16ToF32(h uint16) float32 { return f16Table[h] }
