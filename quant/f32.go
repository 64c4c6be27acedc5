package quant

import (
	"encoding/binary"
	"math"
)

// F32 stores rows unchanged (NaN, ±Inf and signed zeros included).
//
// Layout of a row of d values: d little-endian IEEE-754 float32, element i at bytes
// 4i..4i+3, 4·d bytes, no header.
type F32 struct{}

// f32Kernels is F32's entry in the kernel table (kernels.go), filled by its SIMD
// kernels' files.
var f32Kernels rowKernels

func (F32) kernels() *rowKernels { return &f32Kernels }

// Name implements RowCodec.
func (F32) Name() string { return "f32" }

// RowBytes implements RowCodec.
func (F32) RowBytes(d int) int { return 4 * d }

// Encode implements RowCodec.
func (F32) Encode(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	for i, x := range src {
		putF32(dst[4*i:], x)
	}
}

// Decode implements RowCodec.
func (F32) Decode(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = getF32(src[4*i:])
	}
}

// Dot implements RowCodec.
func (F32) Dot(q []float32, src []byte) float32 {
	src = src[:4*len(q)]
	var s0, s1, s2, s3 float32
	for len(q) >= 4 && len(src) >= 16 {
		qq := (*[4]float32)(q)
		b := (*[16]byte)(src)
		s0 += qq[0] * math.Float32frombits(binary.LittleEndian.Uint32(b[0:4]))
		s1 += qq[1] * math.Float32frombits(binary.LittleEndian.Uint32(b[4:8]))
		s2 += qq[2] * math.Float32frombits(binary.LittleEndian.Uint32(b[8:12]))
		s3 += qq[3] * math.Float32frombits(binary.LittleEndian.Uint32(b[12:16]))
		q, src = q[4:], src[16:]
	}
	for i, x := range q {
		s0 += x * getF32(src[4*i:])
	}
	return (s0 + s1) + (s2 + s3)
}

// AddScaled implements RowCodec.
func (F32) AddScaled(dst []float32, w float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] += w * getF32(src[4*i:])
	}
}
