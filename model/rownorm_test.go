package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddNormRowsIsAddThenNorm checks the fused residual add and norm against
// addRows then rmsNormRows, bit for bit, on row widths around its 4-value steps.
func TestAddNormRowsIsAddThenNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{1, 3, 4, 5, 8, 63, 64, 768} {
		const rows = 3
		x, y, w := make([]float32, rows*dim), make([]float32, rows*dim), make([]float32, dim)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()*10), float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		wantX, wantY := append([]float32(nil), x...), append([]float32(nil), y...)
		addRows(wantX, wantY)
		rmsNormRows(wantY, wantX, w, dim, 1e-6)
		addNormRows(x, y, w, dim, 1e-6)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(wantX[i]) || math.Float32bits(y[i]) != math.Float32bits(wantY[i]) {
				t.Fatalf("dim %d, value %d: x %v y %v, want %v %v", dim, i, x[i], y[i], wantX[i], wantY[i])
			}
		}
	}
}
