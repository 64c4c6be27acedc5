package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMultiKernels times the batched kernels on a tile of 32 rows of 64 values
// and 4 query heads (the GQA-4, head size 64 decode shape); bytes are the encoded rows.
//
//	go test ./quant -run '^$' -bench MultiKernels -benchtime=200ms
func BenchmarkMultiKernels(b *testing.B) {
	const n, d, g = 32, 64, 4
	r := rand.New(rand.NewPCG(1, 2))
	x := gaussRow(r, n*d, 1)
	q := gaussRow(r, g*d, 1)
	w := gaussRow(r, g*n, 1)
	tile := make([]float32, n*d)
	scores := make([]float32, g*n)
	acc := make([]float32, g*d)
	for _, c := range []RowCodec{F32{}, F16{}, BF16{}, Int8{}, FP8{Format: E4M3}, FP8{Format: E5M2}, Affine{Bits: 4, Group: 32}, Affine{Bits: 2, Group: 32}} {
		rb := c.RowBytes(d)
		src := make([]byte, n*rb)
		for i := range n {
			c.Encode(src[i*rb:(i+1)*rb], x[i*d:(i+1)*d])
		}
		b.Run("decode/"+c.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				DecodeRows(c, tile, src, rb, n, d)
			}
		})
	}
	b.Run("multidot", func(b *testing.B) {
		b.SetBytes(int64(4 * n * d))
		for b.Loop() {
			MultiDot(scores, n, q, g, x, d, n, d)
		}
	})
	b.Run("multiaxpy", func(b *testing.B) {
		b.SetBytes(int64(4 * n * d))
		for b.Loop() {
			MultiAxpy(acc, w, n, g, x, d, n, d)
		}
	})
}

// BenchmarkRows times DotRows + AddRows (one key pass and one value pass of decode
// attention) over n rows of 64 values for 4 query heads, per codec and kernel set
// ("tiled" is the AVX2 set without its fused kernels). Bytes are the encoded rows.
//
//	go test ./quant -run '^$' -bench Rows -benchtime=200ms
func BenchmarkRows(b *testing.B) {
	const d, g = 64, 4
	sets := kernelSets()
	if simdKernels != nil {
		tiled := *simdKernels
		tiled.name = "tiled"
		tiled.dotRows = scalarKernels.dotRows
		tiled.addRows = scalarKernels.addRows
		dotOnly := *simdKernels
		dotOnly.name = "fused-dot-only"
		dotOnly.addRows = scalarKernels.addRows
		sets = append(sets, &tiled, &dotOnly)
	}
	prev := active.Load()
	defer active.Store(prev)
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []RowCodec{F32{}, F16{}, BF16{}, Int8{}, FP8{Format: E4M3}, Affine{Bits: 4, Group: 32}, Affine{Bits: 2, Group: 32}} {
		for _, n := range []int{16, 256} {
			rb := c.RowBytes(d)
			src := make([]byte, n*rb)
			for i := range n {
				c.Encode(src[i*rb:(i+1)*rb], gaussRow(r, d, 1))
			}
			q := gaussRow(r, g*d, 1)
			w := gaussRow(r, g*n, 1)
			scores := make([]float32, g*n)
			acc := make([]float32, g*d)
			tmp := make([]float32, ScratchFloats(d))
			for _, k := range sets {
				b.Run(fmt.Sprintf("%s/n=%d/%s", c.Name(), n, k.name), func(b *testing.B) {
					active.Store(k)
					b.SetBytes(int64(len(src)))
					for b.Loop() {
						DotRows(c, scores, n, q, g, src, rb, n, tmp)
						AddRows(c, acc, w, n, g, src, rb, n, tmp)
					}
				})
			}
		}
	}
}

// BenchmarkRowKernels times DotRows and AddRows separately on one span of n = 16 rows
// (a cache block) for group sizes 1, 3 and 4 and head sizes 64 and 128, per codec and
// kernel set ("tiled": the AVX2 set without fused kernels). It reports ns per row (per row and all
// g queries) and the codes' bytes per second.
//
//	go test ./quant -run '^$' -bench RowKernels -benchtime=200ms
func BenchmarkRowKernels(b *testing.B) {
	const n = 16
	sets := kernelSets()
	if simdKernels != nil {
		tiled := *simdKernels
		tiled.name = "tiled"
		tiled.dotRows = scalarKernels.dotRows
		tiled.addRows = scalarKernels.addRows
		sets = append(sets, &tiled)
	}
	prev := active.Load()
	defer active.Store(prev)
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []RowCodec{F32{}, F16{}, BF16{}, Int8{}, FP8{Format: E4M3}, FP8{Format: E5M2}} {
		for _, d := range []int{64, 128} {
			rb := c.RowBytes(d)
			src := make([]byte, n*rb)
			for i := range n {
				c.Encode(src[i*rb:(i+1)*rb], gaussRow(r, d, 1))
			}
			for _, g := range []int{1, 3, 4} {
				q := gaussRow(r, g*d, 1)
				w := gaussRow(r, g*n, 1)
				scores := make([]float32, g*n)
				acc := make([]float32, g*d)
				tmp := make([]float32, ScratchFloats(d))
				for _, op := range []string{"dot", "add"} {
					for _, k := range sets {
						b.Run(fmt.Sprintf("%s/d=%d/g=%d/%s/%s", c.Name(), d, g, op, k.name), func(b *testing.B) {
							active.Store(k)
							b.SetBytes(int64(len(src)))
							for b.Loop() {
								if op == "dot" {
									DotRows(c, scores, n, q, g, src, rb, n, tmp)
								} else {
									AddRows(c, acc, w, n, g, src, rb, n, tmp)
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
