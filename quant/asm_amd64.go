package quant

import "kvq/internal/cpufeat"

// detectSIMD returns the scalar set with the assembly kernels in place ("avx2-asm"). On CPUs with AVX2 and
// FMA: MultiDot and MultiAxpy over float32 tiles (F32 rows too, in place), the
// decoding of Channel blocks and of Affine, F16, BF16, Int8 and FP8 rows (all but
// BF16 with F16C; tiles_amd64.s, decrows_amd64.s), DotChannelRows's Channel kernel
// (dotChannelAsm, fused_lossy_amd64.go), fused BF16 DotRows/AddRows
// (rows_bf16_amd64.s) and Affine encoding (encode_amd64.s); with F16C as well, fused F16, Int8, FP8 and Affine
// DotRows/AddRows (rows_f16c_amd64.s, rows_fp8_amd64.s, lossy_asm_amd64.s,
// lossy_q4_amd64.s) and F16 encoding. Every AVX2 CPU made has F16C; without it the
// kernels that need it stay scalar.
func detectSIMD() *kernelSet {
	if !cpufeat.AVX2FMA {
		return nil
	}
	k := *scalarKernels
	k.name = "avx2-asm"
	k.multiDot, k.multiAxpy = multiDotAsm, multiAxpyAsm
	k.decBlock, k.chanAdd = decBlockAsm, addChanBlockAsm
	k.chanDot, k.chanSpan, k.chanInt = dotChannelAsm, dotChannelSpanI8Z, chanMode
	k.ropeRows, k.ropeDot1, k.ropeInt = ropeRowsAsm, ropeDotAsm, ropeIntTakes
	if haveRoPEZ {
		k.ropeSpan1 = ropeSpanZ
	}
	// Row codecs: each codec's entry in the kernel table (kernels.go).
	k.dotRows, k.addRows, k.decRows = tableDotRows, tableAddRows, tableDecRows
	k.scoredQuery, k.addRounding, k.independent, k.plan = tableScoredQuery, tableRounding, tableIndependent, tablePlan
	k.encF16 = encodeF16 // VCVTPS2PH where the CPU has F16C, else the scalar twin
	k.encRange, k.encPack = groupRangeAsm, packCodesAsm
	return &k
}
