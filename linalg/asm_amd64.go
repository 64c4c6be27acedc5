package linalg

import (
	"os"

	"kvq/gguf"

	"kvq/internal/cpufeat"
)

// detectSIMD returns, on CPUs with AVX2 and FMA, the scalar set with the assembly
// kernels in place ("avx2-asm"): F32 dots, SiLU, argmax and the quantization and
// packing of activations; with F16C as well the F16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K
// products. Every AVX2 CPU made has F16C; without it the other kernels stay scalar.
// With AVX-512 VNNI as well ("avx512-vnni"), Q8_0 products take the exact kernels of
// q8z_amd64.s, for one token and for many, Q4_0 and Q5_0 products those of
// q45z_amd64.s, Q4_K, Q6_K and F16 products of many tokens those of q4kz_amd64.s,
// q6kz_amd64.s and f16z_amd64.s, and with VBMI and GFNI the one-token IQ4_NL, IQ4_XS,
// Q3_K and Q2_K products those of iq4_amd64.s and q3k_amd64.s; KVQ_NOAVX512=1 in the
// environment keeps the AVX2 set (to compare).
func detectSIMD() *kernelSet {
	if !cpufeat.AVX2FMA {
		return nil
	}
	k := *scalarKernels
	k.name = "avx2-asm"
	k.dotF32, k.dotF32T, k.siluMul, k.quantQ8 = dotF32FMA, dotF32TAsm, siluMulAsm, quantQ8Asm
	k.argmax = argmaxAsm
	k.pack8 = pack8Asm
	if cpufeat.F16C {
		k.dotF16 = dotF16F16C
		k.dotQ8, k.dotQ8Rows = dotQ8F16C, dotQ8RowsF16C
		k.dotQ4KRows, k.dotQ4KRows2 = dotQ4KRowsAsm, dotQ4KRows2Asm
		k.dotQ6KRows, k.dotQ6KRows2 = dotQ6KRowsAsm, dotQ6KRows2Asm
		k.dotQ4Rows, k.dotQ4Rows2 = dotQ4RowsAsm, dotQ4Rows2Asm
		k.dotQ5Rows, k.dotQ5Rows2 = dotQ5RowsAsm, dotQ5Rows2Asm
		k.kRows = asmKRows()
	}
	// The scalar set's exact Q8_0 kernels are slower than these; only the VNNI set
	// below has fast ones.
	k.dotQ8RowsX, k.dotQ8Tokens, k.dotQ4KTokens, k.dotQ6KTokens, k.dotF16Tokens, k.exactBlocks = nil, nil, nil, nil, nil, nil
	if cpufeat.F16C && cpufeat.AVX512VNNI && os.Getenv("KVQ_NOAVX512") != "1" {
		avx2 := k
		alternateKernels = append(alternateKernels, &avx2)
		k.name = "avx512-vnni"
		k.dotQ8RowsX, k.dotQ8Tokens = dotQ8RowsZ, dotQ8TokensZ
		k.dotQ4KTokens, k.dotQ6KTokens = dotQ4KTokensZ, dotQ6KTokensZ
		k.dotF16Tokens = dotF16TokensZ
		if cpufeat.AVX512VBMIGFNI {
			k.kRows = zKRows(k.kRows)
		}
		k.exactBlocks = map[gguf.TensorType]blockKernels{
			gguf.TypeQ4_0: {dotQ4RowsZ, dotQ4TokensZ},
			gguf.TypeQ5_0: {dotQ5RowsZ, dotQ5TokensZ},
		}
	}
	return &k
}

// dotF16Tail finishes dotF16F16C's last values.
func dotF16Tail(w []byte, x []float32) float32 { return dotF16Scalar(w, x) }
