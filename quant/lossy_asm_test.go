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
	bits        int
	rows4, ref4 func(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)
	add1, ref1  func(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)
}{
	{4, dotU4Rows4asm, dotU4Rows4, addU4Q1asm, addU4Q1},
	{2, dotU2Rows4asm, dotU2Rows4, addU2Q1asm, addU2Q1},
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

// BenchmarkLossyAsm times the assembly kernels against the archsimd ones on the
// decode-attention shape of one cache block (n = 16 rows of d = 64 values, groups
// of 32, one query); ns/row is the time per row.
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
	}
}
