//go:build amd64

#include "textflag.h"

// The permutation that puts the codes of VPACKSSDW and VPACKSSWB over four vectors of
// 8 int32 back in order: dword j of the packed vector holds codes 4j..4j+3 of vector
// j%4's lane half j/4.
DATA q8ord<>+0(SB)/8, $0x0000000400000000
DATA q8ord<>+8(SB)/8, $0x0000000500000001
DATA q8ord<>+16(SB)/8, $0x0000000600000002
DATA q8ord<>+24(SB)/8, $0x0000000700000003
GLOBL q8ord<>(SB), RODATA|NOPTR, $32

// func quantQ8Blocks(xq *int8, xd *float32, x *float32, nb int) int
// quantQ8Scalar for the blocks of 32 values from the first, stopping before the first
// block that has a NaN or infinite value (or whose finite sum overflows) or whose
// reciprocal scale exceeds 2^100 (a subnormal scale): the scalar twin defines those.
// Returns the blocks done. Every float operation is the twin's: d = max|x|/127 and
// id = 1/d (0 when d is 0) by VDIVSS, x·id by VMULPS, rounded to nearest even by
// VCVTPS2DQ (|x·id| ≤ 127.0001 here), clamped to [-127, 127].
TEXT ·quantQ8Blocks(SB), NOSPLIT, $0-40
	MOVQ xq+0(FP), DI
	MOVQ xd+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ nb+24(FP), CX
	XORQ AX, AX
	VPCMPEQD     Y15, Y15, Y15
	VPSRLD       $1, Y15, Y15 // |·| mask
	VMOVDQU      q8ord<>(SB), Y14
	MOVL         $127, DX
	VMOVD        DX, X13
	VPBROADCASTD X13, Y13
	MOVL         $-127, DX
	VMOVD        DX, X12
	VPBROADCASTD X12, Y12
	VXORPS       Y11, Y11, Y11

qblock:
	CMPQ AX, CX
	JAE  qdone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3

	// (Σ lanes)·0 is NaN in a lane where a value is NaN or infinite.
	VADDPS    Y1, Y0, Y4
	VADDPS    Y3, Y2, Y5
	VADDPS    Y5, Y4, Y4
	VMULPS    Y11, Y4, Y4
	VCMPPS    $3, Y4, Y4, Y4 // unordered
	VMOVMSKPS Y4, DX
	TESTL     DX, DX
	JNZ       qdone

	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VMAXPS       Y5, Y4, Y4
	VANDPS       Y15, Y2, Y5
	VMAXPS       Y5, Y4, Y4
	VANDPS       Y15, Y3, Y5
	VMAXPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMAXPS       X5, X4, X4 // max|x|

	MOVL     $0x42fe0000, DX // 127
	VMOVD    DX, X5
	VDIVSS   X5, X4, X6 // d
	VXORPS   X7, X7, X7 // id = 0 when d is 0
	VUCOMISS X7, X6
	JE       qcodes
	MOVL     $0x3f800000, DX // 1
	VMOVD    DX, X7
	VDIVSS   X6, X7, X7 // id = 1/d
	MOVL     $0x71800000, DX // 2^100
	VMOVD    DX, X8
	VUCOMISS X8, X7
	JA       qdone

qcodes:
	VMOVSS       X6, (R8)
	VBROADCASTSS X7, Y7
	VMULPS       Y7, Y0, Y0
	VMULPS       Y7, Y1, Y1
	VMULPS       Y7, Y2, Y2
	VMULPS       Y7, Y3, Y3
	VCVTPS2DQ    Y0, Y0
	VCVTPS2DQ    Y1, Y1
	VCVTPS2DQ    Y2, Y2
	VCVTPS2DQ    Y3, Y3
	VPMINSD      Y13, Y0, Y0
	VPMINSD      Y13, Y1, Y1
	VPMINSD      Y13, Y2, Y2
	VPMINSD      Y13, Y3, Y3
	VPMAXSD      Y12, Y0, Y0
	VPMAXSD      Y12, Y1, Y1
	VPMAXSD      Y12, Y2, Y2
	VPMAXSD      Y12, Y3, Y3
	VPACKSSDW    Y1, Y0, Y0
	VPACKSSDW    Y3, Y2, Y2
	VPACKSSWB    Y2, Y0, Y0
	VPERMD       Y0, Y14, Y0
	VMOVDQU      Y0, (DI)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $4, R8
	INCQ         AX
	JMP          qblock

