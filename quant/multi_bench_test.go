package quant

import (
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
