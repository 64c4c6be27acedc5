package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// rowGroups, rowCounts and rowDims are the shapes the row kernels are checked on:
// every group size the kernels split (4 at a time and 1–3 left over), row counts
// around the groups of four rows (fewer than four, and a last group overlapping the
// previous one), and head sizes around the 64-column and 16-column blocks.
var (
	rowGroups = []int{1, 2, 3, 4, 5, 7, 8}
	rowCounts = []int{1, 2, 3, 4, 5, 15, 16, 17, 33}
	rowDims   = []int{16, 32, 48, 64, 80, 128, 256}
)

// rowCase is one DotRows/AddRows problem: n rows of d values of c stored stride
// bytes apart, g queries, scores and weights ld apart.
type rowCase struct {
	c               RowCodec
	g, n, d, stride int
	ld              int
	src             []byte
	q, w, acc0      []float32
	dotMag, addMag  []float64 // per score and per accumulator: Σ|terms|
	addRange        []float64 // per query: Σ_i |w_i|·range_i (addRoundBound)
}

const rowGuard = -777

func newRowCase(r *rand.Rand, c RowCodec, g, n, d int) *rowCase {
	rb := c.RowBytes(d)
	stride := rb + 5 // unaligned rows
	switch c.(type) {
	case F32:
		stride = rb + 12 // read in place: 4-byte steps
	case F16, BF16:
		stride = rb + 6
	}
	rc := &rowCase{c: c, g: g, n: n, d: d, stride: stride, ld: n + 3}
	rc.src = make([]byte, (n-1)*stride+rb)
	dec := make([]float32, n*d)
	for i := range n {
		x := gaussRow(r, d, float64(1+i%5))
		c.Encode(rc.src[i*stride:][:rb], x)
		c.Decode(dec[i*d:(i+1)*d], rc.src[i*stride:][:rb])
	}
	rc.q = gaussRow(r, g*d, 1)
	rc.w = gaussRow(r, (g-1)*rc.ld+n, 1)
	rc.acc0 = gaussRow(r, g*d, 1)
	rc.dotMag = make([]float64, g*n)
	rc.addMag = make([]float64, g*d)
	rc.addRange = make([]float64, g)
	rowMax := make([]float64, n)
	for i := range n {
		for _, x := range dec[i*d : (i+1)*d] {
			rowMax[i] = math.Max(rowMax[i], math.Abs(float64(x)))
		}
	}
	for j := range g {
		rc.addRange[j] = addRoundBound(1, rc.w[j*rc.ld:j*rc.ld+n], rowMax)
		for i := range n {
			for k := range d {
				rc.dotMag[j*n+i] += math.Abs(float64(rc.q[j*d+k]) * float64(dec[i*d+k]))
				rc.addMag[j*d+k] += math.Abs(float64(rc.w[j*rc.ld+i]) * float64(dec[i*d+k]))
			}
		}
		for k := range d {
			rc.addMag[j*d+k] += math.Abs(float64(rc.acc0[j*d+k]))
		}
	}
	return rc
}

// run computes the scores and accumulators of rc with kernel set k through its
// fused kernels when fused (reporting whether they took the shape), else through
// DotRows and AddRows. Outputs carry guard values: scores at i ≥ n of each query row
// and after the last, two floats after the accumulators.
func (rc *rowCase) run(k *kernelSet, fused bool) (scores, acc []float32, ok bool) {
	return rc.runWith(k, fused, rc.q)
}

// reference is the scalar twin's run of rc with the queries kernel set k scores
// with (scoredQuery: the integer kernels score a round trip of rc.q).
func (rc *rowCase) reference(k *kernelSet) (scores, acc []float32) {
	scores, acc, _ = rc.runWith(scalarKernels, false, scoredQuery(k, rc.c, rc.q, rc.d))
	return scores, acc
}

// runWith is run with the queries q.
func (rc *rowCase) runWith(k *kernelSet, fused bool, q []float32) (scores, acc []float32, ok bool) {
	scores = constRow((rc.g-1)*rc.ld+rc.n+5, rowGuard)
	acc = append(append([]float32(nil), rc.acc0...), rowGuard, rowGuard)
	tmp := make([]float32, ScratchFloats(rc.d))
	if fused {
		okd := k.dotRows(kernelsOf(rc.c), rc.c, scores, rc.ld, q, rc.g, rc.src, rc.stride, rc.n, rc.d, tmp)
		oka := k.addRows(kernelsOf(rc.c), rc.c, acc[:rc.g*rc.d], rc.w, rc.ld, rc.g, rc.src, rc.stride, rc.n, rc.d, tmp)
		return scores, acc, okd && oka
	}
	prev := active.Load()
	defer active.Store(prev)
	active.Store(k)
	DotRows(rc.c, scores, rc.ld, q, rc.g, rc.src, rc.stride, rc.n, tmp)
	AddRows(rc.c, acc[:rc.g*rc.d], rc.w, rc.ld, rc.g, rc.src, rc.stride, rc.n, tmp)
	return scores, acc, true
}

// check compares scores and acc with the reference ones (the scalar twin's), within
// 4e-6 of the sum of the magnitudes of the terms (for acc, plus the rounding of the
// integer value kernels of kernel set k: AddRowsRounding), and checks the guards.
func (rc *rowCase) check(t *testing.T, k *kernelSet, scores, acc, rs, ra []float32) {
	t.Helper()
	for j := range rc.g {
		for i := range rc.ld {
			p := j*rc.ld + i
			if p >= len(scores) {
				break
			}
			if i >= rc.n {
				if scores[p] != rowGuard {
					t.Fatalf("score (%d,%d) outside the output written: %v", j, i, scores[p])
				}
				continue
			}
			if tol := 4e-6*rc.dotMag[j*rc.n+i] + 1e-6; math.Abs(float64(scores[p])-float64(rs[p])) > tol {
				t.Fatalf("score (%d,%d) = %v, scalar twin %v (tolerance %g)", j, i, scores[p], rs[p], tol)
			}
		}
	}
	for i := (rc.g-1)*rc.ld + rc.n; i < len(scores); i++ {
		if scores[i] != rowGuard {
			t.Fatalf("score %d past the output written: %v", i, scores[i])
		}
	}
	f := addRounding(k, rc.c, rc.d)
	for p := range rc.g * rc.d {
		if tol := 4e-6*rc.addMag[p] + 1e-6 + f*rc.addRange[p/rc.d]; math.Abs(float64(acc[p])-float64(ra[p])) > tol {
			t.Fatalf("acc (%d,%d) = %v, scalar twin %v (tolerance %g)", p/rc.d, p%rc.d, acc[p], ra[p], tol)
		}
	}
	if n := rc.g * rc.d; acc[n] != rowGuard || acc[n+1] != rowGuard {
		t.Fatal("accumulator written past g·d")
	}
}

