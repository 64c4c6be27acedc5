//go:build amd64

package linalg

// The F16C kernel (VCVTPH2PS, which simd/archsimd does not expose), in f16c_amd64.s. It
// computes what dotF16Scalar computes: the conversion is exact, so dotF16C differs only
// in summation order.

// dotF16C returns Σ f16(w[2i:2i+2])·x[i] for i < n; n must be a multiple of 32 and w, x
// must hold n values.
//
//go:noescape
func dotF16C(w *byte, x *float32, n int) float32

// dotF16F16C is dotF16Scalar: the largest multiple of 32 values through dotF16C, the rest
// through dotF16Tail (the scalar kernel).
func dotF16F16C(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	n := len(x) &^ 31
	var s float32
	if n > 0 {
		s = dotF16C(&w[0], &x[0], n)
	}
	if n < len(x) {
		s += dotF16Tail(w[2*n:], x[n:])
	}
	return s
}
