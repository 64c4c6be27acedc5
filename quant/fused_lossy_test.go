package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// lossyCodecs are the codecs of the fused lossy kernels (fused_lossy_amd64.go), with
// group sizes the kernels take (16, 32, 64, whole rows) and some they leave to tiles
// (8, and groups that do not divide d).
func lossyCodecs() []RowCodec {
	var cs []RowCodec
	for _, bits := range []int{8, 4, 2} {
		for _, g := range []int{8, 16, 32, 64, 0, 48} {
			cs = append(cs, Affine{Bits: bits, Group: g})
		}
	}
	return append(cs, FP8{Format: E4M3}, FP8{Format: E5M2}, FP8{Format: E4M3, TensorScale: 0.01}, FP8{Format: E5M2, TensorScale: 1.0 / 4096})
}

// fusedLossyHandles reports whether the SIMD set must score (dot) and add (add) rows
// of d values of c fused, not through tiles.
func fusedLossyHandles(c RowCodec, d int) (dot, add bool) {
	if _, ok := c.(FP8); ok && d%16 == 0 && fp8FusedF16C() {
		return true, true // rows_fp8_amd64.s, in the amd64 set
	}
	if d%16 != 0 || !simdFusesLossy {
		return false, false
	}
	switch c := c.(type) {
	case Affine:
		g := c.group(d)
		ok := g%16 == 0 && d%g == 0 && fp8FusedF16C() // F16C: the kernels widen the group parameters
		return ok, ok
	case FP8:
		return false, false // without F16C, FP8 rows go through tiles
	}
	return false, false
}

// lossyRowKinds are the rows of the fused kernel tests, mixed within one call.
var lossyRowKinds = []func(r *rand.Rand, d int) []float32{
	func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1) },
	func(r *rand.Rand, d int) []float32 { // an outlier channel
		x := gaussRow(r, d, 1)
		x[r.IntN(d)] *= 80
		return x
	},
	func(r *rand.Rand, d int) []float32 { // on an offset
		x := gaussRow(r, d, 0.5)
		for i := range x {
			x[i] += 20
		}
		return x
	},
	func(r *rand.Rand, d int) []float32 { return make([]float32, d) },
	func(r *rand.Rand, d int) []float32 { return constRow(d, 0.75) },            // scale 0
	func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 3e4) },          // near (and past) the f16 range
	func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1e-6) },         // subnormal f16 parameters, FP8 subnormals
	func(r *rand.Rand, d int) []float32 { return constRow(d, float32(-65504)) }, // the extreme
}

// lossyCase encodes n rows of d values of c, mixed kinds, at a row stride larger than
// the row, and returns the bytes, the stride and the decoded rows.
func lossyCase(r *rand.Rand, c RowCodec, n, d int) (src []byte, stride int, dec []float32) {
	rb := c.RowBytes(d)
	stride = rb + 5 + r.IntN(4)
	src = make([]byte, (n-1)*stride+rb)
	for i := range src {
		src[i] = 0xa5 // bytes between rows are not codes
	}
	dec = make([]float32, n*d)
	for i := range n {
		c.Encode(src[i*stride:][:rb], lossyRowKinds[r.IntN(len(lossyRowKinds))](r, d))
		c.Decode(dec[i*d:(i+1)*d], src[i*stride:][:rb])
	}
	return src, stride, dec
}

