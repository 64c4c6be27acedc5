package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Float tensor layouts (one value per "block"):
//
//	F32   4 bytes per value: IEEE-754 binary32, little-endian
//	F16   2 bytes per value: IEEE-754 binary16, little-endian
//	BF16  2 bytes per value: bfloat16 (the high 16 bits of a binary32), little-endian
//
// The quantized layouts are documented at the top of q4_0.go, q4_1.go, q5_0.go,
// q5_1.go, q8_0.go, q2_k.go, q3_k.go, q4_k.go, q5_k.go, q6_k.go and iq4.go (IQ4_NL,
// IQ4_XS).

// Dequantize converts len(dst) values of type t from src into dst. len(dst) must be a
// whole number of blocks of t and len(src) exactly the bytes those blocks occupy
// (t.RowBytes(len(dst))). Blocks are independent, so any block-aligned slice of a
// tensor's data (a row, several rows, the whole tensor) can be converted.
func Dequantize(t TensorType, dst []float32, src []byte) error {
	want, err := t.RowBytes(len(dst))
	if err != nil {
		return fmt.Errorf("gguf: dequantize: %w", err)
	}
	if len(src) != want {
		return fmt.Errorf("gguf: dequantize %d %v values: source has %d bytes, want %d", len(dst), t, len(src), want)
	}
	switch t {
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case TypeF16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case TypeBF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case TypeQ8_0:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ8_0((*[32]float32)(dst[32*b:]), (*[34]byte)(src[34*b:]))
		}
	case TypeQ4_0:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ4_0((*[32]float32)(dst[32*b:]), (*[18]byte)(src[18*b:]))
		}
	case TypeQ4_1:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ4_1((*[32]float32)(dst[32*b:]), (*[20]byte)(src[20*b:]))
		}
	case TypeQ5_0:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ5_0((*[32]float32)(dst[32*b:]), (*[22]byte)(src[22*b:]))
		}
	case TypeQ5_1:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ5_1((*[32]float32)(dst[32*b:]), (*[24]byte)(src[24*b:]))
		}
	case TypeQ4_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ4_K((*[256]float32)(dst[256*b:]), (*[144]byte)(src[144*b:]))
		}
	case TypeQ6_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ6_K((*[256]float32)(dst[256*b:]), (*[210]byte)(src[210*b:]))
		}
	case TypeQ5_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ5_K((*[256]float32)(dst[256*b:]), (*[176]byte)(src[176*b:]))
		}
	case TypeQ3_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ3_K((*[256]float32)(dst[256*b:]), (*[110]byte)(src[110*b:]))
		}
	case TypeQ2_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ2_K((*[256]float32)(dst[256*b:]), (*[84]byte)(src[84*b:]))
		}
	case TypeIQ4_NL:
		for b := 0; b < len(dst)/32; b++ {
			dequantIQ4_NL((*[32]float32)(dst[32*b:]), (*[18]byte)(src[18*b:]))
		}
	case TypeIQ4_XS:
		for b := 0; b < len(dst)/256; b++ {
			dequantIQ4_XS((*[256]float32)(dst[256*b:]), (*[136]byte)(src[136*b:]))
		}
	default:
		return fmt.Errorf("gguf: dequantize: no conversion for tensor type %v", t)
	}
	return nil
}

// f16At reads the little-endian f16 at b[0:2] as float32.
func f16At(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }
