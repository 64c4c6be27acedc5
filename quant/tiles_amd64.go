//go:build amd64

package quant

// MultiDot and MultiAxpy kernels in AVX2 + FMA assembly (tiles_amd64.s) for builds
// without GOEXPERIMENT=simd, on CPUs with AVX2 and FMA: every d ≥ 1 (the archsimd
// kernels of multi_amd64.go take d a multiple of 8), such as the decoded tiles of
// head dimension 8 of small models. Float sums differ from the scalar twins' only
// in order and fused multiply-adds.

// dotRowsF32 writes out[i] = Σ_{c<d} q[c]·x[i·xs/4 + c] for i < n (xs in bytes),
// n, d ≥ 1; it reads nothing past each row's d values.
//
//go:noescape
func dotRowsF32(out, q, x *float32, xs uintptr, n, d int)

// axpyRowsF32 does acc[c] += Σ_{i<n} w[i]·x[i·xs/4 + c] for c < d (xs in bytes), n,
// d ≥ 1, adding the rows into acc in row order with fused multiply-adds; it reads
// nothing past each row's d values and writes only acc[:d].
//
//go:noescape
func axpyRowsF32(acc, w, x *float32, xs uintptr, n, d int)

// axpyRows2F32 is axpyRowsF32 for two queries at once (each row loaded once): the
// second query's acc and w at as and ws bytes past the first's. Each query's result
// is bit for bit axpyRowsF32's.
//
//go:noescape
func axpyRows2F32(acc *float32, as uintptr, w *float32, ws uintptr, x *float32, xs uintptr, n, d int)

// multiDotAsm is multiDotScalar: per query, all rows in one dotRowsF32 call. The
// arguments are checked by MultiDot (g, n, d ≥ 1 and every slice long enough). A
// score depends only on its query and row, not on n or the row's place in x.
func multiDotAsm(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int) {
	for j := range g {
		dotRowsF32(&scores[j*ld], &q[j*d], &x[0], uintptr(4*xs), n, d)
	}
}

// multiAxpyAsm is multiAxpyScalar: queries two at a time (axpyRows2F32), an odd
// last one alone. The arguments are checked by MultiAxpy. As in the scalar twin,
// rows are added in order into acc, so splitting them between calls gives the same
// sums bit for bit.
func multiAxpyAsm(acc, w []float32, ld, g int, x []float32, xs, n, d int) {
	j := 0
	for ; j+2 <= g; j += 2 {
		axpyRows2F32(&acc[j*d], uintptr(4*d), &w[j*ld], uintptr(4*ld), &x[0], uintptr(4*xs), n, d)
	}
	if j < g {
		axpyRowsF32(&acc[j*d], &w[j*ld], &x[0], uintptr(4*xs), n, d)
	}
}
