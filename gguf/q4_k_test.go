package gguf

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestQuantizeQ4_K: every value decodes to within half a step (d·sc of its
// sub-block) of itself, on blocks that stress the 6-bit scales and minimums.
func TestQuantizeQ4_K(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	fill := func(f func(i int) float32) []float32 {
		x := make([]float32, 512)
		for i := range x {
			x[i] = f(i)
		}
		return x
	}
	for _, tc := range []struct {
		name string
		x    []float32
	}{
		{"normal", fill(func(int) float32 { return float32(r.NormFloat64() * 0.05) })},
		{"zeros", fill(func(int) float32 { return 0 })},
		{"constant positive", fill(func(int) float32 { return 0.25 })},
		{"all negative", fill(func(int) float32 { return -0.1 - float32(r.Float64()) })},
		{"sub-block ranges 1000x apart", fill(func(i int) float32 {
			return float32(r.NormFloat64()) * float32(math.Pow(10, float64(i/32%4)-3))
		})},
		{"tiny", fill(func(int) float32 { return float32(r.NormFloat64() * 1e-6) })},
		{"large", fill(func(int) float32 { return float32(r.NormFloat64() * 1e4) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := make([]byte, len(tc.x)/256*144)
			if err := QuantizeQ4_K(enc, tc.x); err != nil {
				t.Fatal(err)
			}
			dec := make([]float32, len(tc.x))
			if err := Dequantize(TypeQ4_K, dec, enc); err != nil {
				t.Fatal(err)
			}
			for i, v := range tc.x {
				blk := enc[i/256*144:]
				sc, _ := scaleMinK4(i%256/32, blk[4:16])
				step := float64(f16At(blk[0:])) * float64(sc)
				if err := math.Abs(float64(dec[i]) - float64(v)); err > 0.5*step*(1+1e-3)+1e-30 {
					t.Fatalf("value %d: %v decodes to %v, off by %.3g; half a step is %.3g", i, v, dec[i], err, step/2)
				}
			}
		})
	}
}

func TestQuantizeQ4_KErrors(t *testing.T) {
	x := make([]float32, 256)
	for _, tc := range []struct {
		name string
		dst  []byte
		src  []float32
		want string
	}{
		{"not whole super-blocks", make([]byte, 144), make([]float32, 255), "multiple of 256"},
		{"short destination", make([]byte, 143), x, "destination has 143 bytes"},
		{"NaN", make([]byte, 144), append(make([]float32, 7), append([]float32{float32(math.NaN())}, make([]float32, 248)...)...), "value 7 is NaN"},
		{"beyond binary16", make([]byte, 144), append([]float32{1e10}, make([]float32, 255)...), "beyond binary16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := QuantizeQ4_K(tc.dst, tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
