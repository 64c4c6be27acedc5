//go:build amd64 && goexperiment.simd

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// lossyAsmPairs are the assembly kernels of lossy_asm_amd64.s with the archsimd
// kernels they replace.
var lossyAsmPairs = []struct {
	bits            int
	rows4, ref4     func(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)
	add1, ref1      func(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)
	q4, refQ4       func(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr)
	addQ4, refAddQ4 func(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int)
}{
	{4, dotU4Rows4asm, dotU4Rows4, addU4Q1asm, addU4Q1, dotU4Q4asm, dotU4Q4, addU4Q4asm, addU4Q4},
	{2, dotU2Rows4asm, dotU2Rows4, addU2Q1asm, addU2Q1, dotU2Q4asm, dotU2Q4, addU2Q4asm, addU2Q4},
}

// asmGuard is the bit pattern around the kernels' outputs.
const asmGuard = 0x7fc0dead

// codeVal returns code c (bits wide) of the packed codes at b.
func codeVal(b []byte, c, bits int) float64 {
	per := 8 / bits
	return float64(b[c/per] >> (uint(c%per) * uint(bits)) & (1<<bits - 1))
}

// TestLossyAsmRows4 compares the assembly rows4 kernels with the archsimd ones on
// random codes, queries and scales: groups of 16, 32 and 64 values, 1 to 5 groups,
// rows strided past their length, some rows repeated.
func TestLossyAsmRows4(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range lossyAsmPairs {
		for _, gs := range []int{16, 32, 64} {
			for _, np := range []int{1, 2, 3, 5} {
				for _, rep := range []bool{false, true} {
					name := fmt.Sprintf("u%d/gs=%d/np=%d/rep=%v", k.bits, gs, np, rep)
					d := gs * np
					gb := 4 + gs*k.bits/8
					stride := np*gb + 4 + r.IntN(13)
					src := make([]byte, 3*stride+np*gb)
					for i := range src {
						src[i] = byte(r.Uint32())
					}
					q := gaussRow(r, d, 1)
					mm := 8 + 8*r.IntN(2) // rows of the param table
					stM := 4 * mm
					tab := make([]float32, np*mm)
					for i := range tab {
						tab[i] = float32(r.NormFloat64() * 0.01)
					}
					rowOff := [4]int{0, stride, 2 * stride, 3 * stride}
					if rep {
						rowOff = [4]int{0, stride, stride, stride}
					}
					var got, want [6]uint32
					for i := range got {
						got[i], want[i] = asmGuard, asmGuard
					}
					sp := unsafe.Pointer(&src[4]) // past the first group's header
					ps := [4]unsafe.Pointer{}
					for j := range ps {
						ps[j] = unsafe.Add(sp, rowOff[j])
					}
					qp, tp := unsafe.Pointer(&q[0]), unsafe.Pointer(&tab[0])
					k.rows4((*[4]uint32)(got[1:5]), qp, ps[0], ps[1], ps[2], ps[3], tp, uintptr(stM), np, uintptr(gs), uintptr(gb))
					k.ref4((*[4]uint32)(want[1:5]), qp, ps[0], ps[1], ps[2], ps[3], tp, uintptr(stM), np, uintptr(gs), uintptr(gb))
					if got[0] != asmGuard || got[5] != asmGuard {
						t.Fatalf("%s: guards overwritten: %#x %#x", name, got[0], got[5])
					}
					for j := range 4 {
						// The magnitude of the sum, and the decoded reference in float64.
						var mag, ref float64
						row := src[4+rowOff[j]:]
						for c := range d {
							kk := c / gs
							s := float64(tab[kk*mm+j])
							v := s * float64(q[c]) * codeVal(row[kk*gb:], c%gs, k.bits)
							ref += v
							mag += math.Abs(v)
						}
						g, w := float64(math.Float32frombits(got[1+j])), float64(math.Float32frombits(want[1+j]))
						if math.Abs(g-w) > 4e-6*mag || math.Abs(g-ref) > 4e-6*mag {
							t.Errorf("%s row %d: asm %g, archsimd %g, reference %g (magnitude %g)", name, j, g, w, ref, mag)
						}
					}
				}
			}
		}
	}
}

