package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkPackTokens times packTokens of a 16- and a 64-token step of llama-134m's
// 768-wide activations into both packs (codes plus 128, signed codes with their sums),
// as a decode step of 16 or 64 sequences makes it once per product input; ns per token.
func BenchmarkPackTokens(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			const cols = 768
			nb := cols / blockElems
			pk, xsum := testTokens(rand.New(rand.NewPCG(7, 7)), n, nb)
			for b.Loop() {
				packTokens(active.Load(), &pk, xsum, 0, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}
