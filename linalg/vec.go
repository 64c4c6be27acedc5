package linalg

import (
	"fmt"
	"math"
)

// Dot returns Σ a[i]·b[i] in float32 over the common prefix of a and b (callers pass
// equal lengths; a length mismatch is not an error here, the extra values are ignored).
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	return active.Load().dotF32(a[:n], b[:n])
}

// Argmax returns the index of the largest value of x: the first among equal ones
// (−0 and +0 are equal), a NaN never larger than another value; x[0] when it is
// NaN, and 0 when x is empty. Every kernel set returns the same index.
func Argmax(x []float32) int { return active.Load().argmax(x) }

// argmaxScalar is Argmax with one running maximum, the reference.
func argmaxScalar(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// Axpy does dst[i] += a·x[i] over the common prefix of dst and x (callers pass equal
// lengths; the extra values of the longer one are left alone).
func Axpy(dst []float32, a float32, x []float32) {
	n := min(len(dst), len(x))
	active.Load().axpy(dst[:n], a, x[:n])
}

// RMSNorm writes dst[i] = x[i]·w[i] / sqrt(mean_j(x[j]²) + eps) for i < len(x). dst may be
// x itself. It returns an error, writing nothing, when dst or w is shorter than x or eps
// is negative or NaN.
func RMSNorm(dst, x, w []float32, eps float32) error {
	if len(dst) < len(x) || len(w) < len(x) {
		return fmt.Errorf("linalg: RMSNorm: %w: x has %d values, dst %d, w %d", ErrShape, len(x), len(dst), len(w))
	}
	if !(eps >= 0) {
		return fmt.Errorf("linalg: RMSNorm: eps %v is negative or NaN", eps)
	}
	if len(x) == 0 {
		return nil
	}
	k := active.Load()
	ss := k.dotF32(x, x)
	scale := float32(1 / math.Sqrt(float64(ss)/float64(len(x))+float64(eps)))
	dst, w = dst[:len(x)], w[:len(x)]
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
	return nil
}
