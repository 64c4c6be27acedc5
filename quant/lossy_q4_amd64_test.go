//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// q4Groups returns the group sizes the fused kernels take for rows of d values:
// every multiple of 16 that divides d, and 0 (the whole row).
func q4Groups(d int) []int {
	gs := []int{0}
	for g := 16; g < d; g += 16 {
		if d%g == 0 {
			gs = append(gs, g)
		}
	}
	return gs
}

// TestLossyQ4Rows checks the four-query span kernels through fusedDotRowsLossy and
// fusedAddRowsLossy (F16C on: no param table) against float64 products with the
// decoded rows (scores: with the int8 round trip of the queries where the integer
// kernels take the rows), for every Affine width and group size the kernels take, head sizes
// 16 to 256, query counts that leave 0 to 3 queries over the quads, spans of 1 to
// 130 rows at strides past the row, and guards around the scores and accumulators.
// With the ZMM kernels and without, where the CPU has them (zmmModes).
func TestLossyQ4Rows(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C")
	}
	defer setZMM(setZMM(true))
	for _, z := range zmmModes() {
		setZMM(z)
		t.Run(fmt.Sprintf("zmm=%v", z), testLossyQ4Rows)
	}
}

func testLossyQ4Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const guard = -777
	for _, bits := range []int{8, 4, 2} {
		for _, d := range []int{16, 32, 48, 64, 128, 256} {
			for _, gsz := range q4Groups(d) {
				c := Affine{Bits: bits, Group: gsz}
				for _, g := range []int{3, 4, 5, 7, 8, 12} {
					for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 130} {
						if n > 9 && d > 64 && g != 5 {
							continue // long spans at the larger heads: one query count suffices
						}
						name := fmt.Sprintf("%s/d=%d/g=%d/n=%d", c.Name(), d, g, n)
						src, stride, dec := lossyCase(r, c, n, d)
						ld := n + 3
						q := gaussRow(r, g*d, 1)
						w := gaussRow(r, (g-1)*ld+n, 1)
						acc0 := gaussRow(r, g*d, 1)
						rowMax := make([]float64, n)
						for i := range n {
							for _, x := range dec[i*d : (i+1)*d] {
								rowMax[i] = math.Max(rowMax[i], math.Abs(float64(x)))
							}
						}
						tmp := make([]float32, ScratchFloats(d))
						scores := constRow((g-1)*ld+n+5, guard)
						if !fusedDotRowsLossy(c, scores, ld, q, g, src, stride, n, d, tmp) {
							t.Fatalf("%s: dot not fused", name)
						}
						acc := append(append([]float32(nil), acc0...), guard, guard)
						if !fusedAddRowsLossy(c, acc[:g*d], w, ld, g, src, stride, n, d, tmp) {
							t.Fatalf("%s: add not fused", name)
						}
						qk := q
						if i8Query(c, d) {
							qk = roundTripI8(q, 32)
						}
						for j := range g {
							for i := range ld {
								if j*ld+i >= len(scores) {
									break
								}
								got := scores[j*ld+i]
								if i >= n {
									if got != guard {
										t.Fatalf("%s: score (%d,%d) past the rows written", name, j, i)
									}
									continue
								}
								var want, mag float64
								for x := range d {
									want += float64(qk[j*d+x]) * float64(dec[i*d+x])
									mag += math.Abs(float64(qk[j*d+x])) * 2 * rowMax[i]
								}
								if math.Abs(float64(got)-want) > 2e-6*mag+1e-30 {
									t.Fatalf("%s: score (%d,%d) = %v, want %v", name, j, i, got, want)
								}
							}
							round := addRoundBound(tableRounding(c, d), w[j*ld:j*ld+n], rowMax) // the integer value kernels' rounding
							for x := range d {
								want, mag := float64(acc0[j*d+x]), math.Abs(float64(acc0[j*d+x]))
								for i := range n {
									want += float64(w[j*ld+i]) * float64(dec[i*d+x])
									mag += math.Abs(float64(w[j*ld+i])) * 2 * rowMax[i]
								}
								if got := acc[j*d+x]; math.Abs(float64(got)-want) > 2e-6*mag+round+1e-30 {
									t.Fatalf("%s: acc (%d,%d) = %v, want %v", name, j, x, got, want)
								}
							}
						}
						if acc[g*d] != guard || acc[g*d+1] != guard {
							t.Fatalf("%s: accumulator written past g·d", name)
						}
					}
				}
			}
		}
	}
}