qdone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// func pack8(dst, src *uint32, stride, n int, flip uint32)
// For it < n, i < 8 and j < 8: dst[128·it+16·j+i] = src[stride·i+8·it+j] XOR flip (stride
// in dwords). Per it the 8 rows of 8 dwords from src (one YMM each) are transposed by
// dword and qword unpacks and a swap of 128-bit halves, and the columns stored 64
// bytes apart.
TEXT ·pack8(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         stride+16(FP), DX
	SHLQ         $2, DX            // bytes from one row to the next
	MOVQ         n+24(FP), CX
	MOVL         flip+32(FP), AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	LEAQ         (DX)(DX*2), R8    // 3 rows
	LEAQ         (SI)(DX*4), R9    // rows 4–7
	TESTQ        CX, CX
	JE           pdone

pblock:
	VMOVDQU      (SI), Y0
	VMOVDQU      (SI)(DX*1), Y1
	VMOVDQU      (SI)(DX*2), Y2
	VMOVDQU      (SI)(R8*1), Y3
	VMOVDQU      (R9), Y4
	VMOVDQU      (R9)(DX*1), Y5
	VMOVDQU      (R9)(DX*2), Y6
	VMOVDQU      (R9)(R8*1), Y7
	VPUNPCKLDQ   Y1, Y0, Y8        // rows 0, 1: dwords 0, 1 | 4, 5
	VPUNPCKHDQ   Y1, Y0, Y9        // dwords 2, 3 | 6, 7
	VPUNPCKLDQ   Y3, Y2, Y10
	VPUNPCKHDQ   Y3, Y2, Y11
	VPUNPCKLDQ   Y5, Y4, Y12
	VPUNPCKHDQ   Y5, Y4, Y13
	VPUNPCKLDQ   Y7, Y6, Y14
	VPUNPCKHDQ   Y7, Y6, Y0
	VPUNPCKLQDQ  Y10, Y8, Y1       // rows 0–3: dword 0 | dword 4
	VPUNPCKHQDQ  Y10, Y8, Y2       // dword 1 | dword 5
	VPUNPCKLQDQ  Y11, Y9, Y3       // dword 2 | dword 6
	VPUNPCKHQDQ  Y11, Y9, Y4       // dword 3 | dword 7
	VPUNPCKLQDQ  Y14, Y12, Y5      // rows 4–7: dword 0 | dword 4
	VPUNPCKHQDQ  Y14, Y12, Y6
	VPUNPCKLQDQ  Y0, Y13, Y7
	VPUNPCKHQDQ  Y0, Y13, Y8
	VPERM2I128   $0x20, Y5, Y1, Y9
	VPERM2I128   $0x31, Y5, Y1, Y10
	VPERM2I128   $0x20, Y6, Y2, Y11
	VPERM2I128   $0x31, Y6, Y2, Y12
	VPERM2I128   $0x20, Y7, Y3, Y13
	VPERM2I128   $0x31, Y7, Y3, Y14
	VPERM2I128   $0x20, Y8, Y4, Y5
	VPERM2I128   $0x31, Y8, Y4, Y6
	VPXOR        Y15, Y9, Y9
	VPXOR        Y15, Y11, Y11
	VPXOR        Y15, Y13, Y13
	VPXOR        Y15, Y5, Y5
	VPXOR        Y15, Y10, Y10
	VPXOR        Y15, Y12, Y12
	VPXOR        Y15, Y14, Y14
	VPXOR        Y15, Y6, Y6
	VMOVDQU      Y9, (DI)          // column 0
	VMOVDQU      Y11, 64(DI)       // column 1
	VMOVDQU      Y13, 128(DI)      // column 2
	VMOVDQU      Y5, 192(DI)       // column 3
	VMOVDQU      Y10, 256(DI)      // column 4
	VMOVDQU      Y12, 320(DI)      // column 5
	VMOVDQU      Y14, 384(DI)      // column 6
	VMOVDQU      Y6, 448(DI)       // column 7
	ADDQ         $32, SI
	ADDQ         $32, R9
	ADDQ         $512, DI
	DECQ         CX
	JNE          pblock

pdone:
	VZEROUPPER
	RET
