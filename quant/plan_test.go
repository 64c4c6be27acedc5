package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowPlan checks that a RowPlan's DotRows and AddRows give the package
// functions' results bit for bit, with the plan made under every kernel set and run
// under every kernel set (a plan made for another set falls back to the package
// functions), over the lossy codecs and the others, head sizes the fused kernels
// take and not, query counts (quads and single queries) and row counts (short spans
// and a tail of n mod 4 rows); that DotRowsPrepared with the queries prepared by
// PrepareQuery gives the same bits, and that q4 and q2 rows (groups of 32), q8
// rows the fused kernels take and E4M3 rows on AVX-512 have a prepared form; that Affine rows the fused kernels take skip the
// dispatch; and that bad arguments are refused.
func TestRowPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	prev := active.Load()
	defer active.Store(prev)
	codecs := append(lossyCodecs(), F32{}, F16{}, BF16{}, Int8{})
	for _, c := range codecs {
		for _, d := range []int{24, 32, 64, 128} {
			for _, g := range []int{1, 2, 3, 4, 5, 7} {
				for _, n := range []int{1, 3, 6, 64} {
					name := fmt.Sprintf("%s/d=%d/g=%d/n=%d", c.Name(), d, g, n)
					src, stride, _ := lossyCase(r, c, n, d)
					ld := n + 2
					q := gaussRow(r, g*d, 1)
					w := gaussRow(r, (g-1)*ld+n, 1)
					acc0 := gaussRow(r, g*d, 1)
					tmp := make([]float32, ScratchFloats(d))
					for _, made := range kernelSets() {
						active.Store(made)
						p, err := NewRowPlan(c, d)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						// Affine rows the fused kernels take skip the dispatch.
						if _, aff := c.(Affine); aff && made != scalarKernels {
							if fused, _ := fusedLossyHandles(c, d); (p.fast != nil) != fused {
								t.Fatalf("%s (plan %s): direct kernels %v, want %v", name, made.name, (p.fast != nil), fused)
							}
						}
						// q4 and q2 rows the integer kernels score have prepared queries, and so do
						// q8 rows the int16 kernels score (with F16C: every amd64 set but the
						// scalar one).
						aff, isAff := c.(Affine)
						_, isInt8 := c.(Int8)
						wantPrep := (p.fast != nil) && isAff && (aff.Bits == 4 || aff.Bits == 2) && aff.group(d) == 32
						if isInt8 {
							wantPrep = made != scalarKernels && prepInt8(d)
						}
						if _, isFP8 := c.(FP8); isFP8 {
							wantPrep = made != scalarKernels && prepE4M3(c, d)
						}
						if (p.QueryFloats(g) > 0) != wantPrep {
							t.Fatalf("%s (plan %s): QueryFloats %d, want a prepared form: %v", name, made.name, p.QueryFloats(g), wantPrep)
						}
						var pq []float32
						if m := p.QueryFloats(g); m > 0 {
							pq = gaussRow(r, m, 1) // stale contents must not matter
							p.PrepareQuery(pq, q, g)
						}
						for _, run := range kernelSets() {
							active.Store(run)
							want, got := make([]float32, (g-1)*ld+n), make([]float32, (g-1)*ld+n)
							DotRows(c, want, ld, q, g, src, stride, n, tmp)
							p.DotRows(got, ld, q, g, src, stride, n, tmp)
							gotPrep := make([]float32, len(want))
							p.DotRowsPrepared(gotPrep, ld, q, pq, g, src, stride, n, tmp)
							wantAcc := append([]float32(nil), acc0...)
							gotAcc := append([]float32(nil), acc0...)
							AddRows(c, wantAcc, w, ld, g, src, stride, n, tmp)
							p.AddRows(gotAcc, w, ld, g, src, stride, n, tmp)
							for i := range want {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s (plan %s, run %s): score %d = %v, DotRows %v", name, made.name, run.name, i, got[i], want[i])
								}
								if math.Float32bits(gotPrep[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s (plan %s, run %s): prepared query's score %d = %v, DotRows %v", name, made.name, run.name, i, gotPrep[i], want[i])
								}
							}
							for i := range wantAcc {
								if math.Float32bits(gotAcc[i]) != math.Float32bits(wantAcc[i]) {
									t.Fatalf("%s (plan %s, run %s): acc %d = %v, AddRows %v", name, made.name, run.name, i, gotAcc[i], wantAcc[i])
								}
							}
						}
					}
				}
			}
		}
	}
	for _, bad := range []struct {
		c RowCodec
		d int
	}{{nil, 64}, {F16{}, 0}, {Affine{Bits: 4, Group: 32}, -1}} {
		if _, err := NewRowPlan(bad.c, bad.d); err == nil {
			t.Errorf("NewRowPlan(%v, %d): no error", bad.c, bad.d)
		}
	}
}

// TestRowPlanNext checks that DotRowsNext and AddRowsNext give DotRowsPrepared's
// and AddRows's bits, under every kernel set, whatever next holds: no rows, fewer
// rows than src (the rest read without), as many, more; for F16 rows (whose kernels
// ask for next's rows) and codecs whose kernels do not.
func TestRowPlanNext(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	prev := active.Load()
	defer active.Store(prev)
	for _, c := range []RowCodec{F16{}, Int8{}, BF16{}, F32{}} {
		for _, d := range []int{32, 64, 128} {
			for _, g := range []int{1, 2, 3, 4, 5} {
				for _, n := range []int{1, 3, 4, 6, 17, 64} {
					src, stride, _ := lossyCase(r, c, n, d)
					other := make([]byte, (n+6)*stride) // what is read next: not read here
					ld := n + 2
					q := gaussRow(r, g*d, 1)
					w := gaussRow(r, (g-1)*ld+n, 1)
					acc0 := gaussRow(r, g*d, 1)
					tmp := make([]float32, ScratchFloats(d))
					for _, set := range kernelSets() {
						active.Store(set)
						p, err := NewRowPlan(c, d)
						if err != nil {
							t.Fatal(err)
						}
						var pq []float32
						if m := p.QueryFloats(g); m > 0 {
							pq = make([]float32, m)
							p.PrepareQuery(pq, q, g)
						}
						want := make([]float32, (g-1)*ld+n)
						p.DotRowsPrepared(want, ld, q, pq, g, src, stride, n, tmp)
						wantAcc := append([]float32(nil), acc0...)
						p.AddRows(wantAcc, w, ld, g, src, stride, n, tmp)
						for _, rows := range []int{-1, 0, 1, n / 2, n - 1, n, n + 5} {
							name := fmt.Sprintf("%s/d=%d/g=%d/n=%d/set=%s/next=%d", c.Name(), d, g, n, set.name, rows)
							// rows whole rows, then one a byte short (nothing at all for −1).
							next := other[:max(0, rows*stride+c.RowBytes(d)-1)]
							got := make([]float32, len(want))
							p.DotRowsNext(got, ld, q, pq, g, src, stride, n, tmp, next)
							gotAcc := append([]float32(nil), acc0...)
							p.AddRowsNext(gotAcc, w, ld, g, src, stride, n, tmp, next)
							for i := range want {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s: score %d = %v, DotRowsPrepared %v", name, i, got[i], want[i])
								}
							}
							for i := range wantAcc {
								if math.Float32bits(gotAcc[i]) != math.Float32bits(wantAcc[i]) {
									t.Fatalf("%s: acc %d = %v, AddRows %v", name, i, gotAcc[i], wantAcc[i])
								}
							}
						}
					}
				}
			}
		}
	}
}
