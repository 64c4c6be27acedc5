package kv

import (
	"math"
	"testing"
)

// TestAllFinite puts one NaN or infinity (or a largest finite value, which must pass)
// at every position of slices of lengths around allFinite's 8-value steps.
func TestAllFinite(t *testing.T) {
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001)}
	good := []float32{math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 0, float32(math.Copysign(0, -1))}
	for n := range 40 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i) - 7.5
		}
		if !allFinite(x) {
			t.Fatalf("n=%d: finite values reported non-finite", n)
		}
		for i := range n {
			for _, v := range good {
				old := x[i]
				x[i] = v
				if !allFinite(x) {
					t.Fatalf("n=%d: %v at %d reported non-finite", n, v, i)
				}
				x[i] = old
			}
			for _, v := range bad {
				old := x[i]
				x[i] = v
				if allFinite(x) {
					t.Fatalf("n=%d: %v at %d not found", n, v, i)
				}
				x[i] = old
			}
		}
	}
}

// BenchmarkCheckFinite scans the keys and values of a 16-sequence step of one
// layer: 16 rows of 768 values each side.
func BenchmarkCheckFinite(b *testing.B) {
	k := make([]float32, 16*768)
	v := make([]float32, 16*768)
	for i := range k {
		k[i], v[i] = float32(i%13)-6, float32(i%7)*0.5
	}
	for b.Loop() {
		if err := checkFinite(k, v, 0, 12, 64); err != nil {
			b.Fatal(err)
		}
	}
}
