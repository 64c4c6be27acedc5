//go:build amd64

#include "textflag.h"

// Row decoders of F16, BF16, Int8 and FP8 rows into float32 tiles; declarations and
// contracts in decrows_amd64.go. Each takes dst (n ≥ 1 rows of d float32s, one after
// the other), src (row i at i·stride bytes) and d a positive multiple of 8 (the FP8
// ones also their header bytes and tensor scale), and widens 8 values per step.

// func decF16RowsF16C(dst *float32, src *byte, stride uintptr, n, d int)
TEXT ·decF16RowsF16C(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), DX
	SHLQ $1, DX // bytes of a row's values

f16row:
	XORQ AX, AX // byte offset in the row; the tile's is twice it

f16loop:
	VCVTPH2PS (SI)(AX*1), Y0
	VMOVUPS   Y0, (DI)(AX*2)
	ADDQ      $16, AX
	CMPQ      AX, DX
	JB        f16loop
	ADDQ      R8, SI
	LEAQ      (DI)(DX*2), DI
	DECQ      CX
	JNZ       f16row
	VZEROUPPER
	RET

// func decBF16RowsAsm(dst *float32, src *byte, stride uintptr, n, d int)
TEXT ·decBF16RowsAsm(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), DX
	SHLQ $1, DX

	MOVQ DX, R9
	ANDQ $-32, R9 // bytes of the 16-value steps

bf16row:
	XORQ AX, AX

bf16loop16:
	CMPQ      AX, R9
	JAE       bf16tail
	VPMOVZXWD (SI)(AX*1), Y0
	VPMOVZXWD 16(SI)(AX*1), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVUPS   Y0, (DI)(AX*2)
	VMOVUPS   Y1, 32(DI)(AX*2)
	ADDQ      $32, AX
	JMP       bf16loop16

bf16tail:
	CMPQ      AX, DX
	JAE       bf16next
	VPMOVZXWD (SI)(AX*1), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*2)

bf16next:
	ADDQ      R8, SI
	LEAQ      (DI)(DX*2), DI
	DECQ      CX
	JNZ       bf16row
	VZEROUPPER
	RET

// func decInt8RowsF16C(dst *float32, src *byte, stride uintptr, n, d int)
// Row: f16 scale s, then d int8 codes; value s·code, one rounding as Int8.Decode.
TEXT ·decInt8RowsF16C(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), DX

i8row:
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, Y1 // the scale in every lane
	XORQ         AX, AX // code index

i8loop:
	VPMOVSXBD 2(SI)(AX*1), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS    Y1, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, DX
	JB        i8loop
	ADDQ      R8, SI
	LEAQ      (DI)(DX*4), DI
	DECQ      CX
	JNZ       i8row
	VZEROUPPER
	RET

// func decE5M2RowsF16C(dst *float32, src *byte, stride uintptr, n, d, hdr int, scale float32)
// FP8 E5M2 rows: with hdr 2 each row's f16 scale precedes its codes, with hdr 0 the
// codes start the row and scale is the tensor scale. A code is the high byte of the
// binary16 of its value, widened exactly by VCVTPH2PS, then times the scale (one
// rounding, as FP8.Decode).
TEXT ·decE5M2RowsF16C(SB), NOSPLIT, $0-52
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         stride+16(FP), R8
	MOVQ         n+24(FP), CX
	MOVQ         d+32(FP), DX
	MOVQ         hdr+40(FP), R9
	VBROADCASTSS scale+48(FP), Y1

e5row:
	TESTQ        R9, R9
	JZ           e5codes
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, Y1

e5codes:
	LEAQ (SI)(R9*1), R10
	XORQ AX, AX

e5loop:
	VPMOVZXBW (R10)(AX*1), X0
	VPSLLW    $8, X0, X0
	VCVTPH2PS X0, Y0
	VMULPS    Y1, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, DX
	JB        e5loop
	ADDQ      R8, SI
	LEAQ      (DI)(DX*4), DI
	DECQ      CX
	JNZ       e5row
	VZEROUPPER
	RET

// func decE4M3RowsF16C(dst *float32, src *byte, stride uintptr, n, d, hdr int, scale float32)
// decE5M2RowsF16C for E4M3 codes: each widened to value·2⁻⁸ as rows_fp8_amd64.s's
// E4M3x16 does (sign-extended to a word, shifted left by 7, the sign's copy in bit
// 14 cleared: exact binary16, subnormals included), times 256 (exact), times the
// scale; the NaN codes 0x7F and 0xFF (which that widening makes finite) are set to
// all ones, a NaN.
TEXT ·decE4M3RowsF16C(SB), NOSPLIT, $0-52
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         stride+16(FP), R8
	MOVQ         n+24(FP), CX
	MOVQ         d+32(FP), DX
	MOVQ         hdr+40(FP), R9
	VBROADCASTSS scale+48(FP), Y1
	MOVL         $0xBFFFBFFF, R11
	VMOVD        R11, X14
	VPBROADCASTD X14, X14  // words 0xBFFF
	MOVL         $0x43800000, R11
	VMOVD        R11, X13
	VBROADCASTSS X13, Y13  // 256
	MOVL         $0x7F, R11
	VMOVD        R11, X12
	VPBROADCASTD X12, Y12  // dwords 0x7F

e4row:
	TESTQ        R9, R9
	JZ           e4codes
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, Y1

e4codes:
	LEAQ (SI)(R9*1), R10
	XORQ AX, AX

e4loop:
	VPMOVSXBW (R10)(AX*1), X0
	VPSLLW    $7, X0, X0
	VPAND     X14, X0, X0
	VCVTPH2PS X0, Y0
	VMULPS    Y13, Y0, Y0
	VMULPS    Y1, Y0, Y0
	VPMOVZXBD (R10)(AX*1), Y2
	VPAND     Y12, Y2, Y2
	VPCMPEQD  Y12, Y2, Y2
	VPOR      Y2, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, DX
	JB        e4loop
	ADDQ      R8, SI
	LEAQ      (DI)(DX*4), DI
	DECQ      CX
	JNZ       e4row
	VZEROUPPER
	RET
