package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
	"kvq/internal/procstat"
)

// TestQ8KernelTwins checks every kernel set's Q8_0 dot kernels (one row, consecutive rows
// in one call, one row against 4 interleaved tokens) against the scalar reference on
// random blocks with codes over the whole int8 range, for block counts that exercise the
// unrolled loops and their tails. Rows are cut to their exact length, so a kernel that
// reads past its row fails the slice bounds of its wrapper.
func TestQ8KernelTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for _, nb := range []int{1, 2, 3, 5, 7, 8, 9, 10, 11, 16, 17, 24, 31, 64} {
		cols := nb * blockElems
		stride := nb*q8BlockBytes + 34*r.IntN(3) // rows need not be adjacent
		w := make([]byte, 3*stride+nb*q8BlockBytes)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for b := 0; b < len(w)/q8BlockBytes; b++ { // finite scales in [2^-10, 2^-6)
			w[b*q8BlockBytes] = byte(r.Uint32())
			w[b*q8BlockBytes+1] = byte(0x14 + r.IntN(16))
		}
		x := randVals(r, 4*cols, 1)
		xq, xd := make([]int8, 4*cols), make([]float32, 4*nb)
		scalarKernels.quantQ8(xq, xd, x)
		xi, xs := make([]int8, 4*cols), make([]float32, 8*nb)
		interleave4(xi, xs, xq, xd)
		row := func(i int) []byte { return w[i*stride : i*stride+nb*q8BlockBytes] }
		// Tolerance: float32 rounding of the block sums, relative to Σ|terms|.
		tol := func(ri, tok int) float64 {
			var s float64
			for b := 0; b < nb; b++ {
				blk := row(ri)[b*q8BlockBytes:]
				d := float64(f16Table[uint16(blk[0])|uint16(blk[1])<<8]) * float64(xd[tok*nb+b])
				for j := 0; j < blockElems; j++ {
					s += math.Abs(d * float64(int8(blk[2+j])) * float64(xq[tok*cols+b*blockElems+j]))
				}
			}
			return 1e-5*s + 1e-30
		}
		for _, k := range kernelModes(t) {
			t.Run(fmt.Sprintf("%s/nb=%d", k.name, nb), func(t *testing.T) {
				var gotRows [4]float32
				k.dotQ8Rows(gotRows[:], w, stride, xq[:cols], xd[:nb])
				for ri := 0; ri < 4; ri++ {
					want := scalarKernels.dotQ8(row(ri), xq[:cols], xd[:nb])
					if d := math.Abs(float64(gotRows[ri] - want)); d > tol(ri, 0) {
						t.Errorf("dotQ8Rows row %d = %v, scalar %v", ri, gotRows[ri], want)
					}
					if got := k.dotQ8(row(ri), xq[:cols], xd[:nb]); math.Abs(float64(got-want)) > tol(ri, 0) {
						t.Errorf("dotQ8 row %d = %v, scalar %v", ri, got, want)
					}
				}
				// dotQ8x4N over 3 groups: the 4 tokens repeated, results every rows values.
				const rows, groups = 5, 3
				xiN, xsN := make([]int8, 0, groups*len(xi)), make([]float32, 0, groups*len(xs))
				for range groups {
					xiN, xsN = append(xiN, xi...), append(xsN, xs...)
				}
				outN := make([]float32, 4*groups*rows)
				for i := range outN {
					outN[i] = -1
				}
				k.dotQ8x4N(outN[2:], rows, row(2), xiN, xsN, groups)
				for i, v := range outN {
					tok, ok := (i-2)/rows, (i-2)%rows == 0 && i >= 2
					if !ok {
						if v != -1 {
							t.Errorf("dotQ8x4N wrote out[%d] = %v, outside its results", i, v)
						}
						continue
					}
					want := scalarKernels.dotQ8(row(2), xq[tok%4*cols:(tok%4+1)*cols], xd[tok%4*nb:(tok%4+1)*nb])
					if d := math.Abs(float64(v - want)); d > tol(2, tok%4) {
						t.Errorf("dotQ8x4N token %d = %v, scalar %v", tok, v, want)
					}
				}
			})
		}
	}
}

