//go:build amd64 && goexperiment.simd

package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/cpufeat"
)

// TestSoftmaxAsmMatchesArchsimd checks that the assembly kernels of builds without
// GOEXPERIMENT=simd give the archsimd kernels' results bit for bit (maxima by value),
// so that the softmax weights do not depend on the build.
func TestSoftmaxAsmMatchesArchsimd(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(25, 26))
	for _, n := range softmaxLens {
		for _, spread := range []float64{0.01, 3, 40, 300} {
			t.Run(fmt.Sprintf("n=%d/spread=%g", n, spread), func(t *testing.T) {
				row := make([]float32, n)
				for i := range row {
					row[i] = float32(r.NormFloat64() * spread)
				}
				if a, b := maxRowAsm(row), maxRowAVX2(row); a != b {
					t.Fatalf("maxRow: asm %v, archsimd %v", a, b)
				}
				mb := math.Float32bits(maxRowScalar(row))
				ref := append([]float32(nil), row...)
				want := expRowAVX2(ref, mb)
				got := expRowAsm(row, mb)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("sum: asm %v, archsimd %v", got, want)
				}
				for i := range row {
					if math.Float32bits(row[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("weight %d: asm %v, archsimd %v", i, row[i], ref[i])
					}
				}
			})
		}
	}
}