// TestLossyAsmAddQ1 compares the assembly addQ1 kernels with the archsimd ones for
// 1 to 20 rows strided past their length, the two 16-column halves in different
// places (as two groups of a row).
func TestLossyAsmAddQ1(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range lossyAsmPairs {
		cb := 16 * k.bits / 8 // code bytes of 16 columns
		for n := 1; n <= 20; n++ {
			name := fmt.Sprintf("u%d/n=%d", k.bits, n)
			stride := 2*cb + 8 + r.IntN(9)
			src := make([]byte, (n-1)*stride+2*cb+4)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			o1 := cb + 4 // the second half: past a group header
			w0, w1 := gaussRow(r, n, 0.3), gaussRow(r, n, 0.3)
			a0 := gaussRow(r, 32, 1)
			got, want := make([]float32, 34), make([]float32, 34)
			for _, a := range [][]float32{got, want} {
				a[0], a[33] = math.Float32frombits(asmGuard), math.Float32frombits(asmGuard)
				copy(a[1:33], a0)
			}
			sp := unsafe.Pointer(&src[0])
			k.add1(unsafe.Pointer(&got[1]), unsafe.Pointer(&w0[0]), unsafe.Pointer(&w1[0]), sp, unsafe.Add(sp, o1), uintptr(stride), n)
			k.ref1(unsafe.Pointer(&want[1]), unsafe.Pointer(&w0[0]), unsafe.Pointer(&w1[0]), sp, unsafe.Add(sp, o1), uintptr(stride), n)
			for _, a := range [][]float32{got, want} {
				if math.Float32bits(a[0]) != asmGuard || math.Float32bits(a[33]) != asmGuard {
					t.Fatalf("%s: guards overwritten", name)
				}
			}
			for c := range 32 {
				ref, mag := float64(a0[c]), math.Abs(float64(a0[c]))
				w, off := w0, 0
				if c >= 16 {
					w, off = w1, o1
				}
				for i := range n {
					v := float64(w[i]) * codeVal(src[i*stride+off:], c%16, k.bits)
					ref += v
					mag += math.Abs(v)
				}
				g, wv := float64(got[1+c]), float64(want[1+c])
				if math.Abs(g-wv) > 4e-6*mag || math.Abs(g-ref) > 4e-6*mag {
					t.Errorf("%s column %d: asm %g, archsimd %g, reference %g (magnitude %g)", name, c, g, wv, ref, mag)
				}
			}
		}
	}
}

