//go:build amd64

#include "textflag.h"
#include "addq4_amd64.h"
#include "prefetch_amd64.h"
#include "r4frame_amd64.h"
#include "addq1_amd64.h"

// FP8 row kernels: the loops of the Int8 kernels in rows_f16c_amd64.s, with the
// codes widened to binary16 in vector registers and then to float32 by VCVTPH2PS.
// Each kernel body is a macro over the widening step (E4M3x16 or E5M2x16),
// instantiated once per format; the four-query adds are the ADDQ4 loop of
// addq4_amd64.h, which the F16, BF16, F32 and Int8 adds share. The arguments are
// read outside the macros, where go vet checks them, except by R4ARGS (R4FRAME),
// Q1ARGS and Q4ARGS, which serve kernels of one frame layout each. Declarations and contracts in
// rows_fp8_amd64.go.

// FP8_CONSTS sets the constant registers of the widening steps: X15 zero, Y14 the
// words 0xBFFF. It uses AX.
#define FP8_CONSTS \
	VPXOR        X15, X15, X15; \
	MOVL         $0xBFFFBFFF, AX; \
	VMOVD        AX, X14; \
	VPBROADCASTD X14, Y14

// E5M2x16(m, xl, yl, xh, yh) widens the 16 E5M2 codes at m to float32, codes 0..7
// into yl and 8..15 into yh (xl and xh are the same registers' low halves). A code
// is the high byte of the binary16 of the same value, so interleaving zero bytes
// below the codes gives binary16 values, widened exactly (subnormals, ±Inf, NaN).
#define E5M2x16(m, xl, yl, xh, yh) \
	VPUNPCKLBW m, X15, xl; \
	VPUNPCKHBW m, X15, xh; \
	VCVTPH2PS  xl, yl; \
	VCVTPH2PS  xh, yh

// E4M3x16(m, xl, yl, xh, yh) is E5M2x16 for E4M3 codes, which it widens to
// value·2⁻⁸: sign-extended to words and shifted left by 7, a code's exponent and
// mantissa land in the binary16 exponent (bits 13..10: bias 15 = 7 + 8) and mantissa
// (bits 9..7), its sign in bit 15 and a copy of it in bit 14, which Y14 clears. Exact
// for every finite code, subnormals included (m·2⁻⁹ becomes the binary16 subnormal
// m·2⁻¹⁷); the NaN codes 0x7F and 0xFF become ±480·2⁻⁸, a finite value.
#define E4M3x16(m, xl, yl, xh, yh) \
	VPMOVSXBW    m, yl; \
	VPSLLW       $7, yl, yl; \
	VPAND        Y14, yl, yl; \
	VEXTRACTI128 $1, yl, xh; \
	VCVTPH2PS    xl, yl; \
	VCVTPH2PS    xh, yh

// The accumulators of DOT_R4 in their YMM form (two per row, Y0..Y7: values 0–7 and
// 8–15 of every 16) and their ZMM form (one per row, Z0..Z3, whose halves are those
// two), for its ZERO and FOLD steps.

// R4YZERO, R4ZZERO clear the accumulators.
#define R4YZERO \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

#define R4ZZERO \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3

// R4YFOLD adds each row's second accumulator to its first; R4ZFOLD first moves the
// high halves of the ZMM accumulators to Y4..Y7.
#define R4YFOLD \
	VADDPS Y4, Y0, Y0; \
	VADDPS Y5, Y1, Y1; \
	VADDPS Y6, Y2, Y2; \
	VADDPS Y7, Y3, Y3

#define R4ZFOLD \
	VEXTRACTF64X4 $1, Z0, Y4; \
	VEXTRACTF64X4 $1, Z1, Y5; \
	VEXTRACTF64X4 $1, Z2, Y6; \
	VEXTRACTF64X4 $1, Z3, Y7; \
	R4YFOLD

