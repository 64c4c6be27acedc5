//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"kvq/internal/cpufeat"
)

// TestQuantQueryI16 checks the assembly quantizer against quantQueryI16Go bit for bit
// (codes, then D, nothing written past them), over query lengths, magnitudes from
// 1e-37 (taken as zero) to 1e30, zero queries, lone values, outliers and queries
// below zero, and that each value's round trip is within D/2 of it (and float
// rounding); a NaN or infinite value makes D NaN in both.
func TestQuantQueryI16(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("no AVX2: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(43, 44))
	for _, d := range []int{16, 32, 64, 80, 128, 256} {
		for _, amp := range []float64{1e-37, 1e-31, 1e-3, 1, 1e30} {
			for _, shape := range []string{"gauss", "zero", "lone value", "outlier", "negative", "nan", "inf"} {
				name := fmt.Sprintf("d=%d/amp=%g/%s", d, amp, shape)
				q := gaussRow(r, d, amp)
				switch shape {
				case "zero":
					clear(q)
				case "lone value":
					clear(q)
					q[r.IntN(d)] = float32(-amp)
				case "outlier":
					q[r.IntN(d)] *= 1000
				case "negative": // all values below zero
					for i := range q {
						q[i] = -float32(math.Abs(float64(q[i])))
					}
				case "nan":
					q[r.IntN(d)] = float32(math.NaN())
				case "inf":
					q[r.IntN(d)] = float32(math.Inf(-1))
				}
				want := make([]int16, d)
				wantD := quantQueryI16Go(want, q)
				got := make([]int16, d+4) // codes, D (two int16s), guards
				got[d+2], got[d+3] = 99, 99
				quantQueryI16(unsafe.Pointer(&got[0]), unsafe.Pointer(&q[0]), d)
				gotD := *(*float32)(unsafe.Pointer(&got[d]))
				if shape == "nan" || shape == "inf" {
					// The codes are unspecified; D is NaN, so every score is.
					if !math.IsNaN(float64(gotD)) || !math.IsNaN(float64(wantD)) {
						t.Fatalf("%s: D = %v (Go twin %v), want NaN", name, gotD, wantD)
					}
					continue
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s: code %d = %d, want %d", name, i, got[i], want[i])
					}
				}
				if !sameBits(gotD, wantD) {
					t.Fatalf("%s: D = %v, want %v", name, gotD, wantD)
				}
				if got[d+2] != 99 || got[d+3] != 99 {
					t.Fatalf("%s: written past D", name)
				}
				rt := roundTripI16(q, d)
				half := float64(wantD) / 2
				if wantD == 0 {
					half = 0x1p-111 // below 2^-110 a query is taken as zero
				}
				for c := range q {
					// D/2, plus float32 rounding of q·inv and D·q̂ (up to 32767·D).
					if e := math.Abs(float64(q[c]) - float64(rt[c])); e > half+math.Abs(float64(q[c]))*0x1p-22 {
						t.Fatalf("%s: value %d = %v round-trips to %v, off by more than D/2 = %v", name, c, q[c], rt[c], half)
					}
				}
			}
		}
	}
}

// TestDotRowsI16Extremes scores Int8 rows whose codes are all ±127, and crafted rows
// of -128, against a query of equal values (every code ±32767): the largest integer
// sums the int16 kernel can meet, at head sizes up to maxI16Dim and past it (where the
// rows go elsewhere). The scores must match the decoded rows against ScoredQuery.
func TestDotRowsI16Extremes(t *testing.T) {
	c := Int8{}
	for _, d := range []int{16, 512, 528, 768, 1024, 2064} {
		for _, kind := range []string{"+127", "-127", "-128"} {
			row := make([]byte, c.RowBytes(d))
			x := make([]float32, d)
			for i := range x {
				x[i] = 1
				if kind != "+127" {
					x[i] = -1
				}
			}
			c.Encode(row, x)
			if kind == "-128" {
				for i := 2; i < len(row); i++ {
					row[i] = 0x80
				}
			}
			dec := make([]float32, d)
			c.Decode(dec, row)
			const n = 5
			rows := make([]byte, 0, n*len(row))
			for range n {
				rows = append(rows, row...)
			}
			q := constRow(d, 1)
			qk := ScoredQuery(c, q, d)
			var want float64
			for i := range d {
				want += float64(qk[i]) * float64(dec[i])
			}
			scores := make([]float32, n)
			DotRows(c, scores, n, q, 1, rows, len(row), n, make([]float32, ScratchFloats(d)))
			for i, s := range scores {
				if math.Abs(float64(s)-want) > 1e-5*math.Abs(want) {
					t.Errorf("d=%d rows %s: score %d = %v, want %v", d, kind, i, s, want)
				}
			}
		}
	}
}