// TestRowKernels checks the fused row kernels of the SIMD set (called directly, so
// that a shape falling back to tiles is an error) against the scalar twin of DotRows
// and AddRows (scoring the queries the set scores, scoredQuery), for F32, F16, BF16 and Int8 rows over every group size the kernels
// split, row counts around groups of four and head sizes around their column blocks,
// with row strides and leading dimensions larger than needed.
func TestRowKernels(t *testing.T) {
	if simdKernels == nil {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	r := rand.New(rand.NewPCG(21, 22))
	defer setF16C(setF16C(true))
	for _, f16c := range f16cModes() {
		setF16C(f16c)
		for _, c := range []RowCodec{F32{}, F16{}, BF16{}, Int8{}} {
			for _, g := range rowGroups {
				for _, n := range rowCounts {
					for _, d := range rowDims {
						rc := newRowCase(r, c, g, n, d)
						name := fmt.Sprintf("f16c=%v/%s/g=%d/n=%d/d=%d", f16c, c.Name(), g, n, d)
						rs, ra := rc.reference(simdKernels)
						scores, acc, ok := rc.run(simdKernels, true)
						if !ok {
							if !simdFuses(c) {
								continue // this set has no fused kernel for c (tiles)
							}
							t.Fatalf("%s: the fused kernels did not take the shape", name)
						}
						if !simdFuses(c) {
							t.Fatalf("%s: fused, but simdFuses says tiles", name)
						}
						t.Run(name, func(t *testing.T) { rc.check(t, simdKernels, scores, acc, rs, ra) })
					}
				}
			}
		}
	}
}

// TestRowKernelsViaAPI checks DotRows and AddRows with each kernel set active
// against the scalar twin (as TestRowKernels) on a sample of the shapes, Int8 rows
// past the int16 kernels' largest d among them (the dispatch, and the tile
// path of F16 when the fused kernels are off); with the F16C and ZMM kernels on and
// off where the CPU has them.
func TestRowKernelsViaAPI(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	defer setF16C(setF16C(true))
	defer setZMM(setZMM(true))
	for _, f16c := range f16cModes() {
		for _, z := range zmmModes() {
			setF16C(f16c)
			setZMM(z)
			testRowKernelsViaAPI(t, r, fmt.Sprintf("f16c=%v/zmm=%v", f16c, z))
		}
	}
}

func testRowKernelsViaAPI(t *testing.T, r *rand.Rand, mode string) {
	for _, k := range kernelSets() {
		for _, c := range []RowCodec{F32{}, F16{}, BF16{}, Int8{}} {
			for _, s := range [][3]int{{1, 16, 64}, {3, 17, 128}, {7, 5, 80}, {8, 33, 48}, {2, 3, 256}, {4, 5, 1024}, {2, 3, 2064}} {
				rc := newRowCase(r, c, s[0], s[1], s[2])
				rs, ra := rc.reference(k)
				scores, acc, _ := rc.run(k, false)
				t.Run(fmt.Sprintf("%s/%s/%s/g=%d/n=%d/d=%d", mode, k.name, c.Name(), s[0], s[1], s[2]), func(t *testing.T) {
					rc.check(t, k, scores, acc, rs, ra)
				})
			}
		}
	}
}

// TestMultiKernelsOddWidths checks MultiDot and MultiAxpy of every kernel set against
// the scalar twin for head sizes that are odd multiples of 8 (the last 8 columns of
// MultiAxpy) and around the 64-column blocks.
func TestMultiKernelsOddWidths(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, k := range kernelSets() {
		for _, g := range rowGroups {
			for _, n := range []int{1, 3, 4, 6, 16, 19} {
				for _, d := range []int{8, 24, 40, 72, 136, 200} {
					xs, ld := d+3, n+2
					x := gaussRow(r, (n-1)*xs+d, 1)
					q := gaussRow(r, g*d, 1)
					w := gaussRow(r, (g-1)*ld+n, 1)
					acc0 := gaussRow(r, g*d, 1)
					want := constRow((g-1)*ld+n, rowGuard)
					multiDotScalar(want, ld, q, g, x, xs, n, d)
					wantAcc := append([]float32(nil), acc0...)
					multiAxpyScalar(wantAcc, w, ld, g, x, xs, n, d)
					got := constRow((g-1)*ld+n, rowGuard)
					gotAcc := append([]float32(nil), acc0...)
					k.multiDot(got, ld, q, g, x, xs, n, d)
					k.multiAxpy(gotAcc, w, ld, g, x, xs, n, d)
					for p := range got {
						j, i := p/ld, p%ld
						var mag float64
						if i < n {
							for c := range d {
								mag += math.Abs(float64(q[j*d+c]) * float64(x[i*xs+c]))
							}
						} else if got[p] != rowGuard {
							t.Fatalf("%s g=%d n=%d d=%d: score (%d,%d) outside the output written", k.name, g, n, d, j, i)
						}
						if math.Abs(float64(got[p])-float64(want[p])) > 4e-6*mag+1e-6 {
							t.Fatalf("%s g=%d n=%d d=%d: score (%d,%d) = %v, scalar %v", k.name, g, n, d, j, i, got[p], want[p])
						}
					}
					for p := range gotAcc {
						j, c := p/d, p%d
						mag := math.Abs(float64(acc0[p]))
						for i := range n {
							mag += math.Abs(float64(w[j*ld+i]) * float64(x[i*xs+c]))
						}
						if math.Abs(float64(gotAcc[p])-float64(wantAcc[p])) > 4e-6*mag+1e-6 {
							t.Fatalf("%s g=%d n=%d d=%d: acc (%d,%d) = %v, scalar %v", k.name, g, n, d, j, c, gotAcc[p], wantAcc[p])
						}
					}
				}
			}
		}
	}
}

// TestDotRowsNonFiniteQuery: a query with a NaN value scores NaN against every row,
// and one with an infinite value scores no finite value, with every kernel set and
// codec (the integer kernels quantize queries, which must not turn either into finite
// scores); the other queries of the call are unaffected.
func TestDotRowsNonFiniteQuery(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(27, 28))
		const d, n = 64, 9
		for _, c := range allRowCodecs() {
			rb := c.RowBytes(d)
			src := make([]byte, n*rb)
			for i := range n {
				c.Encode(src[i*rb:][:rb], gaussRow(r, d, 1))
			}
			for _, g := range []int{1, 4} {
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
					q := gaussRow(r, g*d, 1)
					q[17] = bad // query 0
					scores := make([]float32, g*n)
					DotRows(c, scores, n, q, g, src, rb, n, make([]float32, ScratchFloats(d)))
					for j := range g {
						for i := range n {
							s := float64(scores[j*n+i])
							switch {
							case j == 0 && math.IsNaN(float64(bad)) && !math.IsNaN(s):
								t.Fatalf("%s g=%d: NaN query scores %v against row %d", c.Name(), g, s, i)
							case j == 0 && !math.IsNaN(s) && !math.IsInf(s, 0):
								t.Fatalf("%s g=%d: infinite query scores %v against row %d", c.Name(), g, s, i)
							case j > 0 && (math.IsNaN(s) || math.IsInf(s, 0)):
								t.Fatalf("%s g=%d: query %d scores %v against row %d", c.Name(), g, j, s, i)
							}
						}
					}
				}
			}
		}
	})
}
