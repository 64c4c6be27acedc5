package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkLossyRows times DotRows and AddRows apart on the decode-attention shape
// of one head's part of a cache block (n = 16 or 64 rows of d = 64 values; the
// difference shows the fixed cost per call) for g = 1 and g = 4 query heads,
// per lossy codec and kernel set: "fused" is the AVX2 set, "tiled" the same set with
// its fused kernels off (rows decoded into a float32 tile, then MultiDot/MultiAxpy).
// ns/row is the time per stored row (all g queries).
//
//	go test ./quant -run '^$' -bench LossyRows -benchtime=200ms
func BenchmarkLossyRows(b *testing.B) {
	if simdKernels == nil {
		b.Skip("no SIMD kernels in this build")
	}
	const d = 64
	fused := *simdKernels
	fused.name = "fused"
	tiled := *simdKernels
	tiled.name = "tiled"
	tiled.dotRows = scalarKernels.dotRows
	tiled.addRows = scalarKernels.addRows
	prev := active.Load()
	defer active.Store(prev)
	r := rand.New(rand.NewPCG(5, 6))
	codecs := []RowCodec{Affine{Bits: 4, Group: 32}, Affine{Bits: 2, Group: 32}, Affine{Bits: 8, Group: 32}, Affine{Bits: 4}, FP8{Format: E4M3}, FP8{Format: E5M2}}
	for _, c := range codecs {
		for _, n := range []int{16, 64} {
			rb := c.RowBytes(d)
			stride := rb + 8 // rows of one head a few bytes apart, as in a paged block
			src := make([]byte, (n-1)*stride+rb)
			for i := range n {
				c.Encode(src[i*stride:][:rb], gaussRow(r, d, 1))
			}
			for _, g := range []int{1, 4} {
				q := gaussRow(r, g*d, 1)
				w := gaussRow(r, g*n, 1)
				scores := make([]float32, g*n)
				acc := make([]float32, g*d)
				tmp := make([]float32, ScratchFloats(d))
				for _, op := range []string{"dot", "add"} {
					for _, k := range []*kernelSet{&tiled, &fused} {
						b.Run(fmt.Sprintf("%s/%s/g=%d/n=%d/%s", c.Name(), op, g, n, k.name), func(b *testing.B) {
							active.Store(k)
							for b.Loop() {
								if op == "dot" {
									DotRows(c, scores, n, q, g, src, stride, n, tmp)
								} else {
									AddRows(c, acc, w, n, g, src, stride, n, tmp)
								}
							}
							b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
						})
					}
				}
			}
		}
	}
}

// BenchmarkChannelRows times the scores of a 16-token span of a KIVI key block (32
// tokens × 64 channels) for g = 1 and g = 4 query heads: "tiled" decodes the span
// (DecodeBlockRows) and scores it with MultiDot, as attention did before
// DotChannelRows; "fused" is DotChannelRows. ns/row is per token (all g queries).
//
//	go test ./quant -run '^$' -bench ChannelRows -benchtime=200ms
func BenchmarkChannelRows(b *testing.B) {
	const t, d, i0, i1 = 32, 64, 8, 24
	r := rand.New(rand.NewPCG(7, 8))
	for _, bits := range []int{4, 2} {
		c := Channel{Bits: bits}
		block := make([]byte, c.BlockBytes(t, d))
		c.Encode(block, gaussRow(r, t*d, 1), t, d)
		for _, g := range []int{1, 4} {
			q := gaussRow(r, g*d, 1)
			scores := make([]float32, g*(i1-i0))
			tmp, lo, s := make([]float32, max(ScratchFloats(d), t*d)), make([]float32, d), make([]float32, d)
			b.Run(fmt.Sprintf("%s/g=%d/tiled", c.Name(), g), func(b *testing.B) {
				for b.Loop() {
					DecodeBlockRows(c, tmp, block, t, d, i0, i1, lo, s)
					MultiDot(scores, i1-i0, q, g, tmp, d, i1-i0, d)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(i1-i0)), "ns/row")
			})
			b.Run(fmt.Sprintf("%s/g=%d/fused", c.Name(), g), func(b *testing.B) {
				for b.Loop() {
					DotChannelRows(c, scores, i1-i0, q, g, block, t, d, i0, i1, tmp, lo, s)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(i1-i0)), "ns/row")
			})
		}
	}
}

