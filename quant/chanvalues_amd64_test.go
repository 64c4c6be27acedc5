package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// addChanCodesGo is the scalar twin of addChanCodes and of each query of
// addChanCodes4: per channel, the rows' weighted codes added in row order, one fused
// multiply-add each.
func addChanCodesGo(t, w []float32, codes []byte, n, rb, d, bits int) {
	row := make([]float32, d)
	for i := range n {
		decodeCodes(row, 0, 1, codes[i*rb:][:rb], bits)
		for c := range d {
			t[c] = float32(math.FMA(float64(w[i]), float64(row[c]), float64(t[c])))
		}
	}
}

// TestAddChanCodes checks addChanCodes, addChanCodes4 and chanFinish against their
// scalar twins bit for bit, over 8-, 4- and 2-bit codes, head sizes with and without
// whole groups of 32 channels and rows up to a block of 64.
func TestAddChanCodes(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C: the kernels do not run")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, bits := range []int{8, 4, 2} {
		for _, d := range []int{8, 24, 32, 64, 72, 128} {
			for _, n := range []int{1, 3, 32, 64} {
				rb := packedBytes(d, bits)
				codes := make([]byte, n*rb+rb) // a row past the last, which no kernel may read into the sums
				for i := range codes {
					codes[i] = byte(r.Uint32())
				}
				w := gaussRow(r, 4*n, 1)
				t0 := gaussRow(r, 4*d, 1)
				want := append([]float32(nil), t0...)
				for q := range 4 {
					addChanCodesGo(want[q*d:(q+1)*d], w[q*n:(q+1)*n], codes, n, rb, d, bits)
				}
				one := append([]float32(nil), t0...)
				for q := range 4 {
					addChanCodes(&one[q*d], &w[q*n], &codes[0], n, uintptr(rb), d, bits)
				}
				four := append([]float32(nil), t0...)
				addChanCodes4(&four[0], uintptr(4*d), &w[0], uintptr(4*n), &codes[0], n, uintptr(rb), d, bits)
				for i := range want {
					if math.Float32bits(one[i]) != math.Float32bits(want[i]) || math.Float32bits(four[i]) != math.Float32bits(want[i]) {
						t.Fatalf("bits %d d %d n %d: sum %d (query %d channel %d): one query %v, four %v, twin %v", bits, d, n, i, i/d, i%d, one[i], four[i], want[i])
					}
				}
				s, lo, a := gaussRow(r, d, 1), gaussRow(r, d, 3), gaussRow(r, d, 1)
				sw := float32(r.NormFloat64())
				got := append([]float32(nil), a...)
				chanFinish(&got[0], &s[0], &lo[0], &want[0], sw, d)
				for c := range d {
					u := float32(math.FMA(float64(s[c]), float64(want[c]), float64(lo[c]*sw)))
					if x := a[c] + u; math.Float32bits(got[c]) != math.Float32bits(x) {
						t.Fatalf("bits %d d %d: chanFinish channel %d = %v, twin %v", bits, d, c, got[c], x)
					}
				}
			}
		}
	}
}