// TestChannelQ4 checks dotChannelAsm (the four-query Plain kernels, and rowsPlain for
// one or two queries left over) against float64 products with the decoded KIVI key
// block, for query counts 1 to 12, token ranges of 1 to 65 tokens and head sizes 16
// to 256, with guards past each query's scores.
func TestChannelQ4(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	const guard = -777
	for _, bits := range []int{8, 4, 2} {
		c := Channel{Bits: bits}
		for _, tt := range []int{1, 7, 65} {
			for _, d := range []int{16, 48, 64, 256} {
				src := make([]float32, 0, tt*d)
				for range tt {
					src = append(src, lossyRowKinds[r.IntN(len(lossyRowKinds))](r, d)...)
				}
				block := make([]byte, c.BlockBytes(tt, d))
				c.Encode(block, src, tt, d)
				dec := make([]float32, tt*d)
				c.Decode(dec, block, tt, d)
				colMax := make([]float64, d)
				for i, v := range dec {
					colMax[i%d] = math.Max(colMax[i%d], math.Abs(float64(v)))
				}
				for _, g := range []int{1, 2, 3, 4, 5, 6, 7, 8, 12} {
					q := gaussRow(r, g*d, 1)
					for _, rg := range [][2]int{{0, tt}, {tt / 2, tt}, {0, min(tt, 3)}, {tt - 1, tt}} {
						i0, i1 := rg[0], rg[1]
						if i0 >= i1 {
							continue
						}
						name := fmt.Sprintf("%s t=%d d=%d g=%d rows %d..%d", c.Name(), tt, d, g, i0, i1)
						m, ld := i1-i0, i1-i0+2
						scores := constRow((g-1)*ld+m+2, guard)
						tmp := make([]float32, g*d+2*d+g+4)
						if !dotChannelAsm(c, scores, ld, q, g, block, tt, d, i0, i1, tmp) {
							t.Fatalf("%s: not fused", name)
						}
						for j := range g {
							ref := make([]float64, tt)
							channelScores(c, ref, q[j*d:(j+1)*d], block, tt, d, chanMode(c, d))
							for i := range ld {
								if j*ld+i >= len(scores) {
									break
								}
								got := scores[j*ld+i]
								if i >= m {
									if got != guard {
										t.Fatalf("%s: score (%d,%d) past the range written", name, j, i)
									}
									continue
								}
								want, mag := ref[i0+i], 0.0
								for x := range d {
									mag += math.Abs(float64(q[j*d+x])) * 2 * colMax[x]
								}
								if math.Abs(float64(got)-want) > 2e-6*mag+1e-30 {
									t.Fatalf("%s: score (%d,%d) = %v, want %v", name, j, i, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestAddQ4ZKernels: the ZMM add kernels give addU4Q4W's and addU2Q4W's sums bit for
// bit (NaN for NaN), for groups of 32 and 64, every row count that one call takes
// (1–64) in a sample, rows of mixed kinds (lossyRowKinds) at a stride larger than
// the row, four queries or three with the last repeated, weights that are
// softmax-like or Gaussian, one query's with a NaN; and write nothing past the columns.
func TestAddQ4ZKernels(t *testing.T) {
	if !haveAVX512F {
		t.Skip("the kernels need AVX-512F")
	}
	r := rand.New(rand.NewPCG(71, 72))
	const guard = -555
	for _, bits := range []int{4, 2} {
		for _, gs := range []int{32, 64} {
			c := Affine{Bits: bits, Group: gs}
			for _, d := range []int{64, 128} {
				lg, ok := lossyGeomOf(c, d)
				if !ok {
					t.Fatalf("%s d=%d: no lossy geometry", c.Name(), d)
				}
				for _, n := range []int{1, 2, 3, 4, 5, 17, 31, 63, 64} {
					for _, rep := range []bool{false, true} {
						name := fmt.Sprintf("%s/d=%d/n=%d/repeat=%v", c.Name(), d, n, rep)
						src, stride, _ := lossyCase(r, c, n, d)
						w := make([]float32, 4*n)
						for i := range w {
							w[i] = float32(math.Exp(-4 * r.Float64()))
							if i >= 2*n {
								w[i] = float32(r.NormFloat64())
							}
						}
						w[n%4*n+r.IntN(n)] = float32(math.NaN()) // query n mod 4's sums all NaN
						// Z's accumulators, then W's: four queries' d columns and a guard.
						a := make([][]float32, 2)
						for k := range a {
							a[k] = make([]float32, 4*d+1)
							for i := range a[k] {
								a[k][i] = float32(r.NormFloat64())
							}
							a[k][4*d] = guard
						}
						copy(a[1], a[0])
						for k, kern := range []func(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr){lg.k.addQ4Z, lg.k.addQ4W} {
							p := func(q int) (unsafe.Pointer, unsafe.Pointer) {
								if rep && q == 3 {
									q = 2
								}
								return unsafe.Pointer(&a[k][q*d]), unsafe.Pointer(&w[q*n])
							}
							a0, w0 := p(0)
							a1, w1 := p(1)
							a2, w2 := p(2)
							a3, w3 := p(3)
							kern(a0, a1, a2, a3, w0, w1, w2, w3, unsafe.Pointer(&src[0]), uintptr(stride), n, d/16, uintptr(gs), lg.gb)
						}
						if a[0][4*d] != guard {
							t.Fatalf("%s: written past the columns", name)
						}
						for i := range 4 * d {
							if z, y := a[0][i], a[1][i]; math.Float32bits(z) != math.Float32bits(y) && !(z != z && y != y) {
								t.Fatalf("%s: query %d column %d = %v, addQ4W %v", name, i/d, i%d, z, y)
							}
						}
					}
				}
			}
		}
	}
}
