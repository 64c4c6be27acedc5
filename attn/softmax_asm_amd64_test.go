//go:build amd64

package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/cpufeat"
)

// softmaxLens are row lengths around the vector width and the two-vector step of
// maxRowFMA, and longer rows with every remainder.
var softmaxLens = func() []int {
	var ns []int
	for n := 1; n <= 40; n++ {
		ns = append(ns, n)
	}
	return append(ns, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513)
}()

// TestMaxRowAsm checks maxRowAsm against maxRowScalar on random rows, rows with NaNs
// at random places (skipped by both), all-NaN rows, rows of −Inf and rows whose
// maximum sits in the last, re-read values.
func TestMaxRowAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(21, 22))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		name string
		fill func(row []float32)
	}{
		{"random", func(row []float32) {}},
		{"nans", func(row []float32) {
			for i := range row {
				if r.IntN(3) == 0 {
					row[i] = nan
				}
			}
			row[0] = nan
		}},
		{"allnan", func(row []float32) {
			for i := range row {
				row[i] = nan
			}
		}},
		{"neginf", func(row []float32) {
			for i := range row {
				row[i] = -inf
			}
		}},
		{"lastmax", func(row []float32) { row[len(row)-1] = 1000 }},
		{"firstmax", func(row []float32) { row[0] = 1000 }},
		{"posinf", func(row []float32) { row[r.IntN(len(row))] = inf }},
	}
	for _, c := range cases {
		for _, n := range softmaxLens {
			t.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(t *testing.T) {
				for rep := 0; rep < 4; rep++ {
					row := make([]float32, n)
					for i := range row {
						row[i] = float32(r.NormFloat64() * 30)
					}
					c.fill(row)
					got, want := maxRowAsm(row), maxRowScalar(row)
					if got != want && !(got != got && want != want) {
						t.Fatalf("maxRowAsm = %v, maxRowScalar = %v, row %v", got, want, row)
					}
				}
			})
		}
	}
}

// TestExpRowAsm checks expRowAsm against expRowScalar: every weight within float32
// rounding of the scalar one (exactly 0 where x−m < −87 in both), the sums within
// rounding of a float64 sum of the scalar weights, and the values around the row
// untouched.
func TestExpRowAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(23, 24))
	const guard = 8
	for _, k := range expRowKernels() {
		expRowAsm := k.f
		for _, n := range softmaxLens {
			for _, spread := range []float64{0.01, 3, 40, 300} {
				t.Run(fmt.Sprintf("%s/n=%d/spread=%g", k.name, n, spread), func(t *testing.T) {
					buf := make([]float32, n+2*guard)
					for i := range buf {
						buf[i] = -12345
					}
					row := buf[guard : guard+n]
					for i := range row {
						row[i] = float32(r.NormFloat64() * spread)
					}
					m := maxRowScalar(row)
					ref := append([]float32(nil), row...)
					want := expRowScalar(ref, math.Float32bits(m))
					got := expRowAsm(row, math.Float32bits(m))
					var sum float64
					for i, w := range ref {
						sum += float64(w)
						if g := row[i]; math.Abs(float64(g)-float64(w)) > 5e-7*float64(w) || (w == 0) != (g == 0) {
							t.Fatalf("weight %d: asm %v, scalar %v", i, g, w)
						}
					}
					if e := math.Abs(float64(got) - sum); e > 1e-6*sum*(1+float64(n)/16) {
						t.Fatalf("sum: asm %v, scalar %v, float64 sum of the scalar weights %v", got, want, sum)
					}
					for i := 0; i < guard; i++ {
						if buf[i] != -12345 || buf[len(buf)-1-i] != -12345 {
							t.Fatalf("write outside the row: buf[%d] = %v, buf[%d] = %v", i, buf[i], len(buf)-1-i, buf[len(buf)-1-i])
						}
					}
				})
			}
		}
	}
}

// TestExpRowAsmLimits checks exact points: e^0 = 1 at the maximum, 0 below −87, and
// the row's maximum weight is 1 whatever the tail length.
func TestExpRowAsmLimits(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	for _, k := range expRowKernels() {
		testExpRowLimits(t, k.name, k.f)
	}
}

func testExpRowLimits(t *testing.T, name string, expRowAsm func([]float32, uint32) float32) {
	for n := 8; n <= 40; n++ {
		row := make([]float32, n)
		for i := range row {
			row[i] = -100 - float32(i)
		}
		row[n-1] = 5
		row[n/2] = 5 - 86.5
		got := expRowAsm(row, math.Float32bits(5))
		want := 1 + exp32(-86.5)
		if row[n-1] != 1 || got != want {
			t.Fatalf("%s: n=%d: last weight %v (want 1), sum %v (want %v)", name, n, row[n-1], got, want)
		}
		for i, w := range row {
			if i != n-1 && i != n/2 && w != 0 {
				t.Fatalf("%s: n=%d: weight %d of x−m = %v is %v, want 0", name, n, i, -105-float32(i), w)
			}
		}
	}
}

// expRowKernels are the assembly exp kernels of this CPU: expRowAsm, and with
// AVX-512F expRowAsmZ.
func expRowKernels() []struct {
	name string
	f    func([]float32, uint32) float32
} {
	ks := []struct {
		name string
		f    func([]float32, uint32) float32
	}{{"ymm", expRowAsm}}
	if cpufeat.AVX512F {
		ks = append(ks, struct {
			name string
			f    func([]float32, uint32) float32
		}{"zmm", expRowAsmZ})
	}
	return ks
}

// TestExpRowZ checks that expRowZ's weights are expRowFMA's bit for bit (NaN for
// NaN), on rows of 16 to 300 values with values far below the maximum (weights 0),
// exactly 87 below it, −Inf and NaN among them, and its sum within rounding of
// expRowFMA's.
func TestExpRowZ(t *testing.T) {
	if !cpufeat.AVX512F {
		t.Skip("CPU without AVX-512F")
	}
	r := rand.New(rand.NewPCG(25, 26))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for n := 16; n <= 300; n += 1 + n/40 {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(r.NormFloat64() * 30)
			switch r.IntN(40) {
			case 0:
				row[i] = nan
			case 1:
				row[i] = -inf
			case 2:
				row[i] = -200
			case 3:
				row[i] = 200 - 87 // x − m = −87 exactly: the last weight above 0
			}
		}
		row[r.IntN(n)] = 200
		m := maxRowScalar(row)
		want := append([]float32(nil), row...)
		ws := expRowFMA(&want[0], n, math.Float32bits(m))
		got := append([]float32(nil), row...)
		gs := expRowZ(&got[0], n, math.Float32bits(m))
		for i := range got {
			if g, w := got[i], want[i]; math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				t.Fatalf("n=%d: weight %d of x = %v: expRowZ %v, expRowFMA %v", n, i, row[i], g, w)
			}
		}
		if gs != gs || ws != ws {
			continue // a NaN value: both sums NaN (checked against the reference in TestExpRowAsm)
		}
		if math.Abs(float64(gs)-float64(ws)) > 1e-6*float64(ws) {
			t.Fatalf("n=%d: sum expRowZ %v, expRowFMA %v", n, gs, ws)
		}
	}
}
