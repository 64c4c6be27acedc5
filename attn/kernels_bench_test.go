package attn

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSoftmaxKernels times maxRow and expRow on rows of 16 and 256 scores.
//
//	go test ./attn -run '^$' -bench SoftmaxKernels -benchtime=200ms
func BenchmarkSoftmaxKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range kernelSets() {
		for _, n := range []int{16, 256} {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(r.NormFloat64())
			}
			buf := make([]float32, n)
			b.Run(k.name+"/exp/n="+itoa(n), func(b *testing.B) {
				for b.Loop() {
					copy(buf, row)
					k.expRow(buf, 0x40400000) // m = 3
				}
			})
			b.Run(k.name+"/max/n="+itoa(n), func(b *testing.B) {
				for b.Loop() {
					k.maxRow(row)
				}
			})
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
