package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkPackTokens times packTokens of a 64-token step of llama-134m's 768-wide
// activations into both packs (codes plus 128, signed codes with their sums), as a
// decode step of 64 sequences makes it once per product input; ns per token.
func BenchmarkPackTokens(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			const cols = 768
			nb := cols / blockElems
			x := randVals(rand.New(rand.NewPCG(7, 7)), n*cols, 1)
			groups := (n + tokenGroup - 1) / tokenGroup
			xq, xd, xsum := make([]int8, n*cols), make([]float32, n*nb), make([]int32, n*nb)
			quantQ8Scalar(xq, xd, x)
			blockSums(xsum, xq)
			np := groups * tokenGroup * nb
			pk := tokenPack{n: n, nb: nb, xq: xq, xd: xd, xp: make([]uint32, 8*np), xps: make([]uint32, 8*np),
				xdp: make([]float32, np), xsp: make([]int32, np)}
			for b.Loop() {
				packTokens(&pk, xsum, 0, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}
