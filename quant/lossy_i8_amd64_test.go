//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestQuantQueryI8 checks the assembly quantizer against quantQueryI8Go bit for bit
// (codes in each code order, d_k and d_k·Σq̂ at their strides, nothing written past
// them), over group sizes, group counts, magnitudes from 1e-37 (taken as zero) to
// 1e30, zero groups and lone values, and that each value's round trip is within d_k/2
// of it; a NaN or infinite value makes its group's d_k NaN in both.
func TestQuantQueryI8(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const guard = -777
	for _, c := range []struct{ bits, gs int }{{4, 32}, {4, 64}, {4, 128}, {2, 32}, {2, 64}} {
		bits, gs := c.bits, c.gs
		for _, np := range []int{1, 2, 3, 4} {
			for _, amp := range []float64{1e-37, 1e-30, 1e-3, 1, 1e30} {
				for _, shape := range []string{"gauss", "zero group", "lone value", "nan", "inf"} {
					name := fmt.Sprintf("bits=%d/gs=%d/np=%d/amp=%g/%s", bits, gs, np, amp, shape)
					q := gaussRow(r, np*gs, amp)
					switch shape {
					case "zero group":
						clear(q[(np-1)*gs:])
					case "lone value":
						clear(q)
						q[r.IntN(len(q))] = float32(-amp)
					case "nan":
						q[(np-1)*gs+r.IntN(gs)] = float32(math.NaN())
					case "inf":
						q[(np-1)*gs+r.IntN(gs)] = float32(math.Inf(1))
					}
					want8, wantf := make([]int8, np*gs), make([]float32, 2*np)
					quantQueryI8Go(want8, wantf, q, np, gs, bits)
					// The factors four floats apart (a query's slot in a quad's table).
					got8 := make([]int8, np*gs+32)
					for i := range got8 {
						got8[i] = 99
					}
					gotf := constRow(8*np+1, guard)
					quantQueryI8(unsafe.Pointer(&got8[0]), unsafe.Pointer(&gotf[0]), unsafe.Pointer(&q[0]), np, gs, bits, 32, 16)
					if shape == "nan" || shape == "inf" {
						// The last group's codes are unspecified; its d_k is NaN, so
						// every score is. The other groups are as usual.
						k := np - 1
						if !math.IsNaN(float64(gotf[8*k])) || !math.IsNaN(float64(wantf[2*k])) {
							t.Fatalf("%s: d of the group with a non-finite value = %v (Go twin %v), want NaN", name, gotf[8*k], wantf[2*k])
						}
						for i := range k * gs {
							if got8[i] != want8[i] {
								t.Fatalf("%s: code %d = %d, want %d", name, i, got8[i], want8[i])
							}
						}
						continue
					}
					for i := range want8 {
						if got8[i] != want8[i] {
							t.Fatalf("%s: code %d = %d, want %d", name, i, got8[i], want8[i])
						}
					}
					if got8[np*gs] != 99 {
						t.Fatalf("%s: codes written past np·gs", name)
					}
					for k := range np {
						if !sameBits(gotf[8*k], wantf[2*k]) || !sameBits(gotf[8*k+4], wantf[2*k+1]) {
							t.Fatalf("%s: group %d factors (%v, %v), want (%v, %v)", name, k, gotf[8*k], gotf[8*k+4], wantf[2*k], wantf[2*k+1])
						}
						for _, i := range []int{1, 2, 3, 5, 6, 7} {
							if gotf[8*k+i] != guard {
								t.Fatalf("%s: factor table written at %d", name, 8*k+i)
							}
						}
					}
					if gotf[8*np] != guard {
						t.Fatalf("%s: factor table written past its groups", name)
					}
					rt := roundTripI8(q, gs)
					for c := range q {
						d := float64(wantf[2*(c/gs)])
						if d == 0 {
							d = 0x1p-119 // below 2^-120 a group is taken as zero
						}
						if e := math.Abs(float64(q[c]) - float64(rt[c])); e > d/2*(1+1e-6) {
							t.Fatalf("%s: value %d = %v round-trips to %v, off by more than d/2 = %v", name, c, q[c], rt[c], d/2)
						}
					}
				}
			}
		}
	}
}
