package linalg

import (
	"math"

	"kvq/gguf"
)

// rowDecoder writes the len(dst) float32 values of one encoded row src into dst.
type rowDecoder func(dst []float32, src []byte) error

// dequantizerFor returns the row decoder MatMul uses for a weight type without a native
// kernel, or nil when the type cannot be decoded: BF16 here, every other type gguf knows
// through gguf.Dequantize.
func dequantizerFor(t gguf.TensorType) rowDecoder {
	switch {
	case t == gguf.TypeBF16:
		return decodeBF16
	case t.Supported():
		return func(dst []float32, src []byte) error { return gguf.Dequantize(t, dst, src) }
	}
	return nil
}

// dequantNote lists the types multiplied through dequantization, for error messages.
func dequantNote() string { return ", and by dequantizing rows every other type package gguf reads" }

// decodeBF16 widens little-endian bfloat16 values (the high half of a float32) exactly.
func decodeBF16(dst []float32, src []byte) error {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(src[2*i])<<16 | uint32(src[2*i+1])<<24)
	}
	return nil
}