// DOT_R4(ZERO, STEP, FOLD) is the body of dot*R4: DI out, SI q, R8 the first codes
// of the first group, R9..R11 the offsets of its other rows, R12 the step between
// groups, R13 the groups, R14 d, R15 the header bytes (2: each row's f16 scale
// precedes its codes; 0: none), X13 the multiplier. Per group, lane r of the result
// is (s_r·(q · row r))·mul, with s_r = 1 without header. ZERO, STEP (16 codes of each
// row, AX their offset) and FOLD (each row's accumulators added into Y0..Y3, which
// the VHADDPS tree reduces): R4YFP8 is the YMM step, R4ZFP8 its ZMM twin (the same
// bits: each lane takes the same FMAs in the same order). Each group first asks for
// its rows' lines PFDIST bytes on (prefetch_amd64.h).
#define DOT_R4(ZERO, STEP, FOLD) DOT_R4C(FP8_CONSTS, ZERO, STEP, FOLD)

// DOT_R4C is DOT_R4 with CONSTS in FP8_CONSTS's place.
#define DOT_R4C(CONSTS, ZERO, STEP, FOLD) \
	CONSTS; \
r4group: \
	TESTQ  R13, R13; \
	JZ     r4done; \
	ZERO; \
	LEAQ   (R8)(R9*1), BX; \
	LEAQ   (R8)(R10*1), CX; \
	LEAQ   (R8)(R11*1), DX; \
	PREFETCH4(R8, BX, CX, DX); \
	XORQ   AX, AX; \
r4loop: \
	STEP; \
	ADDQ        $16, AX; \
	CMPQ        AX, R14; \
	JB          r4loop; \
	FOLD; \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	TESTQ        R15, R15; \
	JZ           r4mul; \
	VPXOR        X1, X1, X1; \
	VPINSRW      $0, -2(R8), X1, X1; \
	VPINSRW      $1, -2(BX), X1, X1; \
	VPINSRW      $2, -2(CX), X1, X1; \
	VPINSRW      $3, -2(DX), X1, X1; \
	VCVTPH2PS    X1, X1; \
	VMULPS       X1, X0, X0; \
r4mul: \
	VMULPS  X13, X0, X0; \
	VMOVUPS X0, (DI); \
	ADDQ    $16, DI; \
	ADDQ    R12, R8; \
	DECQ    R13; \
	JMP     r4group; \
r4done: \
	VZEROUPPER

// R4YFP8(CVT) adds the products of the 16 codes at AX of the four rows (R8, BX, CX,
// DX), widened by CVT, with the query's matching values into Y0..Y7.
#define R4YFP8(CVT) \
	VMOVUPS     (SI)(AX*4), Y8; \
	VMOVUPS     32(SI)(AX*4), Y9; \
	CVT((R8)(AX*1), X10, Y10, X11, Y11); \
	VFMADD231PS Y8, Y10, Y0; \
	VFMADD231PS Y9, Y11, Y4; \
	CVT((BX)(AX*1), X10, Y10, X11, Y11); \
	VFMADD231PS Y8, Y10, Y1; \
	VFMADD231PS Y9, Y11, Y5; \
	CVT((CX)(AX*1), X10, Y10, X11, Y11); \
	VFMADD231PS Y8, Y10, Y2; \
	VFMADD231PS Y9, Y11, Y6; \
	CVT((DX)(AX*1), X10, Y10, X11, Y11); \
	VFMADD231PS Y8, Y10, Y3; \
	VFMADD231PS Y9, Y11, Y7

// R4ZFP8(CVTZ) is R4YFP8 into Z0..Z3, CVTZ widening 16 codes into one ZMM register.
#define R4ZFP8(CVTZ) \
	VMOVUPS     (SI)(AX*4), Z8; \
	CVTZ((R8)(AX*1), Y10, Z10); \
	CVTZ((BX)(AX*1), Y11, Z11); \
	CVTZ((CX)(AX*1), Y12, Z12); \
	CVTZ((DX)(AX*1), Y9, Z9); \
	VFMADD231PS Z8, Z10, Z0; \
	VFMADD231PS Z8, Z11, Z1; \
	VFMADD231PS Z8, Z12, Z2; \
	VFMADD231PS Z8, Z9, Z3

