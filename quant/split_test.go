package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// splitCase is a run of blocks of KIVI keys of c (G tokens × d channels each, bb
// bytes apart at src) and g queries q, random normal, for the split tests.
func splitCase(rng *rand.Rand, c Channel, blocks, G, d, g int) (src []byte, bb int, q []float32) {
	bb = c.BlockBytes(G, d)
	src = make([]byte, blocks*bb)
	x := make([]float32, G*d)
	for b := range blocks {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		c.Encode(src[b*bb:], x, G, d)
	}
	q = make([]float32, g*d)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	return src, bb, q
}

// checkSplit fails t unless scoring the n tokens of a run of blocks of G tokens in one
// call gives the bits of scoring them in two calls cut at every row m: score(out,
// j0, off, k) scores k tokens starting at token off of block j0 into out (ld n, g
// queries).
func checkSplit(t *testing.T, name string, n, g, G int, score func(out []float32, j0, off, k int)) {
	t.Helper()
	all := make([]float32, g*n)
	score(all, 0, 0, n)
	cut := make([]float32, g*n)
	for m := 1; m < n; m++ {
		clear(cut)
		score(cut, 0, 0, m)
		score(cut[m:], m/G, m%G, n-m)
		for i := range cut {
			if math.Float32bits(cut[i]) != math.Float32bits(all[i]) {
				t.Fatalf("%s: cut at row %d: query %d row %d scores %v, in one call %v", name, m, i/n, i%n, cut[i], all[i])
			}
		}
	}
}

// TestDotChannelSpanSplit: a token's KIVI key score is the same bits however its
// span is cut into calls (attention cuts a span wherever the other side's storage
// changes, and a prefill step may start anywhere): a run of blocks scored in one
// call equals the run cut at every row into two calls, for every head size, code
// width and number of queries, with the SIMD and the scalar kernels.
func TestDotChannelSpanSplit(t *testing.T) {
	defer SetSIMD(active.Load() == simdKernels)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, simd := range []bool{true, false} {
		SetSIMD(simd)
		for _, d := range []int{8, 16, 32, 48, 64, 128} {
			for _, bits := range []int{2, 3, 4, 8} {
				for _, g := range []int{1, 2, 3, 4, 8} {
					for _, G := range []int{16, 32} {
						name := fmt.Sprintf("simd=%v/d=%d/kivi%d/g=%d/G=%d", simd, d, bits, g, G)
						c := Channel{Bits: bits}
						const blocks = 3
						src, bb, q := splitCase(rng, c, blocks, G, d, g)
						n := blocks * G
						tmp := make([]float32, max(ScratchFloats(d), G*d, 4096))
						lo, s := make([]float32, d), make([]float32, d)
						checkSplit(t, name, n, g, G, func(out []float32, j0, off, k int) {
							DotChannelSpan(c, out, n, q, g, src[j0*bb:], bb, G, off, k, d, tmp, lo, s)
						})
					}
				}
			}
		}
	}
}

// TestDotChannelRoPESplit is TestDotChannelSpanSplit for keys stored before RoPE
// (DotChannelRoPE), interleaved and NeoX pairs, one to four queries.
func TestDotChannelRoPESplit(t *testing.T) {
	defer SetSIMD(active.Load() == simdKernels)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, simd := range []bool{true, false} {
		SetSIMD(simd)
		for _, d := range []int{8, 16, 32, 64, 128} {
			for _, neox := range []bool{false, true} {
				if neox && d < 16 {
					continue // NeoX pairs span 8 channels and their partners
				}
				r, err := NewRoPE(ropeFreqs(10000, d), neox)
				if err != nil {
					t.Fatal(err)
				}
				for _, bits := range []int{2, 3, 4} {
					for _, g := range []int{1, 2, 4} {
						for _, G := range []int{16, 32} {
							name := fmt.Sprintf("simd=%v/d=%d/neox=%v/kivi%d/g=%d/G=%d", simd, d, neox, bits, g, G)
							c := Channel{Bits: bits}
							const blocks, pos = 3, 96
							src, bb, q := splitCase(rng, c, blocks, G, d, g)
							n := blocks * G
							tmp, qr := make([]float32, max(G*d, 8*d, 4096)), make([]float32, g*d)
							lo, s := make([]float32, d), make([]float32, d)
							checkSplit(t, name, n, g, G, func(out []float32, j0, off, k int) {
								DotChannelRoPE(c, r, pos+j0*G, out, n, q, g, src[j0*bb:], bb, G, off, k, d, tmp, qr, lo, s)
							})
						}
					}
				}
			}
		}
	}
}
