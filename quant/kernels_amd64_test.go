package quant

import (
	"math/rand/v2"
	"testing"
)

// TestKernelTableSIMD: with F16C, the entries of the registry's codecs that have
// fused kernels take the shapes those are for (d = 64: dot, add and decode all
// report true), every row configuration of each such type.
func TestKernelTableSIMD(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C: the fused kernels do not run")
	}
	fused := map[string]bool{"f32": true, "f16": true, "bf16": true, "q8": true, "fp8e4m3": true, "fp8e5m2": true, "q4": true, "q2": true, "kivi8": true, "kivi4": true, "kivi2": true}
	r := rand.New(rand.NewPCG(41, 42))
	const d, n, g = 64, 4, 1
	for _, e := range Registry() {
		if !fused[e.Name] {
			continue
		}
		delete(fused, e.Name)
		codecs := entryRowCodecs(e)
		if len(codecs) == 0 {
			t.Errorf("%s: no row codecs", e.Name)
		}
		for _, c := range codecs {
			k := kernelsOf(c)
			rb := c.RowBytes(d)
			src := make([]byte, n*rb)
			for i := range n {
				c.Encode(src[i*rb:][:rb], gaussRow(r, d, 1))
			}
			tmp := make([]float32, ScratchFloats(d))
			scores, acc, w := make([]float32, n), make([]float32, d), []float32{1, 1, 1, 1}
			if k.dot == nil || !k.dot(c, scores, n, gaussRow(r, d, 1), g, src, rb, n, d, tmp) {
				t.Errorf("%s: no fused dot for d = %d", c.Name(), d)
			}
			if k.add == nil || !k.add(c, acc, w, n, g, src, rb, n, d, tmp) {
				t.Errorf("%s: no fused add for d = %d", c.Name(), d)
			}
			if k.decode == nil || !k.decode(c, make([]float32, n*d), src, rb, n, d) {
				t.Errorf("%s: no SIMD decoder for d = %d", c.Name(), d)
			}
		}
	}
	for name := range fused {
		t.Errorf("%s: not in the registry", name)
	}
}
