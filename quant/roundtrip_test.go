package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundTripBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	rows, cols := 9, 33
	src := gaussRow(r, rows*cols, 3)
	for bits := 1; bits <= 16; bits++ {
		for _, axis := range []Axis{ByRow, ByColumn} {
			dst := make([]float32, len(src))
			if err := RoundTrip(dst, src, rows, cols, bits, axis); err != nil {
				t.Fatal(err)
			}
			groups, length := rows, cols
			if axis == ByColumn {
				groups, length = cols, rows
			}
			for g := range groups {
				idx := func(k int) int {
					if axis == ByRow {
						return g*cols + k
					}
					return k*cols + g
				}
				lo, hi := math.Inf(1), math.Inf(-1)
				for k := range length {
					lo = math.Min(lo, float64(src[idx(k)]))
					hi = math.Max(hi, float64(src[idx(k)]))
				}
				step := (hi - lo) / float64(int(1)<<bits-1)
				for k := range length {
					i := idx(k)
					if e := math.Abs(float64(dst[i] - src[i])); e > step/2+1e-6 {
						t.Fatalf("bits %d %v: element %d error %g > step/2 %g", bits, axis, i, e, step/2)
					}
				}
			}
		}
	}
}

// TestErrorShrinksWithBits: 2 > 4 > 8 > 16 bits, for RoundTrip by row and by column,
// for Affine and Channel codecs.
func TestErrorShrinksWithBits(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	const rows, cols = 64, 128
	src := gaussRow(r, rows*cols, 1)
	rmse := func(dec []float32) float64 {
		var e float64
		for i := range src {
			e += sq(float64(dec[i] - src[i]))
		}
		return math.Sqrt(e / float64(len(src)))
	}
	for _, axis := range []Axis{ByRow, ByColumn} {
		prev := math.Inf(1)
		for _, bits := range []int{2, 4, 8, 16} {
			dst := make([]float32, len(src))
			if err := RoundTrip(dst, src, rows, cols, bits, axis); err != nil {
				t.Fatal(err)
			}
			e := rmse(dst)
			t.Logf("round trip by %v, %2d bits: RMSE %.3g", axis, bits, e)
			if !(e < prev/3) {
				t.Errorf("by %v: %d bits RMSE %g not well below %g", axis, bits, e, prev)
			}
			prev = e
		}
	}
	for _, g := range []int{0, 32} {
		prev := math.Inf(1)
		for _, bits := range []int{2, 4, 8} {
			c := Affine{Bits: bits, Group: g}
			dec := make([]float32, len(src))
			row := make([]byte, c.RowBytes(cols))
			for i := range rows {
				c.Encode(row, src[i*cols:(i+1)*cols])
				c.Decode(dec[i*cols:(i+1)*cols], row)
			}
			e := rmse(dec)
			t.Logf("%s: RMSE %.3g", c.Name(), e)
			if !(e < prev/3) {
				t.Errorf("%s: RMSE %g not well below %g", c.Name(), e, prev)
			}
			prev = e
		}
		if e := rmse(f16RoundTrip(src)); !(e < prev/3) {
			t.Errorf("f16 RMSE %g not well below 8-bit %g", e, prev)
		}
	}
	prev := math.Inf(1)
	for _, bits := range []int{2, 4, 8} {
		c := Channel{Bits: bits}
		blk := make([]byte, c.BlockBytes(rows, cols))
		c.Encode(blk, src, rows, cols)
		dec := make([]float32, len(src))
		c.Decode(dec, blk, rows, cols)
		e := rmse(dec)
		t.Logf("%s: RMSE %.3g", c.Name(), e)
		if !(e < prev/3) {
			t.Errorf("%s: RMSE %g not well below %g", c.Name(), e, prev)
		}
		prev = e
	}
}

func f16RoundTrip(src []float32) []float32 {
	out := make([]float32, len(src))
	for i, x := range src {
		out[i] = F16ToF32(F32ToF16(x))
	}
	return out
}

func TestRoundTripErrors(t *testing.T) {
	ok := make([]float32, 6)
	cases := []struct {
		name             string
		dst, src         []float32
		rows, cols, bits int
		axis             Axis
	}{
		{"bits 0", ok, ok, 2, 3, 0, ByRow},
		{"bits 17", ok, ok, 2, 3, 17, ByRow},
		{"negative rows", ok, ok, -2, -3, 4, ByRow},
		{"short src", ok, ok[:5], 2, 3, 4, ByRow},
		{"short dst", ok[:5], ok, 2, 3, 4, ByRow},
		{"bad axis", ok, ok, 2, 3, 4, Axis(9)},
		{"NaN", ok, []float32{0, 1, float32(math.NaN()), 0, 0, 0}, 2, 3, 4, ByRow},
		{"Inf", ok, []float32{0, 1, 0, float32(math.Inf(-1)), 0, 0}, 2, 3, 4, ByColumn},
	}
	for _, c := range cases {
		if err := RoundTrip(c.dst, c.src, c.rows, c.cols, c.bits, c.axis); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want an ErrInvalid", c.name, err)
		}
	}
	if err := RoundTrip(nil, nil, 0, 5, 4, ByRow); err != nil {
		t.Errorf("empty matrix: %v", err)
	}
	// In place, constant rows stay exact.
	x := []float32{2, 2, 2, -1, -1, -1}
	if err := RoundTrip(x, x, 2, 3, 3, ByRow); err != nil || x[0] != 2 || x[5] != -1 {
		t.Errorf("constant rows in place: %v %v", x, err)
	}
}