// TestQ8RowsMatchDot checks that in every kernel set a row's dotQ8Rows sum is bit for
// bit its dotQ8 sum, so a decode product (rows in runs through dotQ8Rows) gives the
// results a per-row product gives, whatever the block count (the assembly takes 8 blocks
// at a time, then 2, then 1) and whatever scales and codes the blocks hold.
func TestQ8RowsMatchDot(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, nb := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 25, 63, 64, 65, 96} {
		cols, stride := nb*blockElems, nb*q8BlockBytes+2*r.IntN(3)
		const rows = 13
		w := make([]byte, (rows-1)*stride+nb*q8BlockBytes)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for b := 0; b < len(w)/q8BlockBytes; b++ { // finite scales, some negative
			w[b*q8BlockBytes+1] = halfHigh(r)
		}
		x := randVals(r, cols, 1)
		xq, xd := make([]int8, cols), make([]float32, nb)
		scalarKernels.quantQ8(xq, xd, x)
		for _, k := range kernelModes(t) {
			got := nanSlice(rows)
			k.dotQ8Rows(got, w, stride, xq, xd)
			for i := range got {
				want := k.dotQ8(w[i*stride:i*stride+nb*q8BlockBytes], xq, xd)
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Errorf("%s nb=%d row %d: dotQ8Rows %v, dotQ8 %v", k.name, nb, i, got[i], want)
				}
			}
		}
	}
}

// BenchmarkQ8Kernels times the Q8_0 dot kernels of every kernel set on hot data (a
// 768-value row, 24 blocks, as in llama-134m) and reports nanoseconds per row-block:
// dotQ8 one row, dotQ8x4N one row against one group of 4 tokens, dotQ8Tile 4 rows against 4 groups of
// 8 tokens (both per row-token block, so the three compare directly).
func BenchmarkQ8Kernels(b *testing.B) {
	const nb, cols = 24, 24 * blockElems
	r := rand.New(rand.NewPCG(1, 9))
	stride := nb * q8BlockBytes
	w := make([]byte, 4*stride)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for i := 0; i < len(w); i += q8BlockBytes {
		w[i], w[i+1] = 0, 0x18
	}
	x := randVals(r, 4*cols, 1)
	xq, xd := make([]int8, 4*cols), make([]float32, 4*nb)
	scalarKernels.quantQ8(xq, xd, x)
	xi, xs := make([]int8, 4*cols), make([]float32, 8*nb)
	interleave4(xi, xs, xq, xd)
	const groups = 4
	xg, xdg := make([]int16, 8*groups*cols), make([]float32, 8*groups*nb)
	for g := 0; g < groups; g++ { // the 4 tokens twice per group
		pack8Scalar(xg[8*g*cols:8*(g+1)*cols], xdg[8*g*nb:8*(g+1)*nb], append(xq[:4*cols:4*cols], xq...), append(xd[:4*nb:4*nb], xd...), 8)
	}
	w16, dw := make([]int16, 4*cols), make([]float32, 4*nb)
	scalarKernels.widenQ8(w16, dw, w, stride, nb)
	tout := make([]float32, 8*groups*4)
	sets := []*kernelSet{scalarKernels}
	if simdKernels != nil {
		sets = append(sets, simdKernels)
	}
	var sink float32
	var res [4]float32
	for _, k := range sets {
		b.Run(k.name+"/dotQ8", func(b *testing.B) {
			for b.Loop() {
				sink += k.dotQ8(w[:stride], xq[:cols], xd[:nb])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nb), "ns/block")
		})
		b.Run(k.name+"/dotQ8Rows", func(b *testing.B) {
			for b.Loop() {
				k.dotQ8Rows(res[:], w, stride, xq[:cols], xd[:nb])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4*nb), "ns/block")
		})
		b.Run(k.name+"/dotQ8x4N", func(b *testing.B) {
			c0 := procstat.CPU()
			for b.Loop() {
				k.dotQ8x4N(res[:], 1, w[:stride], xi, xs, 1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4*nb), "ns/block")
			b.ReportMetric(float64(procstat.CPU()-c0)/float64(b.N*4*nb), "cpu-ns/block")
		})
		b.Run(k.name+"/dotQ8Tile", func(b *testing.B) {
			c0 := procstat.CPU()
			for b.Loop() {
				k.dotQ8Tile(tout, 4, w16, dw, nil, xg, xdg, nil, groups)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4*8*groups*nb), "ns/block")
			b.ReportMetric(float64(procstat.CPU()-c0)/float64(b.N*4*8*groups*nb), "cpu-ns/block")
		})
	}
	_ = sink
}

