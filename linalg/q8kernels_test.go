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
// in one call) against the scalar reference on
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
// dotQ8 one row, dotQ8Rows 8 rows, dotQ8RowsX 8 rows, dotQ8Tokens 8 rows against 64 tokens
// (per row-token block, so all compare directly).
func BenchmarkQ8Kernels(b *testing.B) {
	const nb, cols, rows, n = 24, 24 * blockElems, 8, 64
	r := rand.New(rand.NewPCG(1, 9))
	stride := nb * q8BlockBytes
	w := make([]byte, rows*stride)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for i := 0; i < len(w); i += q8BlockBytes {
		w[i], w[i+1] = 0, 0x18
	}
	x := randVals(r, n*cols, 1)
	xq, xd, xsum := make([]int8, n*cols), make([]float32, n*nb), make([]int32, n*nb)
	scalarKernels.quantQ8(xq, xd, x)
	blockSums(xsum, xq)
	xp, xdp := make([]uint32, n*nb*8), make([]float32, n*nb)
	xt := tokenPack{n: n, nb: nb, xq: xq, xd: xd, xp: xp, xdp: xdp}
	packTokens(active.Load(), &xt, xsum, 0, n)
	out := make([]float32, n*rows)
	sets := append([]*kernelSet{scalarKernels, simdKernels}, alternateKernels...)
	var sink float32
	for _, k := range sets {
		if k == nil {
			continue
		}
		b.Run(k.name+"/dotQ8", func(b *testing.B) {
			for b.Loop() {
				sink += k.dotQ8(w[:stride], xq[:cols], xd[:nb])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nb), "ns/block")
		})
		b.Run(k.name+"/dotQ8Rows", func(b *testing.B) {
			for b.Loop() {
				k.dotQ8Rows(out[:rows], w, stride, xq[:cols], xd[:nb])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*nb), "ns/block")
		})
		if k.dotQ8RowsX == nil {
			continue
		}
		b.Run(k.name+"/dotQ8RowsX", func(b *testing.B) {
			for b.Loop() {
				k.dotQ8RowsX(out[:rows], w, stride, xq[:cols], xd[:nb], xsum[:nb])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*nb), "ns/block")
		})
		b.Run(k.name+"/dotQ8Tokens", func(b *testing.B) {
			c0 := procstat.CPU()
			for b.Loop() {
				k.dotQ8Tokens(out, rows, w, stride, rows, xt, nil, Matrix{}, 0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*n*nb), "ns/block")
			b.ReportMetric(float64(procstat.CPU()-c0)/float64(b.N*rows*n*nb), "cpu-ns/block")
		})
	}
	_ = sink
}

// TestQ4KRowsMatchDot: in every kernel set a Q4_K row's dotQ4KRows sum is bit for bit
// its sum as a row alone, for any super-block count, row stride and block contents (random
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
				one := nanSlice(1)
				k.dotQ4KRows(one, row, 0, xq, xd, xsum)
				want := one[0]
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Errorf("%s nsb=%d row %d: dotQ4KRows %v, on the row alone %v", k.name, nsb, i, got[i], want)
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
					t.Errorf("%s nsb=%d row %d: alone %v, scalar %v (off by %.3g, bound %.3g)", k.name, nsb, i, want, ref, diff, mag*1e-6)
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
// its sum as a row alone, for any super-block count, row stride and block contents (random
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
				one := nanSlice(1)
				k.dotQ6KRows(one, row, 0, xq, xd)
				want := one[0]
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Errorf("%s nsb=%d row %d: dotQ6KRows %v, on the row alone %v", k.name, nsb, i, got[i], want)
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
					t.Errorf("%s nsb=%d row %d: alone %v, scalar %v (off by %.3g, bound %.3g)", k.name, nsb, i, want, ref, diff, mag*1e-6)
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
	type kern = func(*kernelSet) func([]float32, []byte, int, []int8, []float32)
	for _, tc := range []struct {
		name       string
		blockBytes int
		maxCode    float64 // largest |code − offset|
		kernels    kern
		scalar     func([]byte, []int8, []float32) float32
	}{
		{"Q4_0", q4BlockBytes, 8, func(k *kernelSet) func([]float32, []byte, int, []int8, []float32) { return k.dotQ4Rows }, dotQ4Scalar},
		{"Q5_0", q5BlockBytes, 16, func(k *kernelSet) func([]float32, []byte, int, []int8, []float32) { return k.dotQ5Rows }, dotQ5Scalar},
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
				rowsK := tc.kernels(k)
				got := nanSlice(rows)
				rowsK(got, w, stride, xq, xd)
				for i := range got {
					row := w[i*stride : i*stride+nb*tc.blockBytes]
					one := nanSlice(1)
					rowsK(one, row, 0, xq, xd)
					want := one[0]
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
