//go:build amd64

package quant

// planFast holds the fused kernels' geometry of Affine rows (fused_lossy_amd64.go)
// for a RowPlan, or marks Int8 rows scored through the int16 kernels (i16Rows): with
// F16C, every amd64 kernel set but the scalar one runs them.
type planFast struct {
	lg  lossyGeom
	i16 bool
	ok  bool
}

func resolveFast(set *kernelSet, c RowCodec, d int) planFast {
	if set == scalarKernels || !haveF16C {
		return planFast{}
	}
	if i16Rows(c, d) {
		return planFast{i16: true, ok: true}
	}
	lg, ok := lossyGeomOf(c, d)
	// fusedDotRowsLossy's scratch: the package functions pass ScratchFloats(d).
	return planFast{lg: lg, ok: ok && ScratchFloats(d) >= 4*lg.p+2*lg.p*8+d}
}

// queryFloats is RowPlan.QueryFloats for a plan with fused kernels: the integer
// kernels' units (prepareI8), each query's int16 codes and factor for Int8 rows
// (quantQueryI16), or 0 for the float ones.
func (f *planFast) queryFloats(g, d int) int {
	switch {
	case f.i16:
		return g * (d/2 + 1)
	case f.lg.i8():
		return i8Units(g) * (d + 8*f.lg.p)
	}
	return 0
}

func (f *planFast) prepare(pq, q []float32, g, d int) {
	if f.i16 {
		prepareI16(pq, q, g, d)
		return
	}
	prepareI8(&f.lg, pq, q, g, d)
}

func (f *planFast) dot(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32) {
	if f.i16 {
		dotInt8RowsI16(scores, ld, q, pq, g, src, stride, n, d, tmp)
		return
	}
	dotRowsQ4(&f.lg, scores, ld, q, pq, g, src, stride, n, d, tmp)
}

// add reports false, having done nothing, where the package function would go
// through tiles (addInt8RowsF16C's scratch too short for the queries).
func (f *planFast) add(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if f.i16 {
		return addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp)
	}
	addRowsQ4(&f.lg, acc, w, ld, g, src, stride, n, d)
	return true
}