// TestQ8TileTwins checks every kernel set's widenQ8 (exactly) and dotQ8Tile against the
// scalar references and against dotQ8Scalar of the unpacked rows and tokens, on random
// blocks with codes over the whole int8 range (−128 included), for block counts, group
// counts and partial last groups (tokens packed as zeros) that exercise the loops, without
// and with block minimums (the Q4_K term Σ_b dm·xd·xsum, subtracted). The output has room
// around the results, filled with a marker: a write outside them fails.
func TestQ8TileTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 3))
	for _, nb := range []int{1, 2, 3, 5, 24, 64} {
		for _, tc := range []struct{ groups, last, rows int }{{1, 8, 4}, {2, 3, 6}, {3, 8, 9}, {1, 1, 5}} {
			cols := nb * blockElems
			stride := nb*q8BlockBytes + 34*r.IntN(3)
			w := make([]byte, 3*stride+nb*q8BlockBytes)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			for b := 0; b < len(w)/q8BlockBytes; b++ { // finite scales in [2^-10, 2^-6)
				w[b*q8BlockBytes] = byte(r.Uint32())
				w[b*q8BlockBytes+1] = byte(0x14 + r.IntN(16))
			}
			n := 8*(tc.groups-1) + tc.last
			x := randVals(r, n*cols, 1)
			xq, xd := make([]int8, n*cols), make([]float32, n*nb)
			scalarKernels.quantQ8(xq, xd, x)
			xg, xdg := make([]int16, 8*tc.groups*cols), make([]float32, 8*tc.groups*nb)
			for g := 0; g < tc.groups; g++ {
				t0, t1 := 8*g, min(n, 8*g+8)
				pack8Scalar(xg[t0*cols:(t0+8)*cols], xdg[t0*nb:(t0+8)*nb], xq[t0*cols:t1*cols], xd[t0*nb:t1*nb], t1-t0)
			}
			w16, dw := make([]int16, 4*cols), make([]float32, 4*nb)
			scalarKernels.widenQ8(w16, dw, w, stride, nb)
			xsum, xsg := make([]int32, n*nb), make([]float32, 8*tc.groups*nb)
			blockSums(xsum, xq)
			for g := 0; g < tc.groups; g++ {
				t0, t1 := 8*g, min(n, 8*g+8)
				packSums8(xsg[t0*nb:(t0+8)*nb], xd[t0*nb:t1*nb], xsum[t0*nb:t1*nb], t1-t0)
			}
			mins := make([]float32, 4*nb)
			for i := range mins {
				mins[i] = float32(r.Float64()) * 1e-2
			}
			const mark = -7.5
			for _, k := range kernelModes(t) {
				for _, dm := range [][]float32{nil, mins} {
					t.Run(fmt.Sprintf("%s/nb=%d/groups=%d/last=%d/mins=%v", k.name, nb, tc.groups, tc.last, dm != nil), func(t *testing.T) {
						kw, kd := make([]int16, 4*cols), make([]float32, 4*nb)
						k.widenQ8(kw, kd, w, stride, nb)
						for i := range kw {
							if kw[i] != w16[i] {
								t.Fatalf("widenQ8 code %d = %d, scalar %d", i, kw[i], w16[i])
							}
						}
						for i := range kd {
							if kd[i] != dw[i] {
								t.Fatalf("widenQ8 scale %d = %v, scalar %v", i, kd[i], dw[i])
							}
						}
						out := make([]float32, 8*tc.groups*tc.rows+2)
						for i := range out {
							out[i] = mark
						}
						var sg []float32
						if dm != nil {
							sg = xsg
						}
						k.dotQ8Tile(out[1:], tc.rows, w16, dw, dm, xg, xdg, sg, tc.groups)
						for i, v := range out {
							tok, ri := (i-1)/tc.rows, (i-1)%tc.rows
							if i == 0 || i == len(out)-1 || ri >= 4 {
								if v != mark {
									t.Errorf("dotQ8Tile wrote out[%d] = %v, outside its results", i, v)
								}
								continue
							}
							want, tol := float32(0), 0.0
							if tok < n {
								row := w[ri*stride : ri*stride+nb*q8BlockBytes]
								want = scalarKernels.dotQ8(row, xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb])
								for b := 0; b < nb; b++ { // float32 rounding, relative to Σ|block terms|
									blk := (*[q8BlockBytes]byte)(row[b*q8BlockBytes:])
									a := dotCodes8(blk, (*[blockElems]int8)(xq[tok*cols+b*blockElems:]))
									tol += 1e-5 * math.Abs(float64(dw[4*b+ri])*float64(xd[tok*nb+b])*float64(a))
									if dm != nil {
										m := float64(dm[4*b+ri]) * float64(xd[tok*nb+b]) * float64(xsum[tok*nb+b])
										want -= float32(m)
										tol += 1e-5 * math.Abs(m)
									}
								}
							}
							if d := math.Abs(float64(v - want)); d > tol {
								t.Errorf("dotQ8Tile row %d token %d = %v, want %v", ri, tok, v, want)
							}
						}
					})
				}
			}
		}
	}
}

