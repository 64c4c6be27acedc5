//go:build amd64

package linalg

// dotF32asm returns Σ a[i]·b[i] for i < n in AVX2 + FMA assembly (f32_amd64.s): four
// 8-lane FMA accumulators over 32 values per step, then 8 at a time, then the last
// n%8 values through a masked load (no read past a+n or b+n). It needs AVX2 and FMA
// (cpufeat.AVX2FMA).
//
//go:noescape
func dotF32asm(a, b *float32, n int) float32

// dotF32FMA is dotF32Scalar, summed in 32 lanes instead of 4 (so it may differ from
// it in float32 rounding).
func dotF32FMA(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return dotF32asm(&a[0], &b[0], len(a))
}