// TestLossyAsmQ4 compares the assembly q4 kernels with the archsimd ones: 3 and 4
// queries, 1 to 9 rows strided past their length, groups of 16, 32 and 64, rows
// with their own param entries or all sharing one (sr 0), outputs in a guarded
// matrix.
func TestLossyAsmQ4(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range lossyAsmPairs {
		bits := k.bits
		for _, gs := range []int{16, 32, 64} {
			for _, np := range []int{1, 2, 3} {
				for _, m := range []int{1, 2, 5, 9} {
					for _, nq := range []int{3, 4} {
						for _, shared := range []bool{false, true} {
							name := fmt.Sprintf("u%d/gs=%d/np=%d/m=%d/nq=%d/shared=%v", bits, gs, np, m, nq, shared)
							d := gs * np
							gb := 4 + gs*bits/8
							stride := np*gb + 4 + r.IntN(13)
							src := make([]byte, (m-1)*stride+np*gb)
							for i := range src {
								src[i] = byte(r.Uint32())
							}
							q := gaussRow(r, 4*d, 1)
							if nq == 3 {
								copy(q[3*d:], q[2*d:3*d])
							}
							mm := (m + 7) &^ 7
							stM, sr := 4*mm, 4
							if shared {
								sr = 0
							}
							tab := make([]float32, np*mm)
							for i := range tab {
								tab[i] = float32(r.NormFloat64() * 0.01)
							}
							ld := m + 3
							got, want := make([]uint32, 4*ld+1), make([]uint32, 4*ld+1)
							for i := range got {
								got[i], want[i] = asmGuard, asmGuard
							}
							qp := unsafe.Pointer(&q[0])
							q1, q2, q3 := unsafe.Add(qp, 4*d), unsafe.Add(qp, 8*d), unsafe.Add(qp, 12*d)
							sp, tp := unsafe.Pointer(&src[4]), unsafe.Pointer(&tab[0])
							k.q4(unsafe.Pointer(&got[1]), uintptr(4*ld), nq, qp, q1, q2, q3, sp, uintptr(stride), m, tp, uintptr(sr), uintptr(stM), np, uintptr(gs), uintptr(gb))
							k.refQ4(unsafe.Pointer(&want[1]), uintptr(4*ld), nq, qp, q1, q2, q3, sp, uintptr(stride), m, tp, uintptr(sr), uintptr(stM), np, uintptr(gs), uintptr(gb))
							for j := range 4 {
								for i := -1; i < ld; i++ {
									o := 1 + j*ld + i
									if i < 0 || i >= m || j >= nq {
										if got[o] != asmGuard {
											t.Fatalf("%s: query %d row %d: guard overwritten", name, j, i)
										}
										continue
									}
									var ref, mag float64
									row := src[4+i*stride:]
									for c := range d {
										kk := c / gs
										sc := float64(tab[kk*mm+i*sr/4])
										v := sc * float64(q[j*d+c]) * codeVal(row[kk*gb:], c%gs, bits)
										ref += v
										mag += math.Abs(v)
									}
									g, w := float64(math.Float32frombits(got[o])), float64(math.Float32frombits(want[o]))
									if math.Abs(g-w) > 4e-6*mag || math.Abs(g-ref) > 4e-6*mag {
										t.Errorf("%s query %d row %d: asm %g, archsimd %g, reference %g (magnitude %g)", name, j, i, g, w, ref, mag)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestLossyAsmAddQ4 compares the assembly addQ4 kernels with the archsimd ones for
// 1 to 20 rows: four queries, the last one repeated (three queries), and one query
// four times (the 16 columns left over of one query).
func TestLossyAsmAddQ4(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range lossyAsmPairs {
		for n := 1; n <= 20; n++ {
			for _, nd := range []int{4, 3, 1} {
				name := fmt.Sprintf("u%d/n=%d/queries=%d", k.bits, n, nd)
				stride := 8 + 4 + r.IntN(9)
				src := make([]byte, (n-1)*stride+8)
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				ws := [4][]float32{}
				for j := range ws {
					ws[j] = gaussRow(r, n, 0.3)
				}
				a0 := gaussRow(r, 4*16, 1)
				// Query j's accumulators at 1 + 17j, a guard after each.
				got, want := make([]float32, 1+4*17), make([]float32, 1+4*17)
				for _, a := range [][]float32{got, want} {
					for j := range 4 {
						copy(a[1+17*j:], a0[16*j:16*(j+1)])
						a[17*(j+1)] = math.Float32frombits(asmGuard)
					}
					a[0] = math.Float32frombits(asmGuard)
				}
				qi := [4]int{0, 1, 2, 3} // the query of each kernel slot
				if nd == 3 {
					qi[3] = 2
				} else if nd == 1 {
					qi = [4]int{}
				}
				for _, run := range []struct {
					a []float32
					f func(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int)
				}{{got, k.addQ4}, {want, k.refAddQ4}} {
					var ap, wp [4]unsafe.Pointer
					for s, j := range qi {
						ap[s], wp[s] = unsafe.Pointer(&run.a[1+17*j]), unsafe.Pointer(&ws[j][0])
					}
					run.f(ap[0], ap[1], ap[2], ap[3], wp[0], wp[1], wp[2], wp[3], unsafe.Pointer(&src[0]), uintptr(stride), n)
				}
				for i := range got {
					if i%17 == 0 {
						if math.Float32bits(got[i]) != asmGuard {
							t.Fatalf("%s: guard %d overwritten", name, i)
						}
						continue
					}
					j, c := (i-1)/17, (i-1)%17
					if j >= nd { // not a query of this call: untouched
						if got[i] != a0[16*j+c] {
							t.Fatalf("%s: query %d column %d changed", name, j, c)
						}
						continue
					}
					ref, mag := float64(a0[16*j+c]), math.Abs(float64(a0[16*j+c]))
					for i := range n {
						v := float64(ws[j][i]) * codeVal(src[i*stride:], c, k.bits)
						ref += v
						mag += math.Abs(v)
					}
					g, w := float64(got[i]), float64(want[i])
					if math.Abs(g-w) > 4e-6*mag || math.Abs(g-ref) > 4e-6*mag {
						t.Errorf("%s query %d column %d: asm %g, archsimd %g, reference %g (magnitude %g)", name, j, c, g, w, ref, mag)
					}
				}
			}
		}
	}
}

// BenchmarkLossyAsm times the assembly kernels against the archsimd ones on the
// decode-attention shape of one cache block (n = 16 rows of d = 64 values, groups
// of 32): rows4 and addQ1 for one query, q4 and addQ4 for four; ns/row is the time
// per row (for all the queries).
//
//	GOEXPERIMENT=simd go test ./quant -run '^$' -bench LossyAsm -benchtime=200ms
func BenchmarkLossyAsm(b *testing.B) {
	const n, d, gs = 16, 64, 32
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range lossyAsmPairs {
		gb := 4 + gs*k.bits/8
		rb := d / gs * gb
		stride := rb + 8
		src := make([]byte, n*stride)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		q := gaussRow(r, d, 1)
		tab := make([]float32, 2*d/gs*n)
		for i := range tab {
			tab[i] = float32(r.NormFloat64() * 0.01)
		}
		w := gaussRow(r, 2*n, 1)
		acc := make([]float32, d)
		var out [4]uint32
		sp, qp, tp := unsafe.Pointer(&src[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&tab[0])
		for _, v := range []struct {
			name  string
			rows4 func(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)
			add1  func(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)
		}{{"archsimd", k.ref4, k.ref1}, {"asm", k.rows4, k.add1}} {
			b.Run(fmt.Sprintf("u%d/rows4/%s", k.bits, v.name), func(b *testing.B) {
				for b.Loop() {
					for i := 0; i < n; i += 4 {
						p0 := unsafe.Add(sp, 4+i*stride)
						v.rows4(&out, qp, p0, unsafe.Add(p0, stride), unsafe.Add(p0, 2*stride), unsafe.Add(p0, 3*stride),
							unsafe.Add(tp, 4*i), 4*n, d/gs, gs, uintptr(gb))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
			})
			b.Run(fmt.Sprintf("u%d/addQ1/%s", k.bits, v.name), func(b *testing.B) {
				ap, wp := unsafe.Pointer(&acc[0]), unsafe.Pointer(&w[0])
				for b.Loop() {
					for c := 0; c < d; c += 32 {
						co := c / gs * gb // groups of 32: the halves are in one group
						v.add1(unsafe.Add(ap, 4*c), wp, wp, unsafe.Add(sp, co+4), unsafe.Add(sp, co+4+16*k.bits/8), uintptr(stride), n)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
			})
		}
		// Four queries (a group of 4 query heads): ns/row for all four.
		q4 := gaussRow(r, 4*d, 1)
		w4 := gaussRow(r, 4*n, 1)
		acc4 := make([]float32, 4*d)
		scores := make([]float32, 4*n)
		for _, v := range []struct {
			name  string
			q4    func(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr)
			addQ4 func(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int)
		}{{"archsimd", k.refQ4, k.refAddQ4}, {"asm", k.q4, k.addQ4}} {
			qp := unsafe.Pointer(&q4[0])
			b.Run(fmt.Sprintf("u%d/q4/%s", k.bits, v.name), func(b *testing.B) {
				for b.Loop() {
					v.q4(unsafe.Pointer(&scores[0]), 4*n, 4, qp, unsafe.Add(qp, 4*d), unsafe.Add(qp, 8*d), unsafe.Add(qp, 12*d),
						unsafe.Add(sp, 4), uintptr(stride), n, tp, 4, 4*n, d/gs, gs, uintptr(gb))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
			})
			b.Run(fmt.Sprintf("u%d/addQ4/%s", k.bits, v.name), func(b *testing.B) {
				ap, wp := unsafe.Pointer(&acc4[0]), unsafe.Pointer(&w4[0])
				for b.Loop() {
					for c := 0; c < d; c += 16 {
						co := c/gs*gb + 4 + c%gs*k.bits/8
						v.addQ4(unsafe.Add(ap, 4*c), unsafe.Add(ap, 4*(d+c)), unsafe.Add(ap, 4*(2*d+c)), unsafe.Add(ap, 4*(3*d+c)),
							wp, unsafe.Add(wp, 4*n), unsafe.Add(wp, 8*n), unsafe.Add(wp, 12*n), unsafe.Add(sp, co), uintptr(stride), n)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
			})
		}
	}
}
