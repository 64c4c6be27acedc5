package quant

import "math"

// This file holds the bfloat16 (bf16) conversions and the BF16 row codec.
//
// BF16 row layout, d values: d little-endian bfloat16 values (the high 16 bits of
// the IEEE-754 float32: sign bit 15, 8 exponent bits with bias 127, 7 mantissa bits),
// element i at bytes 2i (low byte) and 2i+1 (high byte); 2·d bytes, no header.
//
// Encoding rounds to nearest, ties to even. bf16 has float32's range: values that
// round beyond the largest bf16 become ±Inf, NaN stays NaN (quiet), ±Inf, subnormals
// and signed zero are kept.

// F32ToBF16 converts x to bfloat16 bits (the high half of its float32 bits), rounding
// to nearest with ties to even. Values that round beyond the largest bfloat16 become
// ±Inf; NaN stays a quiet NaN.
func F32ToBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32 converts bfloat16 bits to float32 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// BF16 stores each value as bfloat16; see the layout at the top of bf16.go.
type BF16 struct{}

// bf16Kernels is BF16's entry in the kernel table (kernels.go), filled by its SIMD
// kernels' files.
var bf16Kernels rowKernels

func (BF16) kernels() *rowKernels { return &bf16Kernels }

// Name implements RowCodec.
func (BF16) Name() string { return "bf16" }

// RowBytes implements RowCodec.
func (BF16) RowBytes(d int) int { return 2 * d }

// Encode implements RowCodec.
func (BF16) Encode(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for _, x := range src {
		h := F32ToBF16(x)
		b := (*[2]byte)(dst)
		b[0], b[1] = byte(h), byte(h>>8)
		dst = dst[2:]
	}
}

// bf16At returns the value of the little-endian bfloat16 at b[0:2].
func bf16At(b *[2]byte) float32 {
	return math.Float32frombits(uint32(b[0])<<16 | uint32(b[1])<<24)
}

// Decode implements RowCodec.
func (BF16) Decode(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = bf16At((*[2]byte)(src))
		src = src[2:]
	}
}

// Dot implements RowCodec.
func (BF16) Dot(q []float32, src []byte) float32 {
	src = src[:2*len(q)]
	var s0, s1 float32
	for len(q) >= 2 {
		b := (*[4]byte)(src)
		s0 += q[0] * math.Float32frombits(uint32(b[0])<<16|uint32(b[1])<<24)
		s1 += q[1] * math.Float32frombits(uint32(b[2])<<16|uint32(b[3])<<24)
		q, src = q[2:], src[4:]
	}
	if len(q) == 1 {
		s0 += q[0] * bf16At((*[2]byte)(src))
	}
	return s0 + s1
}

// AddScaled implements RowCodec.
func (BF16) AddScaled(dst []float32, w float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] += w * bf16At((*[2]byte)(src))
		src = src[2:]
	}
}
