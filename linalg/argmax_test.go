package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgmaxKernels checks every kernel set's argmax against argmaxScalar on lengths
// around the SIMD blocks, with ties, signed zeros, infinities and NaNs (the value at
// 0 included), and with the maximum in the last values only.
func TestArgmaxKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nan := float32(math.NaN())
	palettes := []struct {
		name string
		vals []float32
	}{
		{"ties", []float32{-1, 0, 1, 2}},
		{"signed zeros", []float32{float32(math.Copysign(0, -1)), 0, -1}},
		{"infinities", []float32{float32(math.Inf(-1)), float32(math.Inf(1)), 3}},
		{"NaNs", []float32{nan, 1, 2, nan}},
		{"all NaN", []float32{nan}},
		{"all equal", []float32{5}},
		{"normal", nil},
	}
	lengths := []int{0, 1, 7, 8, 31, 32, 33, 39, 40, 63, 64, 65, 100, 1000, 32000}
	for _, k := range kernelModes(t) {
		t.Run(k.name, func(t *testing.T) {
			for _, p := range palettes {
				for _, n := range lengths {
					for trial := range 30 {
						x := make([]float32, n)
						for i := range x {
							if p.vals == nil {
								x[i] = float32(rng.NormFloat64())
							} else {
								x[i] = p.vals[rng.IntN(len(p.vals))]
							}
						}
						if trial == 1 && n > 0 {
							x[n-1] = 1e30 // the maximum in the tail
						}
						if got, want := k.argmax(x), argmaxScalar(x); got != want {
							t.Fatalf("%s, n=%d, trial %d: %d, scalar %d", p.name, n, trial, got, want)
						}
					}
				}
			}
		})
	}
}

func BenchmarkArgmax(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 32000) // a llama vocabulary's logits
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	sets := []*kernelSet{scalarKernels}
	if simdKernels != nil {
		sets = append(sets, simdKernels)
	}
	for _, k := range sets {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				k.argmax(x)
			}
		})
	}
}