// TestTileWideners checks that the tile wideners of Q8_0, Q4_0, Q5_0 and Q6_K (every
// kernel set's widenQ8, widenQ4, widenQ5 and widenQ6K) write weights and scales whose products are the
// rows' values as gguf.Dequantize decodes them, bit for bit, on random blocks, for up to
// 4 rows with a row stride longer than a row; rows past the ones asked for stay
// untouched.
func TestTileWideners(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	type widener struct {
		name string
		f    tileWiden
	}
	for _, tc := range []struct {
		typ        gguf.TensorType
		blockBytes int
		scaleAt    []int // byte offsets of binary16 scales in a block
	}{
		{gguf.TypeQ8_0, q8BlockBytes, []int{0}},
		{gguf.TypeQ4_0, q4BlockBytes, []int{0}},
		{gguf.TypeQ5_0, q5BlockBytes, []int{0}},
		{gguf.TypeQ6_K, q6KBlockBytes, []int{208}},
	} {
		var ws []widener
		for _, k := range kernelModes(t) {
			ws = append(ws, widener{k.name, tileWidener(k, tc.typ)})
		}
		for _, nb := range []int{8, 16, 24} {
			cols := nb * blockElems
			rb, err := tc.typ.RowBytes(cols)
			if err != nil {
				t.Fatal(err)
			}
			stride := rb + 7
			w := make([]byte, 4*stride)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			for row := 0; row < 4; row++ {
				for b := row * stride; b+tc.blockBytes <= row*stride+rb; b += tc.blockBytes {
					for _, at := range tc.scaleAt { // finite scales
						w[b+at+1] = byte(0x10 + r.IntN(32))
					}
				}
			}
			for _, wd := range ws {
				for _, rows := range []int{4, 3, 1} {
					w16, dw := make([]int16, 4*cols), make([]float32, 4*nb)
					for i := range w16 {
						w16[i] = 12345
					}
					wd.f(w16[:rows*cols], dw, w, stride, nb)
					want := make([]float32, cols)
					for row := 0; row < 4; row++ {
						if row >= rows {
							for c := 0; c < cols; c++ {
								if w16[row*cols+c] != 12345 {
									t.Fatalf("%v %s rows=%d: wrote row %d", tc.typ, wd.name, rows, row)
								}
							}
							continue
						}
						if err := gguf.Dequantize(tc.typ, want, w[row*stride:row*stride+rb]); err != nil {
							t.Fatal(err)
						}
						for c, v := range want {
							if got := dw[4*(c/blockElems)+row] * float32(w16[row*cols+c]); got != v {
								t.Fatalf("%v %s nb=%d row %d column %d: %v·%d = %v, Dequantize %v",
									tc.typ, wd.name, nb, row, c, dw[4*(c/blockElems)+row], w16[row*cols+c], got, v)
							}
						}
					}
				}
			}
		}
	}
}

// TestWidenQ4K checks that every kernel set's Q4_K tile widener gives the scalar one's
// weights, scales and minimums exactly, and that they give the rows' values as
// gguf.Dequantize decodes them (dw·w16 − dm, within float32 rounding of the two terms), on
// blocks encoded from random values, for 1 to 4 rows.
func TestWidenQ4K(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, nb := range []int{8, 24} {
		cols := nb * blockElems
		for _, rows := range []int{4, 3, 1} {
			data, _ := encodeRows(t, gguf.TypeQ4_K, randVals(r, rows*cols, 0.05), rows, cols)
			rb := len(data) / rows
			w16, dw, dm := make([]int16, rows*cols), make([]float32, 4*nb), make([]float32, 4*nb)
			widenQ4KScalar(w16, dw, dm, data, rb, nb)
			for _, k := range kernelModes(t) {
				kw, kd, km := make([]int16, rows*cols), make([]float32, 4*nb), make([]float32, 4*nb)
				k.widenQ4K(kw, kd, km, data, rb, nb)
				for i := range kw {
					if kw[i] != w16[i] {
						t.Fatalf("%s nb=%d rows=%d: weight %d = %d, scalar %d", k.name, nb, rows, i, kw[i], w16[i])
					}
				}
				for i := range kd {
					if kd[i] != dw[i] || km[i] != dm[i] {
						t.Fatalf("%s nb=%d rows=%d: scale, minimum %d = %v, %v, scalar %v, %v",
							k.name, nb, rows, i, kd[i], km[i], dw[i], dm[i])
					}
				}
			}
			want := make([]float32, cols)
			for row := 0; row < rows; row++ {
				if err := gguf.Dequantize(gguf.TypeQ4_K, want, data[row*rb:(row+1)*rb]); err != nil {
					t.Fatal(err)
				}
				for c, v := range want {
					b := c / blockElems
					a, m := float64(dw[4*b+row])*float64(w16[row*cols+c]), float64(dm[4*b+row])
					if d := math.Abs(a - m - float64(v)); d > 0x1p-22*(math.Abs(a)+math.Abs(m)) {
						t.Fatalf("nb=%d row %d column %d: %v·%d − %v = %v, Dequantize %v",
							nb, row, c, dw[4*b+row], w16[row*cols+c], dm[4*b+row], a-m, v)
					}
				}
			}
		}
	}
}

