package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// QuantizeQ4_0 encodes src into Q4_0 blocks in dst with llama.cpp's reference
// semantics: per block of 32, the value of largest magnitude m (the first of equal
// ones), d = m / −8 (stored as f16), and each code min(15, trunc(x·(1/d) + 8.5)) in
// float32, so that m itself is code 0 (−8·d). An all-zero block has d = 0 and codes 8.
// len(src) must be a multiple of 32 and len(dst) equal len(src)/32 · 18. Non-finite
// inputs are rejected; on error dst is partly written.
func QuantizeQ4_0(dst []byte, src []float32) error {
	return quantize45(dst, src, TypeQ4_0, 18, 8, func(out []byte, codes *[32]uint8) {
		for j := range 16 {
			out[2+j] = codes[j] | codes[16+j]<<4
		}
	})
}

// QuantizeQ5_0 is QuantizeQ4_0 for Q5_0 blocks: d = m / −16, codes min(31,
// trunc(x·(1/d) + 16.5)), their fifth bits in qh. len(dst) must equal len(src)/32 · 22.
func QuantizeQ5_0(dst []byte, src []float32) error {
	return quantize45(dst, src, TypeQ5_0, 22, 16, func(out []byte, codes *[32]uint8) {
		var qh uint32
		for j := range 16 {
			out[6+j] = codes[j]&0x0f | (codes[16+j]&0x0f)<<4
			qh |= uint32(codes[j]>>4)<<j | uint32(codes[16+j]>>4)<<(j+16)
		}
		binary.LittleEndian.PutUint32(out[2:], qh)
	})
}

// quantize45 is the body of QuantizeQ4_0 and QuantizeQ5_0: blocks of blockBytes, codes
// offset by off (their largest 2·off − 1), laid out by put.
func quantize45(dst []byte, src []float32, t TensorType, blockBytes, off int, put func(out []byte, codes *[32]uint8)) error {
	if len(src)%32 != 0 {
		return fmt.Errorf("gguf: quantize %v: %d values is not a multiple of 32", t, len(src))
	}
	if len(dst) != len(src)/32*blockBytes {
		return fmt.Errorf("gguf: quantize %v: destination has %d bytes, want %d for %d values", t, len(dst), len(src)/32*blockBytes, len(src))
	}
	var codes [32]uint8
	for b := 0; b < len(src)/32; b++ {
		x := (*[32]float32)(src[32*b:])
		out := dst[blockBytes*b : blockBytes*(b+1)]
		var amax, m float32
		for j, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("gguf: quantize %v: value %d is %v", t, 32*b+j, v)
			}
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, m = a, v
			}
		}
		d := m / -float32(off)
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		if math.IsInf(float64(id), 0) {
			id = 0 // d underflows f16 to 0: every value decodes to 0 whatever its code
		}
		binary.LittleEndian.PutUint16(out[0:], F32ToF16(d))
		half := float32(off) + 0.5
		for j, v := range x {
			// x·(1/d) rounded on its own (no fused multiply-add), as in C; then
			// + off + ½ and truncation: at least ½ whenever x·(1/d) ≥ −off.
			codes[j] = uint8(min(2*off-1, max(0, int(float32(v*id)+half))))
		}
		put(out, &codes)
	}
	return nil
}
