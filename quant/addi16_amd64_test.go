//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestAddI16Kernels checks addU4Q1I16 and addU2Q1I16 against their Go twin, addI16Go,
// over every block count up to the cap, rows of mixed kinds (lossyRowKinds: outliers,
// offsets, constant rows, the f16 range's edge, subnormal parameters), weights that
// are softmax-like (≥ 0, one large), Gaussian, with a NaN, with one product past the
// float32 range, or too small for code terms, at a row stride larger
// than the row, with guards around the 64 columns. The integer sums are exact in
// both; the float sums of the zero terms are in another order, so the tolerance is a
// few float32 roundings of the magnitudes summed.
func TestAddI16Kernels(t *testing.T) {
	if !haveF16C {
		t.Skip("the kernels widen f16 parameters with F16C")
	}
	r := rand.New(rand.NewPCG(61, 62))
	const guard = -777
	for _, bits := range []int{4, 2} {
		c := Affine{Bits: bits, Group: 32}
		kern := addU4Q1I16
		if bits == 2 {
			kern = addU2Q1I16
		}
		for nb := 1; nb <= addI16Blocks; nb++ {
			for _, wk := range []string{"softmax", "gauss", "nan", "huge", "tiny"} {
				name := fmt.Sprintf("%s/nb=%d/%s", c.Name(), nb, wk)
				n := 4 * nb
				src, stride, _ := lossyCase(r, c, n, 64)
				w := make([]float32, n)
				for i := range w {
					switch wk {
					case "softmax", "nan":
						w[i] = float32(math.Exp(-4 * r.Float64()))
					case "gauss", "huge":
						w[i] = float32(r.NormFloat64())
					case "tiny": // products near and below 2^-112, where code terms stop
						w[i] = float32(1e-39 * r.Float64())
					}
				}
				switch wk {
				case "nan":
					w[r.IntN(n)] = float32(math.NaN())
				case "huge": // a product past the float32 range: P is NaN
					w[r.IntN(n)] = 3e38
				}
				a0 := gaussRow(r, 64, 1)
				if wk == "tiny" {
					a0 = make([]float32, 64)
				}
				got := append(append(append([]float32{guard}, a0...), guard), guard)
				want := append([]float32(nil), a0...)
				lg, _ := lossyGeomOf(c, 64)
				kern(unsafe.Pointer(&got[1]), unsafe.Pointer(&w[0]), unsafe.Pointer(&src[lg.codeOff(0)]), uintptr(stride), nb, lg.gb)
				addI16Go(want, w, src, stride, int(lg.gb), n, bits)
				if got[0] != guard || got[65] != guard || got[66] != guard {
					t.Fatalf("%s: written outside the 64 columns", name)
				}
				for k := range 2 {
					var mag float64 // Σ|w·zero| + |w·scale|·levels: the zero and code terms' size
					for i := range n {
						row := src[uintptr(i*stride)+uintptr(k)*lg.gb:]
						mag += math.Abs(float64(w[i])) * (math.Abs(float64(getF16(row[2:]))) + math.Abs(float64(getF16(row)))*float64(int(1)<<bits-1))
					}
					for j := 32 * k; j < 32*(k+1); j++ {
						g, e := float64(got[1+j]), float64(want[j])
						if math.IsNaN(e) || math.IsNaN(g) {
							if math.IsNaN(e) != math.IsNaN(g) {
								t.Fatalf("%s: column %d = %v, twin %v", name, j, g, e)
							}
							continue
						}
						if tol := 4e-7*(mag+math.Abs(float64(a0[j]))) + 1e-37; math.Abs(g-e) > tol && !(math.IsInf(g, 0) && g == e) {
							t.Fatalf("%s: column %d = %v, twin %v (tolerance %g)", name, j, g, e, tol)
						}
					}
				}
			}
		}
	}
}
