//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/cpufeat"
)

// tileShape is one MultiDot/MultiAxpy shape: g queries, n rows of d values xs apart,
// ld between the queries' scores (or weights).
type tileShape struct{ g, n, d, xs, ld int }

// tileShapes covers every d to 40 (every tail of the 8- and 32-column steps), longer
// rows, every n to 20 (the 8-row groups of dotRowsF32, with their remainders), and
// padded rows and score rows.
func tileShapes() []tileShape {
	var s []tileShape
	for d := 1; d <= 40; d++ {
		s = append(s, tileShape{2, 9, d, d, 9}, tileShape{3, 17, d, d + 3, 20})
	}
	for _, d := range []int{63, 64, 65, 72, 100, 128, 129, 256} {
		s = append(s, tileShape{1, 13, d, d, 13}, tileShape{4, 33, d, d + 1, 40})
	}
	for n := 1; n <= 20; n++ {
		s = append(s, tileShape{2, n, 8, 8, n}, tileShape{5, n, 13, 16, n + 2}, tileShape{1, n, 64, 64, n})
	}
	return append(s, tileShape{2, 64, 8, 8, 64}, tileShape{7, 256, 64, 64, 256}, tileShape{2, 255, 8, 8, 300})
}

// tileRows returns n rows of d values xs apart, the gaps and a tail of 8 values set
// to NaN: a kernel that reads them as data returns NaN.
func tileRows(r *rand.Rand, n, d, xs int) []float32 {
	buf := make([]float32, (n-1)*xs+d+8)
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	for i := range n {
		for c := range d {
			buf[i*xs+c] = float32(r.NormFloat64())
		}
	}
	return buf[:(n-1)*xs+d]
}

// TestMultiDotAsm checks multiDotAsm against multiDotScalar and a float64 reference,
// and that it writes no score outside scores[j·ld : j·ld+n].
func TestMultiDotAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for _, sh := range tileShapes() {
		t.Run(fmt.Sprintf("g=%d/n=%d/d=%d/xs=%d/ld=%d", sh.g, sh.n, sh.d, sh.xs, sh.ld), func(t *testing.T) {
			x := tileRows(r, sh.n, sh.d, sh.xs)
			q := make([]float32, sh.g*sh.d)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			size := (sh.g-1)*sh.ld + sh.n + 8
			got, want := make([]float32, size), make([]float32, size)
			for i := range got {
				got[i], want[i] = -999, -999
			}
			multiDotAsm(got, sh.ld, q, sh.g, x, sh.xs, sh.n, sh.d)
			multiDotScalar(want, sh.ld, q, sh.g, x, sh.xs, sh.n, sh.d)
			for j := range sh.g {
				for i := range sh.n {
					var ref, mag float64
					for c := range sh.d {
						p := float64(q[j*sh.d+c]) * float64(x[i*sh.xs+c])
						ref += p
						mag += math.Abs(p)
					}
					tol := 1e-6 * mag * (1 + float64(sh.d)/64)
					g, w := got[j*sh.ld+i], want[j*sh.ld+i]
					if !(math.Abs(float64(g)-ref) <= tol) || !(math.Abs(float64(g)-float64(w)) <= 2*tol) {
						t.Fatalf("score (query %d, row %d) = %v, scalar twin %v, float64 %v", j, i, g, w, ref)
					}
				}
			}
			for i := range got {
				if j, k := i/sh.ld, i%sh.ld; (j >= sh.g || k >= sh.n) && got[i] != -999 {
					t.Fatalf("scores[%d] outside the output written: %v", i, got[i])
				}
			}
		})
	}
}

