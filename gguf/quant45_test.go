package gguf

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestQuantize45 checks QuantizeQ4_0 and QuantizeQ5_0 through the decoders: the value
// of largest magnitude decodes to itself up to the f16 rounding of d (it is code 0),
// every value lies within d/2 of its decoding (plus the clamp at the top code: up to
// d), an all-zero block decodes to zeros, and bad lengths and non-finite values are
// rejected with errors naming them.
func TestQuantize45(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 45))
	for _, tc := range []struct {
		t     TensorType
		quant func([]byte, []float32) error
		bytes int
	}{{TypeQ4_0, QuantizeQ4_0, 18}, {TypeQ5_0, QuantizeQ5_0, 22}} {
		x := make([]float32, 32*40)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(i/32%7)-3))
		}
		clear(x[32:64]) // an all-zero block
		b := make([]byte, 40*tc.bytes)
		if err := tc.quant(b, x); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(x))
		if err := Dequantize(tc.t, got, b); err != nil {
			t.Fatal(err)
		}
		for blk := range 40 {
			v, g := x[32*blk:32*blk+32], got[32*blk:32*blk+32]
			var amax float64
			for _, f := range v {
				amax = max(amax, math.Abs(float64(f)))
			}
			d := float64(F16ToF32(uint16(b[blk*tc.bytes]) | uint16(b[blk*tc.bytes+1])<<8))
			for j := range v {
				if err := math.Abs(float64(v[j]) - float64(g[j])); err > math.Abs(d)*1.001+amax*1e-3 {
					t.Fatalf("%v block %d value %d: %v decodes to %v (d %v)", tc.t, blk, j, v[j], g[j], d)
				}
				if math.Abs(float64(v[j])) == amax && amax > 0 && math.Abs(float64(g[j])-float64(v[j])) > amax*1e-3 {
					t.Fatalf("%v block %d: largest value %v decodes to %v", tc.t, blk, v[j], g[j])
				}
			}
		}
		for j := 32; j < 64; j++ {
			if got[j] != 0 {
				t.Fatalf("%v: zero block decodes to %v at %d", tc.t, got[j], j)
			}
		}
		if err := tc.quant(make([]byte, tc.bytes), make([]float32, 31)); err == nil {
			t.Errorf("%v: 31 values accepted", tc.t)
		}
		if err := tc.quant(make([]byte, tc.bytes-1), make([]float32, 32)); err == nil {
			t.Errorf("%v: short destination accepted", tc.t)
		}
		bad := make([]float32, 64)
		bad[37] = float32(math.Inf(-1))
		if err := tc.quant(make([]byte, 2*tc.bytes), bad); err == nil || !strings.Contains(err.Error(), "value 37") {
			t.Errorf("%v: -Inf: %v", tc.t, err)
		}
	}
}