// E4M3Z16 and E5M2Z16 widen the 16 codes at m into z (y its low half) as E4M3x16 and
// E5M2x16 do into two YMM registers (Y14: the words 0xBFFF).
#define E4M3Z16(m, y, z) \
	VPMOVSXBW m, y; \
	VPSLLW    $7, y, y; \
	VPAND     Y14, y, y; \
	VCVTPH2PS y, z

#define E5M2Z16(m, y, z) \
	VPMOVZXBW m, y; \
	VPSLLW    $8, y, y; \
	VCVTPH2PS y, z

// The steps of each format, for DOT_R4's STEP.
#define R4YE4M3 R4YFP8(E4M3x16)
#define R4YE5M2 R4YFP8(E5M2x16)
#define R4ZE4M3 R4ZFP8(E4M3Z16)
#define R4ZE5M2 R4ZFP8(E5M2Z16)

// R4ARGS loads the arguments of the dot*R4 kernels (their shared frame) and moves R8
// past the first row's header.
#define R4ARGS \
	R4FRAME                         \
	MOVQ         hdr+72(FP), R15    \
	VBROADCASTSS mul+80(FP), X13    \
	ADDQ         R15, R8

// func dotE4M3R4F16C(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)
TEXT ·dotE4M3R4F16C(SB), NOSPLIT, $0-84
	R4ARGS
	DOT_R4(R4YZERO, R4YE4M3, R4YFOLD)
	RET

// func dotE5M2R4F16C(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)
TEXT ·dotE5M2R4F16C(SB), NOSPLIT, $0-84
	R4ARGS
	DOT_R4(R4YZERO, R4YE5M2, R4YFOLD)
	RET

// func dotE4M3R4Z(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)
TEXT ·dotE4M3R4Z(SB), NOSPLIT, $0-84
	R4ARGS
	DOT_R4(R4ZZERO, R4ZE4M3, R4ZFOLD)
	RET

// func dotE5M2R4Z(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)
TEXT ·dotE5M2R4Z(SB), NOSPLIT, $0-84
	R4ARGS
	DOT_R4(R4ZZERO, R4ZE5M2, R4ZFOLD)
	RET

// DOT_Q4(CVT) is the body of dot*Q4: DI out, BX ldb, SI q (the first query), CX qs,
// R8 the first codes, R12 stride, R13 n, R14 d, R15 and X13 as for DOT_R4. Per row
// i, out[i + r·ldb/4] = (s_i·(q_r · row i))·mul.
#define DOT_Q4(CVT) \
	FP8_CONSTS; \
	LEAQ (SI)(CX*1), R9; \
	LEAQ (R9)(CX*1), R10; \
	LEAQ (R10)(CX*1), R11; \
	LEAQ (BX)(BX*2), DX; \
q4row: \
	TESTQ  R13, R13; \
	JZ     q4done; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	XORQ   AX, AX; \
q4loop: \
	CVT((R8)(AX*1), X8, Y8, X9, Y9); \
	VFMADD231PS (SI)(AX*4), Y8, Y0; \
	VFMADD231PS 32(SI)(AX*4), Y9, Y4; \
	VFMADD231PS (R9)(AX*4), Y8, Y1; \
	VFMADD231PS 32(R9)(AX*4), Y9, Y5; \
	VFMADD231PS (R10)(AX*4), Y8, Y2; \
	VFMADD231PS 32(R10)(AX*4), Y9, Y6; \
	VFMADD231PS (R11)(AX*4), Y8, Y3; \
	VFMADD231PS 32(R11)(AX*4), Y9, Y7; \
	ADDQ        $16, AX; \
	CMPQ        AX, R14; \
	JB          q4loop; \
	VADDPS       Y4, Y0, Y0; \
	VADDPS       Y5, Y1, Y1; \
	VADDPS       Y6, Y2, Y2; \
	VADDPS       Y7, Y3, Y3; \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	TESTQ        R15, R15; \
	JZ           q4mul; \
	MOVWLZX      -2(R8), AX; \
	VMOVD        AX, X1; \
	VCVTPH2PS    X1, X1; \
	VBROADCASTSS X1, X1; \
	VMULPS       X1, X0, X0; \
