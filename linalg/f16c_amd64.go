//go:build amd64

package linalg

// F16C kernels (VCVTPH2PS, which simd/archsimd does not expose), in f16c_amd64.s. They
// compute what dotF16Scalar and widenF16Scalar compute: the conversion is exact, so
// widenF16C matches the table bit for bit and dotF16C differs only in summation order.

// dotF16C returns Σ f16(w[2i:2i+2])·x[i] for i < n; n must be a multiple of 32 and w, x
// must hold n values.
//
//go:noescape
func dotF16C(w *byte, x *float32, n int) float32

// widenF16C writes f16(src[2i:2i+2]) to dst[i] for i < n; n must be a multiple of 8.
//
//go:noescape
func widenF16C(dst *float32, src *byte, n int)

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

// widenF16F16C is widenF16Scalar: multiples of 8 through widenF16C, the rest through the
// table.
func widenF16F16C(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	n := len(dst) &^ 7
	if n > 0 {
		widenF16C(&dst[0], &src[0], n)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = f16Table[uint16(src[2*i])|uint16(src[2*i+1])<<8]
	}
}
