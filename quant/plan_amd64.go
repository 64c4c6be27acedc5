//go:build amd64

package quant

import "unsafe"

// planFast holds the fused kernels' geometry of Affine rows (fused_lossy_amd64.go)
// for a RowPlan, or marks Int8 rows scored through the int16 kernels (i16Rows), or
// E4M3 rows scored through the kernels that widen codes straight to float32
// (e4m3Direct): with F16C, every amd64 kernel set but the scalar one runs them.
type planFast struct {
	lg   lossyGeom
	i16  bool
	e4m3 FP8 // e4m3Direct rows: their codec
	fp8  bool
	ok   bool
}

// e4m3Direct reports whether rows of c and d values are scored by dotE4M3R4ZD and
// dotE4M3Q4ZD on this CPU, against queries prepared by scaleQuery112.
func e4m3Direct(c RowCodec, d int) bool {
	f, ok := c.(FP8)
	if !ok || f.Format != E4M3 || d%16 != 0 || !haveAVX512F {
		return false
	}
	_, _, _, ok = fp8Geom(f)
	return ok
}

func resolveFast(set *kernelSet, c RowCodec, d int) planFast {
	if set == scalarKernels || !haveF16C {
		return planFast{}
	}
	if i16Rows(c, d) {
		return planFast{i16: true, ok: true}
	}
	if e4m3Direct(c, d) {
		return planFast{e4m3: c.(FP8), fp8: true, ok: true}
	}
	lg, ok := lossyGeomOf(c, d)
	// fusedDotRowsLossy's scratch: the package functions pass ScratchFloats(d).
	return planFast{lg: lg, ok: ok && ScratchFloats(d) >= 4*lg.p+2*lg.p*8+d}
}

// queryFloats is RowPlan.QueryFloats for a plan with fused kernels: the integer
// kernels' units (prepareI8), each query's int16 codes and factor for Int8 rows
// (quantQueryI16), the queries times 2¹¹² and a flag for E4M3 rows (scaleQuery112), or
// 0 for the float ones.
func (f *planFast) queryFloats(g, d int) int {
	switch {
	case f.i16:
		return g * (d/2 + 1)
	case f.fp8:
		return g*d + 1
	case f.lg.i8():
		return i8Units(g) * (d + 8*f.lg.p)
	}
	return 0
}

func (f *planFast) prepare(pq, q []float32, g, d int) {
	switch {
	case f.i16:
		prepareI16(pq, q, g, d)
		return
	case f.fp8:
		// The flag after the queries: 1 where their multiples are exact.
		pq[g*d] = 0
		if scaleQuery112(unsafe.Pointer(&pq[0]), unsafe.Pointer(&q[0]), g*d) {
			pq[g*d] = 1
		}
		return
	}
	prepareI8(&f.lg, pq, q, g, d)
}

func (f *planFast) dot(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32) {
	switch {
	case f.i16:
		dotInt8RowsI16(scores, ld, q, pq, g, src, stride, n, d, tmp)
		return
	case f.fp8 && pq == nil:
		dotFP8Rows(f.e4m3, scores, ld, q, nil, g, src, stride, n, d, tmp)
		return
	case f.fp8:
		// Queries out of the direct kernels' range were prepared once: the others
		// score them, without another try (no scratch).
		if pq[g*d] == 1 {
			dotFP8Rows(f.e4m3, scores, ld, q, pq[:g*d], g, src, stride, n, d, nil)
		} else {
			dotFP8Rows(f.e4m3, scores, ld, q, nil, g, src, stride, n, d, nil)
		}
		return
	}
	dotRowsQ4(&f.lg, scores, ld, q, pq, g, src, stride, n, d, tmp)
}

// add reports false, having done nothing, where the package function would go
// through tiles (addInt8RowsF16C's scratch too short for the queries).
func (f *planFast) add(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	switch {
	case f.i16:
		return addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp)
	case f.fp8:
		return addFP8Rows(f.e4m3, acc, w, ld, g, src, stride, n, d, tmp)
	}
	addRowsQ4(&f.lg, acc, w, ld, g, src, stride, n, d)
	return true
}
