//go:build amd64 && goexperiment.simd

package linalg

import (
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/cpufeat"
)

// TestSiLUMulAsmMatchesArchsimd checks that the assembly SiLU of builds without
// GOEXPERIMENT=simd gives the archsimd kernel's results bit for bit.
func TestSiLUMulAsmMatchesArchsimd(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 7, 8, 9, 31, 64, 172, 1000} {
		for _, spread := range []float64{0.5, 8, 200} {
			g, u := make([]float32, n), make([]float32, n)
			for i := range g {
				g[i], u[i] = float32(r.NormFloat64()*spread), float32(r.NormFloat64())
			}
			want := append([]float32(nil), g...)
			siluMulAVX2(want, u)
			siluMulAsm(g, u)
			for i := range g {
				if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d spread=%g: g[%d] = %v, archsimd %v", n, spread, i, g[i], want[i])
				}
			}
		}
	}
}