// TestFusedLossyRows checks DotRows and AddRows of the lossy codecs, with every
// kernel set, against float64 products with the decoded rows (scores: with the
// queries the set scores with, scoredQuery), and the SIMD set's fused kernels against
// the scalar twin (tiles decoded by Decode) where both score the query itself, over
// query counts (quads and one or two left over), row counts, head sizes and groups,
// with leading dimensions and row strides larger than needed and guards around the
// outputs. It also checks that the SIMD set takes the shapes it documents fused.
func TestFusedLossyRows(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	prev := active.Load()
	defer active.Store(prev)
	const guard = -777
	for _, c := range lossyCodecs() {
		for _, g := range []int{1, 2, 3, 4, 7} {
			for _, n := range []int{1, 3, 4, 5, 16, 17, 150} {
				for _, d := range []int{16, 32, 64, 128} {
					name := fmt.Sprintf("%s/g=%d/n=%d/d=%d", c.Name(), g, n, d)
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
					var ref [2][]float32 // scores and accumulators of the scalar set
					for _, k := range kernelSets() {
						active.Store(k)
						scores := constRow((g-1)*ld+n+5, guard)
						tmp := make([]float32, ScratchFloats(d))
						DotRows(c, scores, ld, q, g, src, stride, n, tmp)
						acc := append(append([]float32(nil), acc0...), guard, guard)
						AddRows(c, acc[:g*d], w, ld, g, src, stride, n, tmp)
						qk := scoredQuery(k, c, q, d)
						for j := range g {
							for i := range n {
								var want, mag float64
								for x := range d {
									want += float64(qk[j*d+x]) * float64(dec[i*d+x])
									mag += math.Abs(float64(qk[j*d+x])) * 2 * rowMax[i]
								}
								if got := scores[j*ld+i]; math.Abs(float64(got)-want) > 2e-6*mag+1e-30 {
									t.Fatalf("%s %s: score (%d,%d) = %v, want %v", name, k.name, j, i, got, want)
								}
								// The twin scores the query itself: compare where k does too.
								if ref[0] != nil && &qk[0] == &q[0] && math.Abs(float64(scores[j*ld+i]-ref[0][j*ld+i])) > 4e-6*mag+1e-30 {
									t.Fatalf("%s %s: score (%d,%d) = %v, scalar twin %v", name, k.name, j, i, scores[j*ld+i], ref[0][j*ld+i])
								}
							}
							round := addRoundBound(addRounding(k, c, d), w[j*ld:j*ld+n], rowMax) // the integer value kernels' rounding
							for x := range d {
								want, mag := float64(acc0[j*d+x]), math.Abs(float64(acc0[j*d+x]))
								for i := range n {
									want += float64(w[j*ld+i]) * float64(dec[i*d+x])
									mag += math.Abs(float64(w[j*ld+i])) * 2 * rowMax[i]
								}
								if got := acc[j*d+x]; math.Abs(float64(got)-want) > 2e-6*mag+round+1e-30 {
									t.Fatalf("%s %s: acc (%d,%d) = %v, want %v", name, k.name, j, x, got, want)
								}
								if ref[1] != nil && math.Abs(float64(acc[j*d+x]-ref[1][j*d+x])) > 4e-6*mag+round+1e-30 {
									t.Fatalf("%s %s: acc (%d,%d) = %v, scalar twin %v", name, k.name, j, x, acc[j*d+x], ref[1][j*d+x])
								}
							}
							for i := n; i < ld && j*ld+i < len(scores); i++ {
								if scores[j*ld+i] != guard {
									t.Fatalf("%s %s: score (%d,%d) past the rows written", name, k.name, j, i)
								}
							}
						}
						if acc[g*d] != guard || acc[g*d+1] != guard {
							t.Fatalf("%s %s: accumulator written past g·d", name, k.name)
						}
						if k == scalarKernels {
							ref = [2][]float32{scores, acc}
						}
					}
					if simdKernels == nil {
						continue
					}
					// The SIMD set's fused kernels, called directly: they must take the
					// shapes they document.
					tmp := make([]float32, ScratchFloats(d))
					scores := make([]float32, (g-1)*ld+n)
					acc := make([]float32, g*d)
					dot, add := fusedLossyHandles(c, d)
					if got := simdKernels.dotRows(kernelsOf(c), c, scores, ld, q, g, src, stride, n, d, tmp); got != dot {
						t.Fatalf("%s: fused dot kernel reports %v, want %v", name, got, dot)
					}
					if got := simdKernels.addRows(kernelsOf(c), c, acc, w, ld, g, src, stride, n, d, tmp); got != add {
						t.Fatalf("%s: fused add kernel reports %v, want %v", name, got, add)
					}
				}
			}
		}
	}
}

