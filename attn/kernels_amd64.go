//go:build amd64

package attn

import "kvq/internal/cpufeat"

// detectSIMD returns the assembly softmax kernels (softmax_asm_amd64.s) on CPUs with
// AVX2 and FMA, else nil, in every amd64 build: they measured 2.6× faster than the
// archsimd loops they replaced (BenchmarkSoftmaxKernels, exp of 256 values: 160 ns
// against 425), whose compiled code kept the constants in memory.
//
// With AVX-512F the exp kernel takes 16 lanes (expRowZ, the set "avx512"): a row of
// 256 values, copied in first, took 59 ns against 78 with expRowFMA, and decode
// attention at 32k (q4, 32/8/64) 4–10% less time per step.
func detectSIMD() *kernelSet {
	if !cpufeat.AVX2FMA {
		return nil
	}
	if cpufeat.AVX512F {
		return &kernelSet{name: "avx512", maxRow: maxRowAsm, expRow: expRowAsmZ}
	}
	return &kernelSet{name: "avx2", maxRow: maxRowAsm, expRow: expRowAsm}
}