q4mul: \
	VMULPS     X13, X0, X0; \
	VMOVSS     X0, (DI); \
	VEXTRACTPS $1, X0, (DI)(BX*1); \
	VEXTRACTPS $2, X0, (DI)(BX*2); \
	VEXTRACTPS $3, X0, (DI)(DX*1); \
	ADDQ       $4, DI; \
	ADDQ       R12, R8; \
	DECQ       R13; \
	JMP        q4row; \
q4done: \
	VZEROUPPER

// func dotE4M3Q4F16C(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotE4M3Q4F16C(SB), NOSPLIT, $0-76
	MOVQ         out+0(FP), DI
	MOVQ         ldb+8(FP), BX
	MOVQ         q+16(FP), SI
	MOVQ         qs+24(FP), CX
	MOVQ         src+32(FP), R8
	MOVQ         stride+40(FP), R12
	MOVQ         n+48(FP), R13
	MOVQ         d+56(FP), R14
	MOVQ         hdr+64(FP), R15
	VBROADCASTSS mul+72(FP), X13
	ADDQ         R15, R8
	DOT_Q4(E4M3x16)
	RET

// func dotE5M2Q4F16C(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotE5M2Q4F16C(SB), NOSPLIT, $0-76
	MOVQ         out+0(FP), DI
	MOVQ         ldb+8(FP), BX
	MOVQ         q+16(FP), SI
	MOVQ         qs+24(FP), CX
	MOVQ         src+32(FP), R8
	MOVQ         stride+40(FP), R12
	MOVQ         n+48(FP), R13
	MOVQ         d+56(FP), R14
	MOVQ         hdr+64(FP), R15
	VBROADCASTSS mul+72(FP), X13
	ADDQ         R15, R8
	DOT_Q4(E5M2x16)
	RET

// ADD_Q1X64(CVT, W) is the body of add*Q1x64: DI acc, SI w, R8 the first codes, R12
// stride, R13 n, R9 the offset of a row's scale from its codes (WROW), X13 the
// multiplier. acc[c] += Σ_i W_i·row_i[c] for c < 64, the 64 sums in eight registers
// while the rows stream by, each asked for ahead as ADDQ1Z does (R10).
#define ADD_Q1X64(CVT, W) \
	FP8_CONSTS; \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS 64(DI), Y2; \
	VMOVUPS 96(DI), Y3; \
	VMOVUPS 128(DI), Y4; \
	VMOVUPS 160(DI), Y5; \
	VMOVUPS 192(DI), Y6; \
	VMOVUPS 224(DI), Y7; \
	PFNEXTSET(R10); \
	TESTQ   R13, R13; \
	JZ      a64done; \
a64loop: \
	PFROW2(R10); \
	W(0, (R8)(R9*1), X8, Y8); \
	CVT((R8), X9, Y9, X10, Y10); \
	CVT(16(R8), X11, Y11, X12, Y12); \
	VFMADD231PS  Y8, Y9, Y0; \
	VFMADD231PS  Y8, Y10, Y1; \
	VFMADD231PS  Y8, Y11, Y2; \
	VFMADD231PS  Y8, Y12, Y3; \
	CVT(32(R8), X9, Y9, X10, Y10); \
	CVT(48(R8), X11, Y11, X12, Y12); \
	VFMADD231PS  Y8, Y9, Y4; \
	VFMADD231PS  Y8, Y10, Y5; \
	VFMADD231PS  Y8, Y11, Y6; \
	VFMADD231PS  Y8, Y12, Y7; \
	ADDQ         $4, SI; \
	ADDQ         R12, R8; \
	DECQ         R13; \
	JNZ          a64loop; \