// TestPack8Twins checks every kernel set's pack8 against pack8Scalar, exactly, for whole
// and partial groups of tokens with codes over the int8 range, on output that starts dirty
// (a partial group must clear what it does not write).
func TestPack8Twins(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	for _, nb := range []int{1, 3, 24} {
		cols := nb * blockElems
		for _, k := range []int{8, 5, 1} {
			xq, xd := make([]int8, k*cols), make([]float32, k*nb)
			for i := range xq {
				xq[i] = int8(r.Uint32())
			}
			for i := range xd {
				xd[i] = float32(r.Float64())
			}
			want, wantD := make([]int16, 8*cols), make([]float32, 8*nb)
			pack8Scalar(want, wantD, xq, xd, k)
			for _, ks := range kernelModes(t) {
				got, gotD := make([]int16, 8*cols), make([]float32, 8*nb)
				for i := range got {
					got[i] = 777
				}
				for i := range gotD {
					gotD[i] = 7
				}
				ks.pack8(got, gotD, xq, xd, k)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s nb=%d k=%d: code %d = %d, pack8Scalar %d", ks.name, nb, k, i, got[i], want[i])
					}
				}
				for i := range wantD {
					if gotD[i] != wantD[i] {
						t.Fatalf("%s nb=%d k=%d: scale %d = %v, pack8Scalar %v", ks.name, nb, k, i, gotD[i], wantD[i])
					}
				}
			}
		}
	}
}

// TestQ4KRowsMatchDot: in every kernel set a Q4_K row's dotQ4KRows sum is bit for bit
// its dotQ4K sum, for any super-block count, row stride and block contents (random
// bytes: every scale and minimum bit pattern; finite binary16 d and dmin of either
// sign), and both are the scalar reference's within float32 rounding.
func TestQ4KRowsMatchDot(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, nsb := range []int{1, 2, 3, 8, 11} {
		cols, stride := nsb*256, nsb*q4KBlockBytes+4*r.IntN(3)
		const rows = 9
		w := make([]byte, (rows-1)*stride+nsb*q4KBlockBytes)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for i := 0; i < rows; i++ {
			for sb := 0; sb < nsb; sb++ {
				o := i*stride + sb*q4KBlockBytes
				w[o+1] = halfHigh(r) // d
				w[o+3] = halfHigh(r) // dmin
			}
		}
		x := randVals(r, cols, 1)
		xq, xd, xsum := make([]int8, cols), make([]float32, cols/blockElems), make([]int32, cols/blockElems)
		scalarKernels.quantQ8(xq, xd, x)
		blockSums(xsum, xq)
		for _, k := range kernelModes(t) {
			got := nanSlice(rows)
			k.dotQ4KRows(got, w, stride, xq, xd, xsum)
			for i := range got {
				row := w[i*stride : i*stride+nsb*q4KBlockBytes]
				want := k.dotQ4K(row, xq, xd, xsum)
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Errorf("%s nsb=%d row %d: dotQ4KRows %v, dotQ4K %v", k.name, nsb, i, got[i], want)
				}
				ref := dotQ4KScalar(row, xq, xd, xsum)
				var mag float64 // Σ|terms| bounds the float32 rounding of any summation order
				for sb := 0; sb < nsb; sb++ {
					blk := (*[q4KBlockBytes]byte)(row[sb*q4KBlockBytes:])
					d, dmin := math.Abs(float64(f16Table[uint16(blk[0])|uint16(blk[1])<<8])), math.Abs(float64(f16Table[uint16(blk[2])|uint16(blk[3])<<8]))
					sc, m := q4KScales((*[12]byte)(blk[4:16]))
					for j := 0; j < 8; j++ {
						b := 8*sb + j
						mag += (d*float64(sc[j])*15*127*32 + dmin*float64(m[j])*127*32) * math.Abs(float64(xd[b]))
					}
				}
				if diff := math.Abs(float64(want) - float64(ref)); diff > mag*1e-6 {
					t.Errorf("%s nsb=%d row %d: dotQ4K %v, scalar %v (off by %.3g, bound %.3g)", k.name, nsb, i, want, ref, diff, mag*1e-6)
				}
			}
		}
	}
}

