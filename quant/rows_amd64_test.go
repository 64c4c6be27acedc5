//go:build amd64 && goexperiment.simd

package quant

// simdFuses reports whether the SIMD set runs rows of c through its fused kernels:
// all four plain kinds, F16 only with the F16C kernels.
func simdFuses(c RowCodec) bool {
	_, f16 := c.(F16)
	return !f16 || haveF16C
}

// noF16CKernels returns the SIMD set with its F16C kernels off (archsimd Int8
// kernels, F16 rows through tiles), for benchmarks to measure the assembly against;
// nil on CPUs without F16C.
func noF16CKernels() *kernelSet {
	if !haveF16C {
		return nil
	}
	k := *simdKernels
	k.name = "noF16C"
	k.scoredQuery, k.addRounding = nil, nil // the integer kernels need F16C
	k.dotRows = func(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
		defer setF16C(setF16C(false))
		return fusedDotRows(c, scores, ld, q, g, src, stride, n, d, tmp)
	}
	k.addRows = func(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
		defer setF16C(setF16C(false))
		return fusedAddRows(c, acc, w, ld, g, src, stride, n, d, tmp)
	}
	return &k
}

// simdFusesLossy is whether the SIMD set has fused kernels for Affine and FP8 rows:
// the archsimd set fuses them.
const simdFusesLossy = true
