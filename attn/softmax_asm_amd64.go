//go:build amd64

package attn

import "math"

// The softmax kernels in AVX2 + FMA assembly (softmax_asm_amd64.s; expRowZ with
// AVX-512F), used by every amd64 build on CPUs with AVX2 and FMA (kernels_amd64.go).
// Each computes what its scalar twin in kernels.go computes, 8 lanes at a time (16 for
// expRowZ), up to float32 rounding: exp reduces x = n·ln2 + r (n rounded to even where
// exp32 rounds half toward zero), takes e^r from its degree-6 Taylor polynomial with
// fused multiply-adds, scales by 2^n through the exponent bits, and gives 0 below −87.

// maxRowFMA returns the largest non-NaN value of row[:n], n ≥ 8, or −Inf when there
// is none: 8-lane maxima started at −Inf (a NaN never replaces a lane's maximum), the
// last n%8 values read as the last 8 (maxima do not mind values seen twice).
//
//go:noescape
func maxRowFMA(row *float32, n int) float32

// expRowFMA is expRow for n ≥ 8 values at row: each x replaced by e^(x−m), m the
// float32 whose bits are mb, and their float32 sum returned (lane sums added
// pairwise); the last n%8 values are read as the last 8, all 8 stored (the earlier
// lanes again, with equal values) and only the new ones summed.
//
//go:noescape
func expRowFMA(row *float32, n int, mb uint32) float32

// expRowZ is expRowFMA with ZMM registers (AVX-512F) for n ≥ 16: 16 lanes, each
// weight expRowFMA's bit for bit, the last n%16 values read as the last 16; the sum
// adds the lane sums of the two halves first, then as expRowFMA.
//
//go:noescape
func expRowZ(row *float32, n int, mb uint32) float32

// maxRowAsm is maxRowScalar. Rows shorter than a vector, and rows without a finite
// or +Inf value (all NaN or −Inf), go to the reference, which settles NaN rows.
func maxRowAsm(row []float32) float32 {
	if len(row) < 8 {
		return maxRowScalar(row)
	}
	mx := maxRowFMA(&row[0], len(row))
	if mx == negInf32 {
		return maxRowScalar(row)
	}
	return mx
}

// expRowAsm is expRowScalar up to float32 rounding; rows shorter than a vector run
// the scalar twin.
func expRowAsm(row []float32, mb uint32) float32 {
	if len(row) < 8 {
		return expRowScalar(row, mb)
	}
	return expRowFMA(&row[0], len(row), mb)
}

// expRowAsmZ is expRowAsm with expRowZ for rows of 16 values or more.
func expRowAsmZ(row []float32, mb uint32) float32 {
	if len(row) < 16 {
		return expRowAsm(row, mb)
	}
	return expRowZ(&row[0], len(row), mb)
}

// negInf32 is float32 −Inf.
var negInf32 = float32(math.Inf(-1))
