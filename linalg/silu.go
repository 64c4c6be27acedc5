package linalg

import (
	"fmt"
	"math"
)

// SiLUMul computes the SwiGLU gate in place: g[i] = silu(g[i])·u[i] with silu(v) =
// v/(1+e^−v), for i < len(g). It returns an error, changing nothing, when u is shorter
// than g. The SIMD version evaluates e^−v with a degree-6 polynomial after range
// reduction (relative error about 2e-7, inputs clamped to ±88 so that e^−v stays finite);
// the scalar version with math.Exp. A NaN in g gives NaN; g = −∞ gives NaN in the scalar
// version and −∞·u in the SIMD one.
func SiLUMul(g, u []float32) error {
	if len(u) < len(g) {
		return fmt.Errorf("linalg: SiLUMul: %w: g has %d values, u %d", ErrShape, len(g), len(u))
	}
	active.Load().siluMul(g, u[:len(g)])
	return nil
}

// siluMulScalar is the reference for siluMul: g[i] = g[i]/(1+exp(−g[i]))·u[i], the
// exponential in float64.
func siluMulScalar(g, u []float32) {
	u = u[:len(g)]
	for i, v := range g {
		g[i] = v / (1 + float32(math.Exp(float64(-v)))) * u[i]
	}
}
