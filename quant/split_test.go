package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

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
						bb := c.BlockBytes(G, d)
						src := make([]byte, blocks*bb)
						x := make([]float32, G*d)
						for b := range blocks {
							for i := range x {
								x[i] = float32(rng.NormFloat64())
							}
							c.Encode(src[b*bb:], x, G, d)
						}
						q := make([]float32, g*d)
						for i := range q {
							q[i] = float32(rng.NormFloat64())
						}
						n := blocks * G
						tmp := make([]float32, max(ScratchFloats(d), G*d, 4096))
						lo, s := make([]float32, d), make([]float32, d)
						all := make([]float32, g*n)
						DotChannelSpan(c, all, n, q, g, src, bb, G, 0, n, d, tmp, lo, s)
						cut := make([]float32, g*n)
						for m := 1; m < n; m++ {
							clear(cut)
							DotChannelSpan(c, cut, n, q, g, src, bb, G, 0, m, d, tmp, lo, s)
							DotChannelSpan(c, cut[m:], n, q, g, src[m/G*bb:], bb, G, m%G, n-m, d, tmp, lo, s)
							for i := range cut {
								if math.Float32bits(cut[i]) != math.Float32bits(all[i]) {
									t.Fatalf("%s: cut at row %d: query %d row %d scores %v, in one call %v", name, m, i/n, i%n, cut[i], all[i])
								}
							}
						}
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
			freqs := make([]float64, d/2)
			for i := range freqs {
				freqs[i] = math.Pow(10000, -2*float64(i)/float64(d))
			}
			for _, neox := range []bool{false, true} {
				if neox && d < 16 {
					continue // NeoX pairs span 8 channels and their partners
				}
				r, err := NewRoPE(freqs, neox)
				if err != nil {
					t.Fatal(err)
				}
				for _, bits := range []int{2, 3, 4} {
					for _, g := range []int{1, 2, 4} {
						for _, G := range []int{16, 32} {
							name := fmt.Sprintf("simd=%v/d=%d/neox=%v/kivi%d/g=%d/G=%d", simd, d, neox, bits, g, G)
							c := Channel{Bits: bits}
							const blocks, pos = 3, 96
							bb := c.BlockBytes(G, d)
							src := make([]byte, blocks*bb)
							x := make([]float32, G*d)
							for b := range blocks {
								for i := range x {
									x[i] = float32(rng.NormFloat64())
								}
								c.Encode(src[b*bb:], x, G, d)
							}
							q := make([]float32, g*d)
							for i := range q {
								q[i] = float32(rng.NormFloat64())
							}
							n := blocks * G
							tmp, qr := make([]float32, max(G*d, 8*d, 4096)), make([]float32, g*d)
							lo, s := make([]float32, d), make([]float32, d)
							all := make([]float32, g*n)
							DotChannelRoPE(c, r, pos, all, n, q, g, src, bb, G, 0, n, d, tmp, qr, lo, s)
							cut := make([]float32, g*n)
							for m := 1; m < n; m++ {
								clear(cut)
								DotChannelRoPE(c, r, pos, cut, n, q, g, src, bb, G, 0, m, d, tmp, qr, lo, s)
								j0 := m / G
								DotChannelRoPE(c, r, pos+j0*G, cut[m:], n, q, g, src[j0*bb:], bb, G, m%G, n-m, d, tmp, qr, lo, s)
								for i := range cut {
									if math.Float32bits(cut[i]) != math.Float32bits(all[i]) {
										t.Fatalf("%s: cut at row %d: query %d row %d scores %v, in one call %v", name, m, i/n, i%n, cut[i], all[i])
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
