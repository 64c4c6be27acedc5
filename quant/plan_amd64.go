//go:build amd64

package quant

// planFast holds the fused kernels' geometry of Affine rows (fused_lossy_amd64.go)
// for a RowPlan: with F16C, every amd64 kernel set but the scalar one runs them.
type planFast struct {
	lg lossyGeom
	ok bool
}

func resolveFast(set *kernelSet, c RowCodec, d int) planFast {
	if set == scalarKernels || !haveF16C {
		return planFast{}
	}
	lg, ok := lossyGeomOf(c, d)
	// fusedDotRowsLossy's scratch: the package functions pass ScratchFloats(d).
	return planFast{lg: lg, ok: ok && ScratchFloats(d) >= 4*lg.p+2*lg.p*8+d}
}

// queryFloats is RowPlan.QueryFloats for a plan with fused kernels: the integer
// kernels' units (prepareI8), or 0 for the float ones.
func (f *planFast) queryFloats(g, d int) int {
	if !f.lg.i8() {
		return 0
	}
	return i8Units(g) * (d + 8*f.lg.p)
}

func (f *planFast) prepare(pq, q []float32, g, d int) { prepareI8(&f.lg, pq, q, g, d) }

func (f *planFast) dot(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32) {
	dotRowsQ4(&f.lg, scores, ld, q, pq, g, src, stride, n, d, tmp)
}

func (f *planFast) add(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) {
	addRowsQ4(&f.lg, acc, w, ld, g, src, stride, n, d)
}
