package gguf

import (
	"math/rand/v2"
	"os"
	"testing"
)

// BenchmarkDequantize converts 64 Ki values of each type; bytes/s counts output floats.
func BenchmarkDequantize(b *testing.B) {
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(1, 1))
	for _, typ := range []TensorType{TypeF32, TypeF16, TypeBF16, TypeQ8_0, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ4_K, TypeQ6_K} {
		rb, _ := typ.RowBytes(n)
		src := make([]byte, rb)
		for i := range src {
			src[i] = byte(rng.Uint32()) & 0x3b // keeps f16 fields finite
		}
		dst := make([]float32, n)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := Dequantize(typ, dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantizeQ8_0(b *testing.B) {
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(1, 1))
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	dst := make([]byte, n/32*34)
	b.SetBytes(4 * n)
	for b.Loop() {
		if err := QuantizeQ8_0(dst, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseBuiltinModel parses the built-in model's metadata and tensor infos.
func BenchmarkParseBuiltinModel(b *testing.B) {
	data, err := os.ReadFile(builtinModel)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
