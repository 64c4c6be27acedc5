//go:build amd64 && !goexperiment.simd

package quant

import (
	"unsafe"

	"kvq/internal/cpufeat"
)

// Without GOEXPERIMENT=simd, amd64 builds still run assembly kernels, which need no
// archsimd: the scalar set with those in place ("avx2-asm"). On CPUs with AVX2 and
// FMA: MultiDot and MultiAxpy over float32 tiles (F32 rows too, in place), the
// decoding of Channel blocks and of Affine, F16, BF16, Int8 and FP8 rows (all but
// BF16 with F16C; tiles_amd64.s, decrows_amd64.s), DotChannelRows's Channel kernel
// (dotChannelAsm, fused_lossy_amd64.go) and fused BF16 DotRows/AddRows
// (rows_bf16_amd64.s); with F16C as well, fused F16, Int8, FP8 and Affine
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
	k.dotRows, k.addRows, k.i8Query = asmDotRows, asmAddRows, i8Query
	k.encF16 = encodeF16 // VCVTPS2PH where the CPU has F16C, else the scalar twin
	return &k
}

// asmDotRows is the dotRows kernel of the assembly set: F32 rows of any d (the tile
// kernel over the rows in place); for d a multiple of 16 BF16 rows, and with F16C
// F16, Int8, FP8 and Affine rows (Affine: fused_lossy_amd64.go's shapes).
func asmDotRows(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if _, ok := c.(F32); ok && stride%4 == 0 {
		// Read in place, as the archsimd set does: no copy into a tile.
		multiDotAsm(scores, ld, q, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
		return true
	}
	if d%16 != 0 {
		return false
	}
	switch c.(type) {
	case BF16:
		dotRowsFused(dotBF16Q4asm, dotBF16R4asm, scores, ld, q, g, src, stride, n, d)
		return true
	}
	if !haveF16C {
		return false
	}
	switch c := c.(type) {
	case F16:
		dotRowsFused(dotF16Q4, dotF16R4, scores, ld, q, g, src, stride, n, d)
	case Int8:
		dotRowsFused(dotInt8Q4F16C, dotInt8R4F16C, scores, ld, q, g, src, stride, n, d)
	case FP8:
		return dotFP8Rows(c, scores, ld, q, g, src, stride, n, d)
	default:
		return fusedDotRowsLossy(c, scores, ld, q, g, src, stride, n, d, tmp)
	}
	return true
}

// asmAddRows is the addRows kernel of the assembly set, as asmDotRows.
func asmAddRows(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if _, ok := c.(F32); ok && stride%4 == 0 {
		multiAxpyAsm(acc, w, ld, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
		return true
	}
	if d%16 != 0 {
		return false
	}
	switch c.(type) {
	case BF16:
		addRowsFused(addBF16Q4asm, addBF16Q1x64asm, addBF16Q1x16asm, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, n, d, 2)
		return true
	}
	if !haveF16C {
		return false
	}
	switch c := c.(type) {
	case F16:
		addRowsFused(addF16Q4F16C, addF16Q1x64, addF16Q1x16, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, n, d, 2)
		return true
	case Int8:
		return addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp)
	case FP8:
		return addFP8Rows(c, acc, w, ld, g, src, stride, n, d, tmp)
	}
	return fusedAddRowsLossy(c, acc, w, ld, g, src, stride, n, d, tmp)
}
