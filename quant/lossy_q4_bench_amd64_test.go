//go:build amd64

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// BenchmarkLossyQ4 times the four-query kernels alone (no group sums, no dispatch) on
// one span of n rows of d = 64 values, groups of 32, against the whole DotRows or
// AddRows call: the difference is the fixed cost per call. ns/row is per row (all
// four queries). The adds run as the YMM float kernel (kernel), and where the CPU
// has them the ZMM float (zmm) and integer (i16z) ones.
//
//	go test ./quant -run '^$' -bench LossyQ4 -benchtime=200ms
func BenchmarkLossyQ4(b *testing.B) {
	const d, gs, g = 64, 32, 4
	r := rand.New(rand.NewPCG(9, 10))
	for _, bits := range []int{4, 2, 8} {
		c := Affine{Bits: bits, Group: gs}
		lg, _ := lossyGeomOf(c, d)
		for _, n := range []int{16, 64} {
			rb := c.RowBytes(d)
			stride := rb + 8
			src := make([]byte, (n-1)*stride+rb)
			for i := range n {
				c.Encode(src[i*stride:][:rb], gaussRow(r, d, 1))
			}
			q := gaussRow(r, g*d, 1)
			w := gaussRow(r, g*n, 1)
			scores := make([]float32, g*n)
			acc := make([]float32, g*d)
			tmp := make([]float32, ScratchFloats(d))
			qs := gaussRow(r, 4*lg.p, 1)
			qp, sp := unsafe.Pointer(&q[0]), unsafe.Pointer(&src[0])
			per := func(b *testing.B) { b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row") }
			b.Run(fmt.Sprintf("%s/dot/n=%d/kernel", c.Name(), n), func(b *testing.B) {
				for b.Loop() {
					lg.k.q4Inl(unsafe.Pointer(&scores[0]), uintptr(4*n), 4, qp, unsafe.Add(qp, 4*d), unsafe.Add(qp, 8*d), unsafe.Add(qp, 12*d),
						unsafe.Add(sp, 4), uintptr(stride), n, unsafe.Pointer(&qs[0]), lg.p, lg.g, lg.gb)
				}
				per(b)
			})
			b.Run(fmt.Sprintf("%s/dot/n=%d/call", c.Name(), n), func(b *testing.B) {
				for b.Loop() {
					DotRows(c, scores, n, q, g, src, stride, n, tmp)
				}
				per(b)
			})
			b.Run(fmt.Sprintf("%s/add/n=%d/kernel", c.Name(), n), func(b *testing.B) {
				ap, wp := unsafe.Pointer(&acc[0]), unsafe.Pointer(&w[0])
				for b.Loop() {
					lg.k.addQ4W(ap, unsafe.Add(ap, 4*d), unsafe.Add(ap, 8*d), unsafe.Add(ap, 12*d), wp, unsafe.Add(wp, 4*n), unsafe.Add(wp, 8*n), unsafe.Add(wp, 12*n),
						sp, uintptr(stride), n, d/16, lg.g, lg.gb)
				}
				per(b)
			})
			// The ZMM adds, float and integer, where the CPU runs them (d = 64: one
			// call each).
			if haveAVX512F && lg.k.addQ4Z != nil {
				b.Run(fmt.Sprintf("%s/add/n=%d/zmm", c.Name(), n), func(b *testing.B) {
					ap, wp := unsafe.Pointer(&acc[0]), unsafe.Pointer(&w[0])
					for b.Loop() {
						lg.k.addQ4Z(ap, unsafe.Add(ap, 4*d), unsafe.Add(ap, 8*d), unsafe.Add(ap, 12*d), wp, unsafe.Add(wp, 4*n), unsafe.Add(wp, 8*n), unsafe.Add(wp, 12*n),
							sp, uintptr(stride), n, d/16, lg.g, lg.gb)
					}
					per(b)
				})
			}
			if haveVNNI512 && lg.k.addQ4P2Z != nil {
				b.Run(fmt.Sprintf("%s/add/n=%d/i16z", c.Name(), n), func(b *testing.B) {
					ap, wp := unsafe.Pointer(&acc[0]), unsafe.Pointer(&w[0])
					for b.Loop() {
						lg.k.addQ4P2Z(ap, unsafe.Add(ap, 4*d), unsafe.Add(ap, 8*d), unsafe.Add(ap, 12*d), wp, unsafe.Add(wp, 4*n), unsafe.Add(wp, 8*n), unsafe.Add(wp, 12*n),
							unsafe.Add(sp, lg.codeOff(0)), uintptr(stride), n/4, lg.gb)
					}
					per(b)
				})
			}
			b.Run(fmt.Sprintf("%s/add/n=%d/call", c.Name(), n), func(b *testing.B) {
				for b.Loop() {
					AddRows(c, acc, w, n, g, src, stride, n, tmp)
				}
				per(b)
			})
		}
	}
}
