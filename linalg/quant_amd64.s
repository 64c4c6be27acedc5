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
