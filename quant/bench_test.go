package quant

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks report GB/s of float32 input (b.SetBytes of 4 bytes per value; Go
// prints MB/s) for a 128-wide row and a 64×128 block (64 rows, or one KIVI block; a
// KIVI "row" is a block of one token).

const benchD, benchT = 128, 64

func benchCodecs() []RowCodec {
	return []RowCodec{
		F32{}, F16{}, BF16{}, Int8{},
		Affine{8, 32}, Affine{8, 0}, Affine{4, 32}, Affine{4, 128}, Affine{4, 0}, Affine{2, 32}, Affine{2, 0},
		FP8{Format: E4M3}, FP8{Format: E5M2}, FP8{Format: E4M3, TensorScale: 0.01},
	}
}

func benchData() []float32 {
	return gaussRow(rand.New(rand.NewPCG(61, 62)), benchT*benchD, 1)
}

func BenchmarkEncode(b *testing.B) {
	src := benchData()
	for _, c := range benchCodecs() {
		rb := c.RowBytes(benchD)
		dst := make([]byte, benchT*rb)
		b.Run(c.Name()+"/row128", func(b *testing.B) {
			b.SetBytes(4 * benchD)
			for b.Loop() {
				c.Encode(dst[:rb], src[:benchD])
			}
		})
		b.Run(c.Name()+"/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				for i := range benchT {
					c.Encode(dst[i*rb:(i+1)*rb], src[i*benchD:(i+1)*benchD])
				}
			}
		})
	}
}

func encodeBlock(c RowCodec, src []float32) ([]byte, int) {
	rb := c.RowBytes(benchD)
	enc := make([]byte, benchT*rb)
	for i := range benchT {
		c.Encode(enc[i*rb:(i+1)*rb], src[i*benchD:(i+1)*benchD])
	}
	return enc, rb
}

func BenchmarkDecode(b *testing.B) {
	src := benchData()
	dst := make([]float32, len(src))
	for _, c := range benchCodecs() {
		enc, rb := encodeBlock(c, src)
		b.Run(c.Name()+"/row128", func(b *testing.B) {
			b.SetBytes(4 * benchD)
			for b.Loop() {
				c.Decode(dst[:benchD], enc[:rb])
			}
		})
		b.Run(c.Name()+"/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				for i := range benchT {
					c.Decode(dst[i*benchD:(i+1)*benchD], enc[i*rb:(i+1)*rb])
				}
			}
		})
	}
}

// BenchmarkDot scores one query against 64 encoded rows (the attention score loop).
func BenchmarkDot(b *testing.B) {
	src := benchData()
	q := gaussRow(rand.New(rand.NewPCG(63, 64)), benchD, 1)
	scores := make([]float32, benchT)
	for _, c := range benchCodecs() {
		enc, rb := encodeBlock(c, src)
		b.Run(c.Name()+"/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				for i := range benchT {
					scores[i] = c.Dot(q, enc[i*rb:(i+1)*rb])
				}
			}
		})
	}
}

// BenchmarkAddScaled accumulates 64 encoded rows with weights (the attention value loop).
func BenchmarkAddScaled(b *testing.B) {
	src := benchData()
	out := make([]float32, benchD)
	for _, c := range benchCodecs() {
		enc, rb := encodeBlock(c, src)
		b.Run(c.Name()+"/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				for i := range benchT {
					c.AddScaled(out, 0.01, enc[i*rb:(i+1)*rb])
				}
			}
		})
	}
}

func BenchmarkChannel(b *testing.B) {
	src := benchData()
	q := gaussRow(rand.New(rand.NewPCG(65, 66)), benchD, 1)
	scores := make([]float32, benchT)
	dst := make([]float32, len(src))
	for _, bits := range []int{8, 4, 2} {
		c := Channel{Bits: bits}
		enc := make([]byte, c.BlockBytes(benchT, benchD))
		c.Encode(enc, src, benchT, benchD)
		one := make([]byte, c.BlockBytes(1, benchD))
		b.Run(c.Name()+"/encode/row128", func(b *testing.B) {
			b.SetBytes(4 * benchD)
			for b.Loop() {
				c.Encode(one, src[:benchD], 1, benchD)
			}
		})
		b.Run(c.Name()+"/decode/row128", func(b *testing.B) {
			b.SetBytes(4 * benchD)
			for b.Loop() {
				c.Decode(dst[:benchD], one, 1, benchD)
			}
		})
		b.Run(c.Name()+"/encode/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				c.Encode(enc, src, benchT, benchD)
			}
		})
		b.Run(c.Name()+"/decode/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				c.Decode(dst, enc, benchT, benchD)
			}
		})
		b.Run(c.Name()+"/dot/block64x128", func(b *testing.B) {
			b.SetBytes(4 * benchD * benchT)
			for b.Loop() {
				c.Dot(scores, q, enc, benchT, benchD)
			}
		})
	}
}