a64done: \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	VMOVUPS Y4, 128(DI); \
	VMOVUPS Y5, 160(DI); \
	VMOVUPS Y6, 192(DI); \
	VMOVUPS Y7, 224(DI); \
	VZEROUPPER

// ADD_Q1X16(CVT, W) is ADD_Q1X64 for 16 columns: each column's sum one chain of
// FMAs in row order, as in the four-query kernels (RowsQueriesIndependent); two
// rows per iteration load ahead, R10 the odd row.
#define ADD_Q1X16(CVT, W) \
	FP8_CONSTS; \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	LEAQ    (R8)(R12*1), R10; \
a16loop: \
	CMPQ         R13, $2; \
	JB           a16tail; \
	W(0, (R8)(R9*1), X8, Y8); \
	W(4, (R10)(R9*1), X9, Y9); \
	CVT((R8), X10, Y10, X11, Y11); \
	VFMADD231PS  Y8, Y10, Y0; \
	VFMADD231PS  Y8, Y11, Y1; \
	CVT((R10), X10, Y10, X11, Y11); \
	VFMADD231PS  Y9, Y10, Y0; \
	VFMADD231PS  Y9, Y11, Y1; \
	ADDQ         $8, SI; \
	LEAQ         (R8)(R12*2), R8; \
	LEAQ         (R10)(R12*2), R10; \
	SUBQ         $2, R13; \
	JMP          a16loop; \
a16tail: \
	TESTQ        R13, R13; \
	JZ           a16done; \
	W(0, (R8)(R9*1), X8, Y8); \
	CVT((R8), X10, Y10, X11, Y11); \
	VFMADD231PS  Y8, Y10, Y0; \
	VFMADD231PS  Y8, Y11, Y1; \
a16done: \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VZEROUPPER

// func addE4M3Q1x64F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE4M3Q1x64F16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X64(E4M3x16, WROW)
	RET

// func addE4M3Q1x64TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE4M3Q1x64TF16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X64(E4M3x16, WTENSOR)
	RET

// func addE4M3Q1x16F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE4M3Q1x16F16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X16(E4M3x16, WROW)
	RET

// func addE4M3Q1x16TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE4M3Q1x16TF16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X16(E4M3x16, WTENSOR)
	RET

// func addE5M2Q1x64F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE5M2Q1x64F16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X64(E5M2x16, WROW)
	RET

// func addE5M2Q1x64TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE5M2Q1x64TF16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X64(E5M2x16, WTENSOR)
	RET

// func addE5M2Q1x16F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE5M2Q1x16F16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X16(E5M2x16, WROW)
	RET

// func addE5M2Q1x16TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE5M2Q1x16TF16C(SB), NOSPLIT, $0-52
	Q1ARGS
	ADD_Q1X16(E5M2x16, WTENSOR)
	RET

// E4M3ROW16 and E5M2ROW16 are the row loaders of ADDQ4 (addq4_amd64.h), after
// FP8_CONSTS.
#define E4M3ROW16 E4M3x16((R8), X8, Y8, X9, Y9)
#define E5M2ROW16 E5M2x16((R8), X8, Y8, X9, Y9)

// func addE4M3Q4F16C(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addE4M3Q4F16C(SB), NOSPLIT, $0-56
	Q4ARGS
	FP8_CONSTS
	ADDQ4(E4M3ROW16)
	RET

// func addE5M2Q4F16C(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addE5M2Q4F16C(SB), NOSPLIT, $0-56
	Q4ARGS
	FP8_CONSTS
	ADDQ4(E5M2ROW16)
	RET