// TestMultiAxpyAsm checks multiAxpyAsm against multiAxpyScalar and a float64
// reference, accumulating into non-zero acc, and that nothing past acc[:g·d] changes.
func TestMultiAxpyAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(33, 34))
	for _, sh := range tileShapes() {
		t.Run(fmt.Sprintf("g=%d/n=%d/d=%d/xs=%d/ld=%d", sh.g, sh.n, sh.d, sh.xs, sh.ld), func(t *testing.T) {
			x := tileRows(r, sh.n, sh.d, sh.xs)
			w := make([]float32, (sh.g-1)*sh.ld+sh.n)
			for i := range w {
				w[i] = float32(r.Float64())
			}
			const guard = 9
			got := make([]float32, sh.g*sh.d+guard)
			for i := range got {
				got[i] = float32(r.NormFloat64())
				if i >= sh.g*sh.d {
					got[i] = -999
				}
			}
			want := append([]float32(nil), got...)
			acc0 := append([]float32(nil), got...)
			multiAxpyAsm(got, w, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
			multiAxpyScalar(want, w, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
			for j := range sh.g {
				for c := range sh.d {
					ref, mag := float64(acc0[j*sh.d+c]), math.Abs(float64(acc0[j*sh.d+c]))
					for i := range sh.n {
						p := float64(w[j*sh.ld+i]) * float64(x[i*sh.xs+c])
						ref += p
						mag += math.Abs(p)
					}
					tol := 1e-6 * mag * (1 + float64(sh.n)/64)
					g, s := got[j*sh.d+c], want[j*sh.d+c]
					if !(math.Abs(float64(g)-ref) <= tol) || !(math.Abs(float64(g)-float64(s)) <= 2*tol) {
						t.Fatalf("acc (query %d, column %d) = %v, scalar twin %v, float64 %v", j, c, g, s, ref)
					}
				}
			}
			for i := sh.g * sh.d; i < len(got); i++ {
				if got[i] != -999 {
					t.Fatalf("acc[%d] past g·d changed: %v", i, got[i])
				}
			}
		})
	}
}

// TestTileAsmExact checks sums that float32 holds exactly (small integers), where
// every summation order agrees: a row, column or lane dropped or counted twice
// shows as a different integer.
func TestTileAsmExact(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	for _, sh := range tileShapes() {
		x := make([]float32, (sh.n-1)*sh.xs+sh.d)
		for i := range x {
			x[i] = float32(i%7 - 3)
		}
		q := make([]float32, max(sh.g*sh.d, (sh.g-1)*sh.ld+sh.n))
		for i := range q {
			q[i] = float32(i%5 - 2)
		}
		a, b := make([]float32, (sh.g-1)*sh.ld+sh.n), make([]float32, (sh.g-1)*sh.ld+sh.n)
		multiDotAsm(a, sh.ld, q, sh.g, x, sh.xs, sh.n, sh.d)
		multiDotScalar(b, sh.ld, q, sh.g, x, sh.xs, sh.n, sh.d)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%+v: MultiDot score %d: asm %v, scalar %v", sh, i, a[i], b[i])
			}
		}
		a, b = make([]float32, sh.g*sh.d), make([]float32, sh.g*sh.d)
		multiAxpyAsm(a, q, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
		multiAxpyScalar(b, q, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%+v: MultiAxpy acc %d: asm %v, scalar %v", sh, i, a[i], b[i])
			}
		}
	}
}

