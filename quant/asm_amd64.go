//go:build amd64 && !goexperiment.simd

package quant

import "kvq/internal/cpufeat"

// Without GOEXPERIMENT=simd, amd64 builds still run assembly kernels, which need no
// archsimd: the scalar set with those in place ("avx2-asm"). On CPUs with AVX2 and
// FMA: MultiDot and MultiAxpy over float32 tiles (F32 rows too, in place), the
// decoding of Channel blocks and of Affine, F16, BF16, Int8 and FP8 rows (all but
// BF16 with F16C; tiles_amd64.s, decrows_amd64.s), DotChannelRows's Channel kernel
// (dotChannelAsm, fused_lossy_amd64.go), fused BF16 DotRows/AddRows
// (rows_bf16_amd64.s) and Affine encoding (encode_amd64.s); with F16C as well, fused F16, Int8, FP8 and Affine
// DotRows/AddRows (rows_f16c_amd64.s, rows_fp8_amd64.s, lossy_asm_amd64.s,
// lossy_q4_amd64.s) and F16 encoding. With the experiment, multi_amd64.go provides
// the full AVX2 set instead (with the same assembly kernels).
func detectSIMD() *kernelSet {
	if !cpufeat.AVX2FMA {
		return nil
	}
	k := *scalarKernels
	k.name = "avx2-asm"
	k.multiDot, k.multiAxpy = multiDotAsm, multiAxpyAsm
	k.decBlock, k.decRows = decBlockAsm, decRowsAsm
	k.dotRows, k.addRows, k.scoredQuery, k.addRounding = fusedDotRows, fusedAddRows, scoredQueryAsm, addRoundingAsm
	k.encF16 = encodeF16 // VCVTPS2PH where the CPU has F16C, else the scalar twin
	k.encRange, k.encPack = groupRangeAsm, packCodesAsm
	return &k
}

// dotInt8RowsNoF16C and addInt8RowsNoF16C decline: without the experiment, Int8 rows
// on CPUs without F16C go through tiles.
func dotInt8RowsNoF16C([]float32, int, []float32, int, []byte, int, int, int) bool { return false }

func addInt8RowsNoF16C([]float32, []float32, int, int, []byte, int, int, int, []float32) bool {
	return false
}

// decRowsNoF16C declines: without the experiment, F16, Int8 and FP8 rows on CPUs
// without F16C are decoded by the scalar twin.
func decRowsNoF16C(RowCodec, []float32, []byte, int, int, int) bool { return false }
