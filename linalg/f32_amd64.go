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

// siluMulFMA does gv[i] = gv[i]/(1+e^−gv[i])·u[i] for i < n, n a multiple of 8, in AVX2
// + FMA assembly (f32_amd64.s): e^−v as expNegAVX2 of the archsimd build computes it
// (v clamped to ±88, degree-6 polynomial after range reduction), with the same
// instructions, so that both builds agree bit for bit.
//
//go:noescape
func siluMulFMA(gv, u *float32, n int)

// siluMulAsm is siluMulScalar, 8 values at a time in siluMulFMA and the last len(g)%8
// in the scalar twin, as siluMulAVX2 does.
func siluMulAsm(g, u []float32) {
	u = u[:len(g)]
	n := len(g) &^ 7
	if n > 0 {
		siluMulFMA(&g[0], &u[0], n)
	}
	siluMulScalar(g[n:], u[n:])
}
