package linalg

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSiLUMul checks every kernel set against silu(g)·u computed in float64, over lengths
// that exercise the vector loop and its scalar tail, values across the range where the
// exponential matters, and the clamped extremes.
func TestSiLUMul(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	special := []float32{0, -0, 1e-30, -1e-30, 87, -87, 88.5, -88.5, 100, -100, 1e6, -1e6}
	for _, k := range kernelModes(t) {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 77} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				withKernels(t, k)
				g, u := make([]float32, n+3), make([]float32, n+3)
				for i := range g {
					g[i] = float32(r.NormFloat64() * 8)
					u[i] = float32(r.NormFloat64())
					if i < n && r.IntN(4) == 0 {
						g[i] = special[r.IntN(len(special))]
					}
				}
				want := make([]float64, n)
				for i := range want {
					v := float64(g[i])
					want[i] = v / (1 + math.Exp(-v)) * float64(u[i])
				}
				guard := [3]float32{g[n], g[n+1], g[n+2]}
				if err := SiLUMul(g[:n], u); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if d := math.Abs(float64(g[i]) - want[i]); d > 1e-6*math.Abs(want[i])+1e-30 {
						t.Errorf("silu·u[%d] = %v, want %v", i, g[i], want[i])
					}
				}
				if [3]float32{g[n], g[n+1], g[n+2]} != guard {
					t.Errorf("values past len(g) changed")
				}
			})
		}
	}
	nan := []float32{float32(math.NaN()), 1, 2, 3, 4, 5, 6, 7, 8}
	for _, k := range kernelModes(t) {
		withKernels(t, k)
		g := append([]float32(nil), nan...)
		if err := SiLUMul(g, make([]float32, len(g))); err != nil {
			t.Fatal(err)
		}
		if g[0] == g[0] {
			t.Errorf("%s: silu(NaN)·0 = %v, want NaN", k.name, g[0])
		}
	}
	if err := SiLUMul(make([]float32, 4), make([]float32, 3)); !errors.Is(err, ErrShape) {
		t.Errorf("short u: err = %v, want ErrShape", err)
	}
}
