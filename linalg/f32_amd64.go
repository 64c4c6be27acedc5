//go:build amd64

package linalg

// dotF32FMA is dotF32Scalar in AVX2 + FMA assembly (f32_amd64.s), over the common
// length n of a and b: four 8-lane FMA accumulators over 32 values per step, then 8
// at a time, then the last n%8 values through a masked load (no read past a[:n] or
// b[:n]). Sums are in 32 lanes instead of 4, so results may differ from the twin's in
// float32 rounding. It needs AVX2 and FMA (cpufeat.AVX2FMA); the kernel set calls
// it directly, without a Go wrapper (Dot and RMSNorm; the products go through
// dotF32Tokens). Every amd64 build uses it: against the archsimd loop it replaced, ns at n = 64, 172,
// 768, 2048: 8–12 vs 9–15, 19–23 vs 25–31, 42–48 vs 67–83, 102–132 vs 166–229.
//
//go:noescape
func dotF32FMA(a, b []float32) float32

// siluMulFMA does gv[i] = gv[i]/(1+e^−gv[i])·u[i] for i < n, n a multiple of 8, in AVX2
// + FMA assembly (f32_amd64.s): e^−v for v clamped to ±88 by range reduction and a
// degree-6 polynomial (Cephes' expf). Every amd64 build runs it: it measured 1.7–2.5×
// faster than the archsimd loop it replaced (n=172: 200–250 vs 380–420 ns; n=2048:
// 1.5–1.7 vs 3.0–4.4 µs), whose compiled code kept its constants in memory.
//
//go:noescape
func siluMulFMA(gv, u *float32, n int)

// siluMulAsm is siluMulScalar, 8 values at a time in siluMulFMA and the last len(g)%8
// in the scalar twin.
func siluMulAsm(g, u []float32) {
	u = u[:len(g)]
	n := len(g) &^ 7
	if n > 0 {
		siluMulFMA(&g[0], &u[0], n)
	}
	siluMulScalar(g[n:], u[n:])
}

// dotF32Tokens stores at out + t·os bytes dotF32FMA(w[:cols], x[t·xs/4:][:cols]) for t
// < n, cols ≥ 1, bit for bit (each token's sums in dotF32FMA's accumulators and order),
// in AVX2 + FMA assembly (f32_amd64.s): one call per weight row and token block, two
// tokens per step sharing each load of w. It needs AVX2 and FMA.
//
//go:noescape
func dotF32Tokens(out *float32, os uintptr, w, x *float32, xs uintptr, cols, n int)

// dotF32TAsm is dotF32TScalar with dotF32FMA's sums (dotF32Tokens).
func dotF32TAsm(out []float32, ld int, w, x []float32, n int) {
	cols := len(w)
	if n <= 0 || cols == 0 {
		dotF32TScalar(out, ld, w, x, n)
		return
	}
	_ = out[(n-1)*ld]
	_ = x[n*cols-1]
	dotF32Tokens(&out[0], uintptr(4*ld), &w[0], &x[0], uintptr(4*cols), cols, n)
}

// maxF32x8 leaves in lanes the running maxima of x[:n] by lane (f32_amd64.s): n a
// positive multiple of 32, x[0] not NaN. It needs AVX.
//
//go:noescape
func maxF32x8(x *float32, n int, lanes *[8]float32)

// firstEqF32 returns the first i < n with x[i] == m, or n (f32_amd64.s): n a
// positive multiple of 8. It needs AVX.
//
//go:noescape
func firstEqF32(x *float32, n int, m float32) int

// argmaxAsm is argmaxScalar in two passes: the maximum m (maxF32x8 by lanes, then
// the lanes and the last values in Go, each by "v > m"), then the first index whose
// value equals m, which is the first index argmaxScalar's strict comparisons keep.
func argmaxAsm(x []float32) int {
	if len(x) < 32 || x[0] != x[0] {
		return argmaxScalar(x)
	}
	n := len(x) &^ 31
	var lanes [8]float32
	maxF32x8(&x[0], n, &lanes)
	m := lanes[0]
	for _, v := range lanes[1:] {
		if v > m {
			m = v
		}
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	if i := firstEqF32(&x[0], n, m); i < n {
		return i
	}
	for i := n; ; i++ {
		if x[i] == m {
			return i
		}
	}
}
