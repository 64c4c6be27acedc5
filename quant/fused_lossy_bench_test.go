package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkLossyRows times DotRows and AddRows apart on the decode-attention shape
// of one cache block (n = 16 rows of d = 64 values) for g = 1 and g = 4 query heads,
// per lossy codec and kernel set: "fused" is the AVX2 set, "tiled" the same set with
// its fused kernels off (rows decoded into a float32 tile, then MultiDot/MultiAxpy).
// ns/row is the time per stored row (all g queries).
//
//	GOEXPERIMENT=simd go test ./quant -run '^$' -bench LossyRows -benchtime=200ms
func BenchmarkLossyRows(b *testing.B) {
	if simdKernels == nil {
		b.Skip("no SIMD kernels in this build")
	}
	const n, d = 16, 64
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
					b.Run(fmt.Sprintf("%s/%s/g=%d/%s", c.Name(), op, g, k.name), func(b *testing.B) {
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