// BenchmarkPreparedQuery times a RowPlan's scores of one span of n = 64 rows (a cache
// block's part of one head) with the queries quantized per call (DotRows) and
// prepared once beforehand (DotRowsPrepared, as attention does for the spans of one
// step), for q4 and q2 rows in groups of 32. ns/row is per stored row (all g queries).
//
//	go test ./quant -run '^$' -bench PreparedQuery -benchtime=200ms
func BenchmarkPreparedQuery(b *testing.B) {
	const n = 64
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []RowCodec{Affine{Bits: 4, Group: 32}, Affine{Bits: 2, Group: 32}} {
		for _, d := range []int{64, 128} {
			p, err := NewRowPlan(c, d)
			if err != nil {
				b.Fatal(err)
			}
			rb := c.RowBytes(d)
			stride := rb + 8
			src := make([]byte, (n-1)*stride+rb)
			for i := range n {
				c.Encode(src[i*stride:][:rb], gaussRow(r, d, 1))
			}
			for _, g := range []int{1, 4} {
				q := gaussRow(r, g*d, 1)
				scores := make([]float32, g*n)
				tmp := make([]float32, ScratchFloats(d))
				var pq []float32
				if m := p.QueryFloats(g); m > 0 {
					pq = make([]float32, m)
					p.PrepareQuery(pq, q, g)
				}
				for _, prep := range []bool{false, true} {
					name := "per-call"
					if prep {
						name = "prepared"
					}
					b.Run(fmt.Sprintf("%s/d=%d/g=%d/%s", c.Name(), d, g, name), func(b *testing.B) {
						if prep && pq == nil {
							b.Skip("no prepared form with this kernel set")
						}
						for b.Loop() {
							if prep {
								p.DotRowsPrepared(scores, n, q, pq, g, src, stride, n, tmp)
							} else {
								p.DotRows(scores, n, q, g, src, stride, n, tmp)
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
					})
				}
			}
		}
	}
}

// BenchmarkChannelSpan times DotChannelSpan over KIVI key blocks (2-bit, 32 tokens of
// d = 64) as decode attention runs it over kv's block layout: cache blocks of 64
// tokens, each holding layers × heads runs of two key blocks back to back, one call
// per cache block for one layer and head, iterations cycling over the layers and
// heads; "cached" over 4 cache blocks of 2 × 2 runs (24 KiB, in the core's caches),
// "streamed" over 64 of 12 × 12 (14 MiB). g = 1, 2 and 4 query heads; ns/block is per
// key block (all g queries).
//
//	go test ./quant -run '^$' -bench ChannelSpan -benchtime=500ms
func BenchmarkChannelSpan(b *testing.B) {
	const bt, kt, d = 64, 32, 64
	r := rand.New(rand.NewPCG(7, 8))
	c := Channel{Bits: 2}
	kb := c.BlockBytes(kt, d)
	run := bt / kt * kb // one layer and head of a cache block
	for _, sz := range []struct {
		name         string
		blocks, runs int
	}{{"cached", 4, 2 * 2}, {"streamed", 64, 12 * 12}} {
		blockBytes := sz.runs * run
		buf := make([]byte, sz.blocks*blockBytes)
		for i := 0; i < len(buf); i += kb {
			c.Encode(buf[i:i+kb], gaussRow(r, kt*d, 1), kt, d)
		}
		for _, g := range []int{1, 2, 4} {
			q := gaussRow(r, g*d, 1)
			scores := make([]float32, g*bt)
			tmp, lo, s := make([]float32, ScratchFloats(d)), make([]float32, d), make([]float32, d)
			b.Run(fmt.Sprintf("%s/g=%d", sz.name, g), func(b *testing.B) {
				k := 0
				for b.Loop() {
					off := k % sz.runs * run
					for j := range sz.blocks {
						DotChannelSpan(c, scores, bt, q, g, buf[j*blockBytes+off:], kb, kt, 0, bt, d, tmp, lo, s)
					}
					k++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sz.blocks*bt/kt), "ns/block")
			})
		}
	}
}
