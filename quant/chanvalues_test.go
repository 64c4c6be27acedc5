package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkValueSums times the weighted sums of one span of 64 value tokens of one
// KV head for g query heads, as decode attention adds them: values per channel
// (chan4, chan2: AddChannelSpan over two blocks of 32) against values per token
// (kivi4, kivi2 values: Affine rows in groups of 32, AddRows through a RowPlan).
// ns/token is per stored token (all g queries).
//
//	go test ./quant -run '^$' -bench ValueSums -benchtime=200ms
func BenchmarkValueSums(b *testing.B) {
	const n, bt = 64, 32
	r := rand.New(rand.NewPCG(9, 10))
	for _, d := range []int{64, 128} {
		for _, g := range []int{1, 4} {
			w := gaussRow(r, g*n, 1)
			acc := make([]float32, g*d)
			for _, bits := range []int{4, 2} {
				c := ChannelValues{Bits: bits}
				bb := c.BlockBytes(bt, d)
				src := make([]byte, n/bt*bb)
				for j := range n / bt {
					c.Encode(src[j*bb:][:bb], gaussRow(r, bt*d, 1), bt, d)
				}
				tmp := make([]float32, max(ScratchFloats(d), ChannelAddFloats(d)))
				b.Run(fmt.Sprintf("chan%d/d=%d/g=%d", bits, d, g), func(b *testing.B) {
					for b.Loop() {
						AddChannelSpan(c, acc, w, n, g, src, bb, bt, 0, n, d, tmp)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
				})
				a := Affine{Bits: bits, Group: 32}
				p, err := NewRowPlan(a, d)
				if err != nil {
					b.Fatal(err)
				}
				rb := a.RowBytes(d)
				rows := make([]byte, n*rb)
				for i := range n {
					a.Encode(rows[i*rb:][:rb], gaussRow(r, d, 1))
				}
				b.Run(fmt.Sprintf("kivi%d-values/d=%d/g=%d", bits, d, g), func(b *testing.B) {
					for b.Loop() {
						p.AddRows(acc, w, n, g, rows, rb, n, tmp)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
				})
			}
		}
	}
}
