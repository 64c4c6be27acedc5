//go:build amd64

package attn

import "kvq/internal/cpufeat"

// detectSIMD returns the assembly softmax kernels (softmax_asm_amd64.s) on CPUs with
// AVX2 and FMA, else nil, in every amd64 build: they measured 2.6× faster than the
// archsimd loops they replaced (BenchmarkSoftmaxKernels, exp of 256 values: 160 ns
// against 425), whose compiled code kept the constants in memory.
func detectSIMD() *kernelSet {
	if !cpufeat.AVX2FMA {
		return nil
	}
	return &kernelSet{name: "avx2", maxRow: maxRowAsm, expRow: expRowAsm}
}
