package quant

import "math"

// This file holds kvq's own IEEE-754 binary16 (f16) conversions and the F16 row codec.
//
// F16 row layout, d values: d little-endian IEEE-754 binary16 values (sign bit 15,
// 5 exponent bits 14..10 with bias 15, 10 mantissa bits 9..0), element i at bytes
// 2i (low byte) and 2i+1 (high byte); 2·d bytes, no header.
//
// Encoding rounds to nearest, ties to even. Magnitudes that round above 65504 become
// ±Inf (IEEE overflow), results below 2⁻²⁴ keep subnormal precision, NaN stays NaN
// (quiet), signed zero is kept.

// F32ToF16 converts x to IEEE-754 binary16 bits, rounding to nearest with ties to
// even. Overflow gives ±Inf, NaN gives a quiet NaN that keeps the top mantissa bits
// of x's payload, and values too small for the smallest subnormal (2⁻²⁴) round to
// signed zero.
func F32ToF16(x float32) uint16 {
	b := math.Float32bits(x)
	if a := b & 0x7fffffff; a-0x38800000 < 0x47800000-0x38800000 {
		// 2⁻¹⁴ ≤ |x| < 2¹⁶: rebias the exponent and round the mantissa to nearest even
		// (a carry may reach Inf, which is the correct rounding from 65520 up).
		r := (a+0xfff+(a>>13)&1)>>13 - 112<<10
		return uint16(b>>16)&0x8000 | uint16(r)
	}
	return f32ToF16Slow(b)
}

// f32ToF16Slow converts the bits of a float32 outside the f16 normal range: NaN,
// ±Inf, magnitudes ≥ 2¹⁶ (Inf) and below 2⁻¹⁴ (subnormal or zero).
func f32ToF16Slow(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(man>>13)
	}
	e := exp - 127 + 15 // biased f16 exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	// Below 2⁻¹⁴ (F32ToF16 handles the normal range): an f16 subnormal or zero,
	// value = m16·2⁻²⁴ with m16 = m·2^(e−14).
	if e < -10 {
		return sign // below 2⁻²⁵: rounds to zero
	}
	m := man | 0x800000
	shift := uint32(14 - e) // 14..24
	r := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++ // may carry into the smallest normal, which is the right encoding
	}
	return sign | uint16(r)
}

// F16ToF32 converts IEEE-754 binary16 bits to float32 exactly (every f16 value is a
// float32). NaN payloads are kept.
//
// The exponent is rebiased by a multiplication: the half's magnitude bits shifted
// into float32 position read as a float32 2¹¹² times too small, for normals and
// subnormals alike (the latter land on float32 subnormals, which the product makes
// normal again). Only Inf and NaN need a branch.
func F16ToF32(h uint16) float32 {
	v := math.Float32bits(math.Float32frombits(uint32(h&0x7fff)<<13) * 0x1p112)
	if h&0x7c00 == 0x7c00 {
		v = 0x7f800000 | uint32(h&0x3ff)<<13
	}
	return math.Float32frombits(v | uint32(h&0x8000)<<16)
}

// F16 stores each value as IEEE-754 binary16; see the layout at the top of f16.go.
type F16 struct{}

// f16Kernels is F16's entry in the kernel table (kernels.go), filled by its SIMD
// kernels' files.
var f16Kernels rowKernels

func (F16) kernels() *rowKernels { return &f16Kernels }

// Name implements RowCodec.
func (F16) Name() string { return "f16" }

// RowBytes implements RowCodec.
func (F16) RowBytes(d int) int { return 2 * d }

// Encode implements RowCodec.
func (F16) Encode(dst []byte, src []float32) {
	active.Load().encF16(dst, src)
}

// encodeF16Scalar is F16.Encode value by value (the kernel sets' encF16 reference).
func encodeF16Scalar(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for _, x := range src {
		h := F32ToF16(x)
		b := (*[2]byte)(dst)
		b[0], b[1] = byte(h), byte(h>>8)
		dst = dst[2:]
	}
}

// Decode implements RowCodec.
func (F16) Decode(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = F16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// Dot implements RowCodec.
func (F16) Dot(q []float32, src []byte) float32 {
	src = src[:2*len(q)]
	var s0, s1, s2, s3 float32
	for len(q) >= 4 && len(src) >= 8 {
		qq := (*[4]float32)(q)
		b := (*[8]byte)(src)
		s0 += qq[0] * F16ToF32(uint16(b[0])|uint16(b[1])<<8)
		s1 += qq[1] * F16ToF32(uint16(b[2])|uint16(b[3])<<8)
		s2 += qq[2] * F16ToF32(uint16(b[4])|uint16(b[5])<<8)
		s3 += qq[3] * F16ToF32(uint16(b[6])|uint16(b[7])<<8)
		q, src = q[4:], src[8:]
	}
	for i, x := range q {
		s0 += x * F16ToF32(uint16(src[2*i])|uint16(src[2*i+1])<<8)
	}
	return (s0 + s1) + (s2 + s3)
}

// AddScaled implements RowCodec.
func (F16) AddScaled(dst []float32, w float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] += w * F16ToF32(uint16(src[2*i])|uint16(src[2*i+1])<<8)
	}
}
