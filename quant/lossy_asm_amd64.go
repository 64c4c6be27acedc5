//go:build amd64 && goexperiment.simd

package quant

import "unsafe"

// Assembly versions of the 4-bit and 2-bit Affine kernels of the one-query paths
// (lossyKernels.rows4 and .addQ1, contracts in fused_lossy_amd64.go), in
// lossy_asm_amd64.s. The compiled archsimd loops of the same kernels keep their
// vectors in too few registers (spills, reloads of broadcast words); these keep
// every accumulator, the query and the unpacked codes in the 16 YMM registers.
// Codes are unpacked exactly (integer shifts and masks, VCVTDQ2PS) and multiplied
// with float32 FMAs, the group scale applied lane-wise as in the archsimd kernels;
// only the order of the float sums differs (two chains per row or per column).
//
// 4-bit rows4 and addQ1 split each 16 codes into even and odd codes (VPMOVZXBD of
// the code bytes, then mask and shift) and the query or accumulators alike, which
// takes fewer instructions than a broadcast and variable shift per 8 codes.

// dotU4Rows4asm is rows4 for 4-bit codes.
//
//go:noescape
func dotU4Rows4asm(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)

// dotU2Rows4asm is rows4 for 2-bit codes.
//
//go:noescape
func dotU2Rows4asm(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)

// addU4Q1asm is addQ1 for 4-bit codes.
//
//go:noescape
func addU4Q1asm(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)

// addU2Q1asm is addQ1 for 2-bit codes.
//
//go:noescape
func addU2Q1asm(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)