// TestTileAsmSplitInvariant checks what attention relies on to give the same
// result however tokens are split into spans and tiles (as the scalar twins do): a
// score depends only on its query and row, not on the other rows of the call, and
// MultiAxpy's sums are the same bit for bit whether the rows come in one call or
// several, and the queries together or one at a time.
func TestTileAsmSplitInvariant(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(37, 38))
	for _, sh := range tileShapes() {
		x := tileRows(r, sh.n, sh.d, sh.xs)
		q := make([]float32, max(sh.g*sh.d, (sh.g-1)*sh.ld+sh.n))
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		all, one := make([]float32, (sh.g-1)*sh.ld+sh.n), make([]float32, 1)
		multiDotAsm(all, sh.ld, q, sh.g, x, sh.xs, sh.n, sh.d)
		for j := range sh.g {
			for i := range sh.n {
				multiDotAsm(one, 1, q[j*sh.d:], 1, x[i*sh.xs:], sh.xs, 1, sh.d)
				if math.Float32bits(one[0]) != math.Float32bits(all[j*sh.ld+i]) {
					t.Fatalf("%+v: score (query %d, row %d) alone %v, among %d rows %v", sh, j, i, one[0], sh.n, all[j*sh.ld+i])
				}
			}
		}
		acc0 := make([]float32, sh.g*sh.d)
		for i := range acc0 {
			acc0[i] = float32(r.NormFloat64())
		}
		whole := append([]float32(nil), acc0...)
		multiAxpyAsm(whole, q, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
		for _, k := range []int{1, sh.n / 2, sh.n - 1} {
			if k <= 0 || k >= sh.n {
				continue
			}
			split := append([]float32(nil), acc0...)
			multiAxpyAsm(split, q, sh.ld, sh.g, x, sh.xs, k, sh.d)
			multiAxpyAsm(split, q[k:], sh.ld, sh.g, x[k*sh.xs:], sh.xs, sh.n-k, sh.d)
			for i := range whole {
				if math.Float32bits(split[i]) != math.Float32bits(whole[i]) {
					t.Fatalf("%+v: rows split at %d: acc[%d] = %v, in one call %v", sh, k, i, split[i], whole[i])
				}
			}
		}
		each := append([]float32(nil), acc0...)
		for j := range sh.g {
			multiAxpyAsm(each[j*sh.d:], q[j*sh.ld:], sh.ld, 1, x, sh.xs, sh.n, sh.d)
		}
		for i := range whole {
			if math.Float32bits(each[i]) != math.Float32bits(whole[i]) {
				t.Fatalf("%+v: queries one at a time: acc[%d] = %v, together %v", sh, i, each[i], whole[i])
			}
		}
	}
}

// TestDecBlockAsm checks decBlockAsm against Channel.Decode, bit for bit, for every
// code width, head sizes that take the assembly (multiples of 8) and others, and
// token ranges of blocks of several lengths, with guards after the rows written.
func TestDecBlockAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(39, 40))
	for _, bits := range []int{8, 4, 3, 2} {
		c := Channel{Bits: bits}
		for _, d := range []int{8, 16, 24, 64, 72, 128, 5, 12, 20} {
			for _, tt := range []int{1, 3, 16, 33} {
				src := make([]float32, tt*d)
				for i := range src {
					src[i] = float32(r.NormFloat64()*3) + float32(i%d)
				}
				block := make([]byte, c.BlockBytes(tt, d))
				c.Encode(block, src, tt, d)
				want := make([]float32, tt*d)
				c.Decode(want, block, tt, d)
				for _, rg := range [][2]int{{0, tt}, {tt / 2, tt}, {0, (tt + 1) / 2}, {tt - 1, tt}} {
					i0, i1 := rg[0], rg[1]
					if i0 >= i1 {
						continue
					}
					dst := make([]float32, (i1-i0)*d+8)
					for i := range dst {
						dst[i] = -999
					}
					lo, s := make([]float32, d), make([]float32, d)
					decBlockAsm(c, dst[:(i1-i0)*d], block, tt, d, i0, i1, lo, s)
					for i := range (i1 - i0) * d {
						if math.Float32bits(dst[i]) != math.Float32bits(want[i0*d+i]) {
							t.Fatalf("bits=%d d=%d t=%d rows %d..%d: value %d = %v, Decode %v", bits, d, tt, i0, i1, i, dst[i], want[i0*d+i])
						}
					}
					for i := (i1 - i0) * d; i < len(dst); i++ {
						if dst[i] != -999 {
							t.Fatalf("bits=%d d=%d t=%d rows %d..%d: dst[%d] past the rows written", bits, d, tt, i0, i1, i)
						}
					}
				}
			}
		}
	}
}