// TestDotChannelRows checks DotChannelRows, with every kernel set, against float64
// products with the decoded block, over bits, block lengths, token ranges, head sizes
// (multiples of 16 for the fused kernels, others for the scalar path) and query
// counts, with a leading dimension larger than the range and guards around it; also
// through a ChannelCodec that is not Channel (decoded tiles) and with a scratch too
// short for the pre-scaled queries.
func TestDotChannelRows(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	prev := active.Load()
	defer active.Store(prev)
	const guard = -777
	for _, bits := range []int{8, 4, 3, 2} {
		c := Channel{Bits: bits}
		for _, tt := range []int{1, 5, 16, 32} {
			for _, d := range []int{8, 16, 24, 64, 128} {
				src := make([]float32, 0, tt*d)
				for range tt {
					src = append(src, lossyRowKinds[r.IntN(len(lossyRowKinds))](r, d)...)
				}
				for ch := 0; ch < d; ch += 7 { // channels with large fixed magnitudes, as keys have
					for i := range tt {
						src[i*d+ch] += 30
					}
				}
				block := make([]byte, c.BlockBytes(tt, d))
				c.Encode(block, src, tt, d)
				dec := make([]float32, tt*d)
				c.Decode(dec, block, tt, d)
				// Error scale: the channel's largest magnitude, since the kernels sum
				// the zero terms apart (lo and code·scale may be far larger than the
				// value they add up to).
				colMax := make([]float64, d)
				for i, v := range dec {
					colMax[i%d] = math.Max(colMax[i%d], math.Abs(float64(v)))
				}
				for _, g := range []int{1, 2, 3, 4, 6, 7} {
					q := gaussRow(r, g*d, 1)
					if simdKernels != nil { // the SIMD kernel takes every d multiple of 16
						scores, tmp := make([]float32, g*tt), make([]float32, g*d+2*d+g+4)
						if got := simdKernels.chanDot(c, scores, tt, q, g, block, tt, d, 0, tt, tmp); got != (d%16 == 0 && bits != 3) {
							t.Fatalf("%s t=%d d=%d g=%d: fused channel kernel reports %v", c.Name(), tt, d, g, got)
						}
					}
					for _, rg := range [][2]int{{0, tt}, {tt / 2, tt}, {0, (tt + 1) / 2}, {tt - 1, tt}} {
						i0, i1 := rg[0], rg[1]
						if i0 >= i1 {
							continue
						}
						ld := i1 - i0 + 3
						for _, k := range kernelSets() {
							active.Store(k)
							for _, cc := range []ChannelCodec{c, plainChannel{c}} {
								for _, short := range []bool{false, true} {
									name := fmt.Sprintf("%s t=%d d=%d g=%d rows %d..%d %s %T short=%v", c.Name(), tt, d, g, i0, i1, k.name, cc, short)
									tmp := make([]float32, max(tt*d, g*d+2*d+g+4))
									if short {
										tmp = tmp[:(i1-i0)*d]
									}
									scores := constRow((g-1)*ld+i1-i0+2, guard)
									DotChannelRows(cc, scores, ld, q, g, block, tt, d, i0, i1, tmp, make([]float32, d), make([]float32, d))
									for j := range g {
										// The scores the set computes (ChannelScores), or with a
										// scratch too short for one query, which decodes, the plain
										// products.
										ref := make([]float64, tt)
										ChannelScores(cc, ref, q[j*d:(j+1)*d], block, tt, d)
										for i := range ld {
											if j*ld+i >= len(scores) {
												break
											}
											got := scores[j*ld+i]
											if i >= i1-i0 {
												if got != guard {
													t.Fatalf("%s: score (%d,%d) past the range written", name, j, i)
												}
												continue
											}
											var exact, mag float64
											for x := range d {
												v := float64(dec[(i0+i)*d+x])
												exact += float64(q[j*d+x]) * v
												mag += math.Abs(float64(q[j*d+x])) * 2 * colMax[x]
											}
											want := ref[i0+i]
											if len(tmp) < 3*d+5 { // decoded: plain products
												want = exact
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
		}
	}
}

// TestDotChannelSpan checks DotChannelSpan against DotChannelRows called block by
// block, bit for bit, with every kernel set: runs of blocks with gaps between them,
// starting offsets inside the first block, lengths ending inside the last, head sizes
// the fused kernels take and not, and query counts up to more than the scratch holds
// at once (16 at d = 64); the scores past the run stay untouched.
func TestDotChannelSpan(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	prev := active.Load()
	defer active.Store(prev)
	const guard = -777
	for _, bits := range []int{8, 4, 3, 2} {
		c := Channel{Bits: bits}
		for _, d := range []int{8, 64} {
			const tt = 16
			bb := c.BlockBytes(tt, d)
			stride := bb + 5 // gaps between the blocks
			const nb = 4
			src := make([]byte, nb*stride)
			for j := range nb {
				c.Encode(src[j*stride:][:bb], gaussRow(r, tt*d, 1), tt, d)
			}
			for _, g := range []int{1, 2, 3, 4, 16} {
				q := gaussRow(r, g*d, 1)
				for _, rg := range [][2]int{{0, nb * tt}, {5, 40}, {15, 1}, {3, 10}} {
					off, n := rg[0], rg[1]
					ld := n + 3
					for _, k := range kernelSets() {
						active.Store(k)
						got, want := constRow(g*ld, guard), constRow(g*ld, guard)
						lo, s := make([]float32, d), make([]float32, d)
						DotChannelSpan(c, got, ld, q, g, src, stride, tt, off, n, d, make([]float32, tt*d), lo, s)
						for j := 0; j*tt < off+n; j++ {
							b0, b1 := max(0, off-j*tt), min(tt, off+n-j*tt)
							DotChannelRows(c, want[j*tt+b0-off:], ld, q, g, src[j*stride:][:bb], tt, d, b0, b1, make([]float32, tt*d), lo, s)
						}
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s d=%d g=%d tokens %d+%d %s: score %d = %v, block by block %v",
									c.Name(), d, g, off, n, k.name, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// addRoundBound is how far the integer value kernels may move one
// query's sum of rows with weights w beyond float rounding, by AddRowsRounding's
// contract with factor f: f·Σ_i |w_i|·range_i, a group's range at most twice the
// row's largest decoded magnitude rowMax_i (2.01: the scale's f16 rounding).
func addRoundBound(f float64, w []float32, rowMax []float64) float64 {
	var s float64
	for i, x := range w {
		s += math.Abs(float64(x)) * 2.01 * rowMax[i]
	}
	return f * s
}