// TestRows2MatchRows checks the two-token rows kernels (dotQ4Rows2, dotQ5Rows2,
// dotQ4KRows2, dotQ6KRows2) against the one-token ones for each of their two tokens,
// bit for bit, on random bytes (every scale and minimum bit pattern, every code), for
// every kernel set, rows of 1 to 88 units (odd block counts too) and 1 or 9 rows.
func TestRows2MatchRows(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	types := []struct {
		typ        gguf.TensorType
		unit, vals int   // bytes and values of a block or super-block
		halfs      []int // offsets in a unit of the high bytes of binary16 scales
		cols       []int
	}{
		{gguf.TypeQ4_0, q4BlockBytes, blockElems, []int{1}, []int{32, 96, 160, 512, 2816}},
		{gguf.TypeQ5_0, q5BlockBytes, blockElems, []int{1}, []int{32, 96, 160, 512, 2816}},
		{gguf.TypeQ4_K, q4KBlockBytes, 256, []int{1, 3}, []int{256, 512, 768, 2048, 2816}},
		{gguf.TypeQ6_K, q6KBlockBytes, 256, []int{209}, []int{256, 512, 768, 2048, 2816}},
	}
	for _, ty := range types {
		for _, cols := range ty.cols {
			for _, rows := range []int{1, 9} {
				units := cols / ty.vals
				rb := units * ty.unit
				w := make([]byte, rows*rb)
				for i := range w {
					w[i] = byte(r.Uint32())
				}
				for u := 0; u < rows*units; u++ { // finite scales of moderate size
					for _, h := range ty.halfs {
						w[u*ty.unit+h] = halfHigh(r)
					}
				}
				nb := cols / blockElems
				xq, xd, xsum := make([]int8, 2*cols), make([]float32, 2*nb), make([]int32, 2*nb)
				for tok := range 2 {
					scalarKernels.quantQ8(xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], randVals(r, cols, 1))
				}
				blockSums(xsum, xq)
				for _, k := range kernelModes(t) {
					got := nanSlice(2 * rows)
					one := map[gguf.TensorType]func([]float32, []byte, int, []int8, []float32){
						gguf.TypeQ4_0: k.dotQ4Rows, gguf.TypeQ5_0: k.dotQ5Rows, gguf.TypeQ6_K: k.dotQ6KRows,
					}[ty.typ]
					switch ty.typ {
					case gguf.TypeQ4_0:
						k.dotQ4Rows2(got[:rows], got[rows:], w, rb, xq, xd)
					case gguf.TypeQ5_0:
						k.dotQ5Rows2(got[:rows], got[rows:], w, rb, xq, xd)
					case gguf.TypeQ4_K:
						k.dotQ4KRows2(got[:rows], got[rows:], w, rb, xq, xd, xsum)
					case gguf.TypeQ6_K:
						k.dotQ6KRows2(got[:rows], got[rows:], w, rb, xq, xd)
					}
					for tok := range 2 {
						want := nanSlice(rows)
						txq, txd := xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb]
						if ty.typ == gguf.TypeQ4_K {
							k.dotQ4KRows(want, w, rb, txq, txd, xsum[tok*nb:(tok+1)*nb])
						} else {
							one(want, w, rb, txq, txd)
						}
						for i := range want {
							if g := got[tok*rows+i]; math.Float32bits(g) != math.Float32bits(want[i]) {
								t.Errorf("%v %s %d values rows=%d token %d row %d: two-token kernel %v, one-token %v", ty.typ, k.name, cols, rows, tok, i, g, want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestQ4KExtremeCodes: codes 15, scales and minimums 63 against activations that
// quantize to ±127, the largest integer sums a Q4_K product forms (a 16-bit pair sum
// of 2·15·127 = 3810 must not saturate; the integer dot is exact).
func TestQ4KExtremeCodes(t *testing.T) {
	const nsb = 2
	var blk [q4KBlockBytes]byte
	blk[0], blk[1] = 0x00, 0x3c // d = 1
	blk[2], blk[3] = 0x00, 0x38 // dmin = 0.5
	for i := 4; i < 16; i++ {
		blk[i] = 0xff // every 6-bit scale and minimum 63
	}
	for i := 16; i < q4KBlockBytes; i++ {
		blk[i] = 0xff // every code 15
	}
	w := append(blk[:], blk[:]...)
	for _, sign := range []float32{1, -1} {
		x := make([]float32, nsb*256)
		for i := range x {
			x[i] = sign
		}
		xq, xd, xsum := make([]int8, len(x)), make([]float32, len(x)/blockElems), make([]int32, len(x)/blockElems)
		scalarKernels.quantQ8(xq, xd, x)
		blockSums(xsum, xq)
		// Every value is 63·15 − 0.5·63 = 913.5; the activations are exactly ±1.
		want := sign * 913.5 * float32(len(x))
		for _, k := range kernelModes(t) {
			got := nanSlice(1)
			k.dotQ4KRows(got, w, nsb*q4KBlockBytes, xq, xd, xsum)
			if d := math.Abs(float64(got[0] - want)); d > 1e-5*math.Abs(float64(want)) {
				t.Errorf("%s sign %v: %v, want %v", k.name, sign, got[0], want)
			}
		}
	}
}

// TestQ6KRowsMatchDot: in every kernel set a Q6_K row's dotQ6KRows sum is bit for bit
// its dotQ6K sum, for any super-block count, row stride and block contents (random
// bytes: every code and int8 scale; finite binary16 d of either sign), and both are the
// scalar reference's within float32 rounding.
func TestQ6KRowsMatchDot(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, nsb := range []int{1, 2, 3, 8, 11} {
		cols, stride := nsb*256, nsb*q6KBlockBytes+2*r.IntN(3)
		const rows = 9
		w := make([]byte, (rows-1)*stride+nsb*q6KBlockBytes)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for i := 0; i < rows; i++ {
			for sb := 0; sb < nsb; sb++ {
				w[i*stride+sb*q6KBlockBytes+209] = halfHigh(r) // d
			}
		}
		x := randVals(r, cols, 1)
		xq, xd := make([]int8, cols), make([]float32, cols/blockElems)
		scalarKernels.quantQ8(xq, xd, x)
		for _, k := range kernelModes(t) {
			got := nanSlice(rows)
			k.dotQ6KRows(got, w, stride, xq, xd)
			for i := range got {
				row := w[i*stride : i*stride+nsb*q6KBlockBytes]
				want := k.dotQ6K(row, xq, xd)
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Errorf("%s nsb=%d row %d: dotQ6KRows %v, dotQ6K %v", k.name, nsb, i, got[i], want)
				}
				ref := dotQ6KScalar(row, xq, xd)
				var mag float64 // Σ|terms| bounds the float32 rounding of any summation order
				for sb := 0; sb < nsb; sb++ {
					blk := row[sb*q6KBlockBytes:]
					d := math.Abs(float64(f16Table[uint16(blk[208])|uint16(blk[209])<<8]))
					for j := 0; j < 16; j++ {
						mag += d * math.Abs(float64(int8(blk[192+j]))) * 32 * 127 * 16 * math.Abs(float64(xd[8*sb+j/2]))
					}
				}
				if diff := math.Abs(float64(want) - float64(ref)); diff > mag*1e-6 {
					t.Errorf("%s nsb=%d row %d: dotQ6K %v, scalar %v (off by %.3g, bound %.3g)", k.name, nsb, i, want, ref, diff, mag*1e-6)
				}
			}
		}
	}
}

// TestQ6KExtremeCodes: codes 63 and 0 (values +31 and −32 times the scale), scales
// −128 and 127, against activations that quantize to ±127: the largest integer sums
// a Q6_K product forms (63·127·2 per 16-bit pair) must not saturate.
func TestQ6KExtremeCodes(t *testing.T) {
	for _, tc := range []struct {
		code  int
		scale int8
	}{{63, 127}, {0, 127}, {63, -128}, {0, -128}} {
		var blk [q6KBlockBytes]byte
		lo, hi := byte(tc.code&15), byte(tc.code>>4)
		for i := 0; i < 128; i++ {
			blk[i] = lo | lo<<4
		}
		for i := 128; i < 192; i++ {
			blk[i] = hi | hi<<2 | hi<<4 | hi<<6
		}
		for i := 192; i < 208; i++ {
			blk[i] = byte(tc.scale)
		}
		blk[208], blk[209] = 0x00, 0x3c // d = 1
		for _, sign := range []float32{1, -1} {
			x := make([]float32, 256)
			for i := range x {
				x[i] = sign
			}
			xq, xd := make([]int8, 256), make([]float32, 8)
			scalarKernels.quantQ8(xq, xd, x)
			want := sign * float32(tc.scale) * float32(tc.code-32) * 256
			for _, k := range kernelModes(t) {
				got := nanSlice(1)
				k.dotQ6KRows(got, blk[:], q6KBlockBytes, xq, xd)
				if d := math.Abs(float64(got[0] - want)); d > 1e-5*math.Abs(float64(want)) {
					t.Errorf("%s code %d scale %d sign %v: %v, want %v", k.name, tc.code, tc.scale, sign, got[0], want)
				}
			}
		}
	}
}

// TestBlockRowsMatchDot: in every kernel set a Q4_0 or Q5_0 row's rows-kernel sum is
// bit for bit its one-row sum and within float32 rounding of the scalar reference, for
// any block count (the assembly takes 2 blocks at a time, then 1), row stride and
// contents: random bytes, and rows of the extreme codes (all bits clear: value −8 or
// −16; all set: 7 or 15) against activations of ±127, where a 16-bit pair sum would
// saturate if the kernels let it.
func TestBlockRowsMatchDot(t *testing.T) {
	type kern = func(*kernelSet) (func([]float32, []byte, int, []int8, []float32), func([]byte, []int8, []float32) float32)
	for _, tc := range []struct {
		name       string
		blockBytes int
		maxCode    float64 // largest |code − offset|
		kernels    kern
		scalar     func([]byte, []int8, []float32) float32
	}{
		{"Q4_0", q4BlockBytes, 8, func(k *kernelSet) (func([]float32, []byte, int, []int8, []float32), func([]byte, []int8, []float32) float32) {
			return k.dotQ4Rows, k.dotQ4
		}, dotQ4Scalar},
		{"Q5_0", q5BlockBytes, 16, func(k *kernelSet) (func([]float32, []byte, int, []int8, []float32), func([]byte, []int8, []float32) float32) {
			return k.dotQ5Rows, k.dotQ5
		}, dotQ5Scalar},
	} {
		r := rand.New(rand.NewPCG(10, uint64(tc.blockBytes)))
		for _, nb := range []int{1, 2, 3, 8, 9, 24, 25} {
			cols, stride := nb*blockElems, nb*tc.blockBytes+2*r.IntN(3)
			const rows = 9
			w := make([]byte, (rows-1)*stride+nb*tc.blockBytes)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			for i := 0; i < rows; i++ {
				for b := 0; b < nb; b++ {
					blk := w[i*stride+b*tc.blockBytes:]
					blk[1] = halfHigh(r) // finite d of either sign
					if i < 2 {           // row 0: every code bit clear; row 1: every bit set
						for j := 2; j < tc.blockBytes; j++ {
							blk[j] = byte(i) * 0xff
						}
					}
				}
			}
			x := randVals(r, cols, 1)
			for i := 0; i < cols; i += 3 {
				x[i] = float32(1-2*(i%2)) * 1e3 // quantizes to ±127
			}
			xq, xd := make([]int8, cols), make([]float32, nb)
			scalarKernels.quantQ8(xq, xd, x)
			for _, k := range kernelModes(t) {
				rowsK, dot := tc.kernels(k)
				got := nanSlice(rows)
				rowsK(got, w, stride, xq, xd)
				for i := range got {
					row := w[i*stride : i*stride+nb*tc.blockBytes]
					want := dot(row, xq, xd)
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Errorf("%s %s nb=%d row %d: rows kernel %v, one-row kernel %v", tc.name, k.name, nb, i, got[i], want)
					}
					ref := tc.scalar(row, xq, xd)
					var mag float64
					for b := 0; b < nb; b++ {
						mag += math.Abs(float64(f16Table[uint16(row[b*tc.blockBytes])|uint16(row[b*tc.blockBytes+1])<<8])) * tc.maxCode * 127 * 32 * math.Abs(float64(xd[b]))
					}
					if diff := math.Abs(float64(want) - float64(ref)); diff > mag*1e-6 {
						t.Errorf("%s %s nb=%d row %d: %v, scalar %v (off by %.3g, bound %.3g)", tc.name, k.name, nb, i, want, ref, diff, mag*1e-6)
					}
				}
			}
		}
	}
}

// halfHigh returns a random high byte of a binary16 scale: exponent field 4..9, so a
// finite magnitude in [2^-11, 2^-5), either sign.
func halfHigh(r *rand.Rand) byte { return byte(0x10+r.IntN(24)) | byte(r.IntN(2))<<7 }