// func foldRowScales(ws, w unsafe.Pointer, wld uintptr, src unsafe.Pointer, stride uintptr, m, nq int, mul float32)
// ws[j·m + i] = w[j·wld/4 + i]·(s_i·mul) for i < m, j < nq, s_i the f16 at
// src + i·stride (the Int8 rows' scales folded into the weights; FP8 rows pass their
// multiplier); eight rows' scales widened at once, the last m mod 8 rows one at a
// time. It is the first to read the rows of a span, so it prefetches ahead
// (prefetch_amd64.h).
TEXT ·foldRowScales(SB), NOSPLIT, $0-60
	MOVQ         ws+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         wld+16(FP), R9
	MOVQ         src+24(FP), R8
	MOVQ         stride+32(FP), R12
	MOVQ         m+40(FP), R13
	MOVQ         nq+48(FP), R14
	VBROADCASTSS mul+56(FP), Y13
	MOVQ         R13, BX
	SHLQ         $2, BX // bytes of a query's row in ws

f8:
	CMPQ      R13, $8
	JB        f1
	VPXOR     X1, X1, X1
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $0, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $1, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $2, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $3, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $4, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $5, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $6, (R8), X1, X1
	ADDQ      R12, R8
	PREFETCHT0 PFDIST(R8)
	VPINSRW   $7, (R8), X1, X1
	ADDQ      R12, R8
	VCVTPH2PS X1, Y1
	VMULPS    Y13, Y1, Y1
	MOVQ      SI, R10
	MOVQ      DI, R11
	MOVQ      R14, CX

f8q:
	VMULPS  (R10), Y1, Y2
	VMOVUPS Y2, (R11)
	ADDQ    R9, R10
	ADDQ    BX, R11
	DECQ    CX
	JNZ     f8q
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, R13
	JMP     f8

f1:
	TESTQ     R13, R13
	JZ        fdone
	MOVWLZX   (R8), AX
	VMOVD     AX, X1
	VCVTPH2PS X1, X1
	VMULSS    X13, X1, X1
	ADDQ      R12, R8
	MOVQ      SI, R10
	MOVQ      DI, R11
	MOVQ      R14, CX

f1q:
	VMULSS (R10), X1, X2
	VMOVSS X2, (R11)
	ADDQ   R9, R10
	ADDQ   BX, R11
	DECQ   CX
	JNZ    f1q
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   R13
	JMP    f1

fdone:
	VZEROUPPER
	RET

// E4M3D16 widens the 16 E4M3 codes at m straight to float32, value·2⁻¹²⁰ (Z14: the
// dwords 0x87F00000): sign-extended to dwords and shifted left by 20, a code's
// exponent and mantissa land in the float32 exponent (bits 26..23: bias 127 = 7 + 120)
// and mantissa (bits 22..20), its sign in bit 31 and copies of it in bits 30..27,
// which Z14 clears. Exact for every code: the subnormals m·2⁻⁹ become the float32
// subnormals m·2⁻¹²⁹, the NaN codes ±480·2⁻¹²⁰ as in E4M3x16. One instruction fewer
// than E4M3Z16 per 16 codes, and no VCVTPH2PS.
#define E4M3D16(m, y, z) \
	VPMOVSXBD m, z; \
	VPSLLD    $20, z, z; \
	VPANDD    Z14, z, z

// D16_CONSTS sets E4M3D16's Z14. It uses AX.
#define D16_CONSTS \
	MOVL         $0x87F00000, AX; \
	VPBROADCASTD AX, Z14

// dotE4M3R4ZD is dotE4M3R4Z with E4M3D16's widening, against the query times 2¹¹²
// (contract in rows_fp8_amd64.go).
// func dotE4M3R4ZD(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)
TEXT ·dotE4M3R4ZD(SB), NOSPLIT, $0-84
	R4ARGS
	DOT_R4C(D16_CONSTS, R4ZZERO, R4ZFP8(E4M3D16), R4ZFOLD)
	RET
