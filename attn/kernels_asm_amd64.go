//go:build amd64 && !goexperiment.simd

package attn

import "kvq/internal/cpufeat"

// detectSIMD returns the assembly softmax kernels of builds without
// GOEXPERIMENT=simd (softmax_asm_amd64.s) on CPUs with AVX2 and FMA, else nil. With
// the experiment, kernels_amd64.go provides the archsimd set instead.
func detectSIMD() *kernelSet {
	if !cpufeat.AVX2FMA {
		return nil
	}
	return &kernelSet{name: "avx2-asm", maxRow: maxRowAsm, expRow: expRowAsm}
}
