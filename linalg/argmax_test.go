package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgmax checks Argmax's contract with every kernel set (the reference included):
// the first of equal maxima, −0 equal to +0, NaNs never larger, x[0] when it is NaN,
// 0 for no values; at lengths below and past the SIMD blocks.
func TestArgmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	// long returns n values of −1 with the given values at the given indices.
	long := func(n int, at map[int]float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = -1
		}
		for i, v := range at {
			x[i] = v
		}
		return x
	}
	cases := []struct {
		name string
		x    []float32
		want int
	}{
		{"empty", nil, 0},
		{"one", []float32{3}, 0},
		{"first of equal maxima", []float32{1, 3, 3, 2}, 1},
		{"-0 then +0", []float32{negZero, 0}, 0},
		{"+0 then -0", []float32{0, negZero}, 0},
		{"NaN first", []float32{nan, 5, 7}, 0},
		{"NaN skipped", []float32{1, nan, 2}, 2},
		{"NaN not larger", []float32{1, nan, 0}, 0},
		{"all -Inf", []float32{-inf, -inf}, 0},
		{"+Inf", []float32{-inf, inf, 3}, 1},
		{"long, first of equal maxima", long(100, map[int]float32{70: 2, 90: 2, 95: 1}), 70},
		{"long, maximum in the tail", long(33, map[int]float32{32: 4}), 32},
		{"long, NaN first", long(64, map[int]float32{0: nan, 40: 9}), 0},
		{"long, NaNs skipped", long(64, map[int]float32{3: nan, 40: nan, 41: 9}), 41},
		{"long, -0 then +0 maxima", long(40, map[int]float32{35: negZero, 36: 0}), 35},
	}
	for _, k := range kernelModes(t) {
		for _, tc := range cases {
			if got := k.argmax(tc.x); got != tc.want {
				t.Errorf("%s, %s: %d, want %d", k.name, tc.name, got, tc.want)
			}
		}
	}
}

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
		if k == scalarKernels {
			continue // argmaxScalar itself (TestArgmax)
		}
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