// TestDotChannelAsm checks dotChannelAsm (fused_lossy_amd64.go) against
// dotChannelScalar and float64 products with the decoded block (for the blocks it
// scores with integers, against channelScores alone), with and without F16C, with scratch of the
// least size DotChannelRows allows and a larger one, and guards around each query's scores; it must take
// exactly the head sizes that are multiples of 16.
func TestDotChannelAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(41, 42))
	const guard = -777
	for _, bits := range []int{8, 4, 2} {
		c := Channel{Bits: bits}
		for _, d := range []int{16, 32, 64, 128, 8, 24} {
			for _, tt := range []int{1, 7, 32, 64} {
				src := make([]float32, tt*d)
				for i := range src {
					src[i] = float32(r.NormFloat64()) + float32(i%d%5)
				}
				block := make([]byte, c.BlockBytes(tt, d))
				c.Encode(block, src, tt, d)
				dec := make([]float32, tt*d)
				c.Decode(dec, block, tt, d)
				for _, g := range []int{1, 2, 3, 5} {
					q := make([]float32, g*d)
					for i := range q {
						q[i] = float32(r.NormFloat64())
					}
					for _, rg := range [][2]int{{0, tt}, {tt / 3, tt}, {0, (tt + 1) / 2}} {
						i0, i1 := rg[0], rg[1]
						if i0 >= i1 {
							continue
						}
						for _, f16c := range f16cModes() {
							for _, big := range []bool{false, true} {
								n := max((i1-i0)*d, g*d+2*d+g+4)
								if big {
									n += tt * d
								}
								tmp := make([]float32, n)
								ld := i1 - i0 + 2
								got := make([]float32, g*ld)
								for i := range got {
									got[i] = guard
								}
								prev := setF16C(f16c)
								ok := dotChannelAsm(c, got, ld, q, g, block, tt, d, i0, i1, tmp)
								setF16C(prev)
								if ok != (d%16 == 0) {
									t.Fatalf("bits=%d d=%d: dotChannelAsm reports %v", bits, d, ok)
								}
								if !ok {
									continue
								}
								want := make([]float32, g*ld)
								dotChannelScalar(c, want, ld, q, g, block, tt, d, i0, i1, make([]float32, d))
								mode := chanMode(c, d) // integer scores: the reference models them
								for j := range g {
									sc := make([]float64, tt)
									channelScores(c, sc, q[j*d:(j+1)*d], block, tt, d, mode)
									for i := range ld {
										gv := got[j*ld+i]
										if i >= i1-i0 {
											if gv != guard {
												t.Fatalf("bits=%d d=%d t=%d g=%d: score (%d,%d) past the range written", bits, d, tt, g, j, i)
											}
											continue
										}
										ref, mag := sc[i0+i], 0.0
										for x := range d {
											mag += math.Abs(float64(q[j*d+x]) * float64(dec[(i0+i)*d+x]))
										}
										tol := 2e-6*mag + 1e-30
										if !(math.Abs(float64(gv)-ref) <= tol) || mode == 0 && !(math.Abs(float64(gv)-float64(want[j*ld+i])) <= 2*tol) {
											t.Fatalf("bits=%d d=%d t=%d g=%d rows %d..%d big=%v F16C=%v: score (%d,%d) = %v, scalar %v, float64 %v",
												bits, d, tt, g, i0, i1, big, f16c, j, i, gv, want[j*ld+i], ref)
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

// TestDecRowsAsm checks tableDecRows against Affine.Decode row by row, bit for bit, for
// every code width and group sizes that take the assembly (multiples of 8 dividing d,
// and whole rows) and others, rows apart by more than their bytes, with constant and
// zero groups among random ones, rows of random bytes (any f16 scale and zero: −0,
// negative, infinite, NaN) and guards after the values written.
func TestDecRowsAsm(t *testing.T) {
	if !cpufeat.AVX2FMA || !haveF16C {
		t.Skip("CPU without AVX2, FMA and F16C")
	}
	r := rand.New(rand.NewPCG(45, 46))
	for _, bits := range []int{8, 4, 2} {
		for _, group := range []int{0, 8, 16, 32, 64, 12} {
			for _, d := range []int{8, 16, 24, 32, 64, 128, 12, 20} {
				c := Affine{Bits: bits, Group: group}
				const n = 12
				rb := c.RowBytes(d)
				stride := rb + 3
				src := make([]byte, (n-1)*stride+rb)
				want := make([]float32, n*d)
				for i := range n {
					row := make([]float32, d)
					for x := range row {
						switch i % 3 {
						case 0:
							row[x] = float32(r.NormFloat64() * 10)
						case 1:
							row[x] = 1.5 // constant groups: scale 0
						default:
							row[x] = float32(x%5) - 2
						}
					}
					c.Encode(src[i*stride:][:rb], row)
					if i >= 9 {
						for x := range rb {
							src[i*stride+x] = byte(r.Uint32())
						}
						if i == 9 { // every scale and zero −0: 0 + (−0·code + −0) is +0
							for x := 0; x < rb; x += c.RowBytes(c.group(d)) { // group by group
								src[i*stride+x], src[i*stride+x+1] = 0, 0x80
								src[i*stride+x+2], src[i*stride+x+3] = 0, 0x80
							}
						}
					}
					c.Decode(want[i*d:(i+1)*d], src[i*stride:][:rb])
				}
				got := make([]float32, n*d+8)
				for i := range got {
					got[i] = -999
				}
				tableDecRows(kernelsOf(c), c, got[:n*d], src, stride, n, d)
				for i := range n * d {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("%s d=%d: value %d (row %d) = %v, Decode %v", c.Name(), d, i, i/d, got[i], want[i])
					}
				}
				for i := n * d; i < len(got); i++ {
					if got[i] != -999 {
						t.Fatalf("%s d=%d: dst[%d] past the rows written", c.Name(), d, i)
					}
				}
			}
		}
	}
}

// TestDecRowsAsmPlain checks tableDecRows for F16, BF16, Int8 and FP8 rows (and the
// scalar twin's shapes: d not a multiple of 8) against Decode row by row, bit for bit
// (a NaN only as a NaN), with encoded rows and rows of random bytes (every f16,
// bfloat16 and FP8 pattern and row scale: subnormal, −0, infinite, NaN), rows apart by more than
// their bytes and guards after the values written.
func TestDecRowsAsmPlain(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(47, 48))
	for _, c := range []RowCodec{F16{}, BF16{}, Int8{}, FP8{Format: E4M3}, FP8{Format: E5M2},
		FP8{Format: E4M3, TensorScale: 0.37}, FP8{Format: E5M2, TensorScale: 3e5}} {
		for _, d := range []int{8, 16, 24, 64, 128, 12, 1} {
			for _, n := range []int{1, 2, 7, 33} {
				rb := c.RowBytes(d)
				stride := rb + 5
				src := make([]byte, (n-1)*stride+rb)
				want := make([]float32, n*d)
				for i := range n {
					if i%2 == 0 {
						c.Encode(src[i*stride:][:rb], gaussRow(r, d, 10))
					} else {
						for x := range rb {
							src[i*stride+x] = byte(r.Uint32())
						}
					}
					c.Decode(want[i*d:(i+1)*d], src[i*stride:][:rb])
				}
				got := make([]float32, n*d+8)
				for i := range got {
					got[i] = -999
				}
				tableDecRows(kernelsOf(c), c, got[:n*d], src, stride, n, d)
				for i := range n * d {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("%s d=%d n=%d: value %d (row %d) = %v, Decode %v", c.Name(), d, n, i, i/d, got[i], want[i])
					}
				}
				for i := n * d; i < len(got); i++ {
					if got[i] != -999 {
						t.Fatalf("%s d=%d n=%d: dst[%d] past the rows written", c.Name(), d, n, i)
					}
				}
			}
		}
	}
}

// BenchmarkTileAsm times the tile kernels against their scalar twins on a small
// model's shape (head dimension 8, 2 queries per KV head) and a larger one.
func BenchmarkTileAsm(b *testing.B) {
	if !cpufeat.AVX2FMA {
		b.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(35, 36))
	for _, sh := range []tileShape{{2, 64, 8, 8, 64}, {4, 32, 64, 64, 32}} {
		x := tileRows(r, sh.n, sh.d, sh.xs)
		q := make([]float32, max(sh.g*sh.d, sh.g*sh.ld))
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		scores, acc := make([]float32, sh.g*sh.ld), make([]float32, sh.g*sh.d)
		name := fmt.Sprintf("g=%d/n=%d/d=%d", sh.g, sh.n, sh.d)
		for _, k := range []struct {
			name      string
			dot, axpy func([]float32, []float32, int, int, []float32, int, int, int)
		}{
			{"scalar", func(s, q []float32, ld, g int, x []float32, xs, n, d int) { multiDotScalar(s, ld, q, g, x, xs, n, d) }, multiAxpyScalar},
			{"asm", func(s, q []float32, ld, g int, x []float32, xs, n, d int) { multiDotAsm(s, ld, q, g, x, xs, n, d) }, multiAxpyAsm},
		} {
			b.Run("dot/"+name+"/"+k.name, func(b *testing.B) {
				for b.Loop() {
					k.dot(scores, q, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
				}
			})
			b.Run("axpy/"+name+"/"+k.name, func(b *testing.B) {
				for b.Loop() {
					k.axpy(acc, q, sh.ld, sh.g, x, sh.xs, sh.n, sh.d)
				}
			})
		}
	}
}

// BenchmarkChannelAsm times DotChannelRows (the scores of a KIVI key block's 32
// tokens) with the scalar kernels and with this build's SIMD set, at a small
// model's head size (8: decoded by decBlock, scored by MultiDot) and at 64 (the
// Channel kernel). ns/row is per token (all g queries).
func BenchmarkChannelAsm(b *testing.B) {
	if simdKernels == nil {
		b.Skip("no SIMD kernels")
	}
	prev := active.Load()
	defer active.Store(prev)
	r := rand.New(rand.NewPCG(43, 44))
	const tt, g = 32, 2
	for _, d := range []int{8, 64} {
		for _, bits := range []int{4, 2} {
			c := Channel{Bits: bits}
			block := make([]byte, c.BlockBytes(tt, d))
			c.Encode(block, gaussRow(r, tt*d, 1), tt, d)
			q := gaussRow(r, g*d, 1)
			scores := make([]float32, g*tt)
			tmp, lo, s := make([]float32, max(ScratchFloats(d), tt*d)), make([]float32, d), make([]float32, d)
			for _, k := range []*kernelSet{scalarKernels, simdKernels} {
				b.Run(fmt.Sprintf("d=%d/%s/%s", d, c.Name(), k.name), func(b *testing.B) {
					active.Store(k)
					for b.Loop() {
						DotChannelRows(c, scores, tt, q, g, block, tt, d, 0, tt, tmp, lo, s)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tt), "ns/row")
				})
			}
		}
	}
}

// TestWidenChanParams compares widenChanParams with its scalar twin, chanParams, bit
// for bit over every f16 value (infinities and subnormals included; a NaN stays a
// NaN, F16C quieting the signaling ones), for head sizes of one to many vectors.
func TestWidenChanParams(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C")
	}
	for _, d := range []int{8, 16, 24, 64, 128, 256} {
		hdr := make([]byte, 4*d)
		want, got := make([]float32, 2*d), make([]float32, 2*d)
		for h0 := 0; h0 < 1<<16; h0 += 2 * d {
			for c := range 2 * d {
				putF16(hdr[2*c:], uint16(h0+c))
			}
			chanParams(want[:d], want[d:], hdr, d)
			widenChanParams(&got[0], &got[d], &hdr[0], d)
			for i := range want {
				nan := got[i] != got[i] && want[i] != want[i]
				if !nan && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("d=%d f16 %#04x: %#x, twin %#x", d, uint16(h0+2*(i%d)+i/d), math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}
