//go:build amd64

#include "textflag.h"
#include "prefetch_amd64.h"
#include "r4frame_amd64.h"
#include "rows16_amd64.h"
#include "addq4_amd64.h"
#include "addq4z_amd64.h"
#include "addq1_amd64.h"

// F16 and Int8 row kernels with VCVTPH2PS (F16C), which simd/archsimd does not
// expose: one instruction widens 8 binary16 values exactly, where the portable
// conversion takes about ten. Declarations and contracts in rows_f16c_amd64.go.

// INT8ROW16 widens the 16 int8 codes at R8 from memory.
#define INT8ROW16 \
	VPMOVSXBD (R8), Y8; \
	VPMOVSXBD 8(R8), Y9; \
	VCVTDQ2PS Y8, Y8; \
	VCVTDQ2PS Y9, Y9

// BF16ROW16 widens the 16 bfloat16 values at R8 from memory (BF16W16).
#define BF16ROW16 \
	BF16W16((R8), Y8); \
	BF16W16(16(R8), Y9)

// F32ROW16 loads the 16 float32s at R8.
#define F32ROW16 \
	VMOVUPS (R8), Y8; \
	VMOVUPS 32(R8), Y9

// F16ROW16 widens the 16 binary16 values at R8 from memory (F16W16).
#define F16ROW16 \
	F16W16((R8), Y8); \
	F16W16(16(R8), Y9)

// func dotF16R4(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)
// Per group k < ng of four rows (at p = src + k·gstep, p + o1, p + o2, p + o3):
// out[4k+r] = q · row r, d values (a multiple of 16). Two accumulators per row.
TEXT ·dotF16R4(SB), NOSPLIT, $0-72
	R4FRAME
	DOTR4_16(F16W16, PREFETCH4X2)

// func dotF16R4Near(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)
// dotF16R4 asking for no lines ahead.
TEXT ·dotF16R4Near(SB), NOSPLIT, $0-72
	R4FRAME
	DOTR4_16(F16W16, NOPF4)

// func dotF16Q4(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)
// Per row i < n (at src + i·stride) and query r < 4 (at q + r·qs bytes):
// out[i + r·ldb/4] = q_r · row i, d values (a multiple of 16). Two accumulators per
// query.
TEXT ·dotF16Q4(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldb+8(FP), BX
	MOVQ q+16(FP), SI
	MOVQ qs+24(FP), CX
	MOVQ src+32(FP), R8
	MOVQ stride+40(FP), R12
	MOVQ n+48(FP), R13
	MOVQ d+56(FP), R14
	DOTQ4_16(F16W16)

// func addF16Q1x64(acc, w, src unsafe.Pointer, stride uintptr, n int)
// acc[c] += Σ_{i<n} w[i]·row_i[c] for c < 64, row i's binary16 values at
// src + i·stride: the 64 sums stay in eight registers while the rows stream by.
TEXT ·addF16Q1x64(SB), NOSPLIT, $0-40
	ADDQ1ARGS
	ADDQ1X64_16(F16W16, PFNEXTSET, PFROW2)

// func addF16Q1x64Near(acc, w, src unsafe.Pointer, stride uintptr, n int)
// addF16Q1x64 asking for no rows ahead.
TEXT ·addF16Q1x64Near(SB), NOSPLIT, $0-40
	ADDQ1ARGS
	ADDQ1X64_16(F16W16, NOPF1, NOPF1)

// func addF16Q1x16(acc, w, src unsafe.Pointer, stride uintptr, n int)
// acc[c] += Σ_{i<n} w[i]·row_i[c] for c < 16, rows as addF16Q1x64's; each
// column's sum one chain of FMAs in row order (ADDQ1X16_16).
TEXT ·addF16Q1x16(SB), NOSPLIT, $0-40
	ADDQ1ARGS
	ADDQ1X16_16(F16W16)

// The Int8 add kernels: codes widened by VPMOVSXBD straight from memory (8 per
// instruction) and converted by VCVTDQ2PS; the rows' f16 scales widened by
// VCVTPH2PS. Int8 scores are integer (int8_i16_amd64.s).

// func addInt8Q1x64F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)
// acc[c] += Σ_{i<n} (w[i]·s_i)·code_i[c] for c < 64, row i's codes at src + i·stride
// and its f16 scale s_i at src + i·stride + so (so < 0); the rows asked for ahead as
// ADDQ1Z (addq1_amd64.h) does.
TEXT ·addInt8Q1x64F16C(SB), NOSPLIT, $0-48
	ADDQ1ARGS
	MOVQ    so+40(FP), R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	PFNEXTSET(R10)
	TESTQ   R13, R13
	JZ      kdone

kloop:
	PFROW2(R10)
	MOVWLZX      (R8)(R9*1), AX
	VMOVD        AX, X8
	VCVTPH2PS    X8, X8
	VMULSS       (SI), X8, X8
	VBROADCASTSS X8, Y8
	VPMOVSXBD    (R8), Y9
	VPMOVSXBD    8(R8), Y10
	VPMOVSXBD    16(R8), Y11
	VPMOVSXBD    24(R8), Y12
	VCVTDQ2PS    Y9, Y9
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VCVTDQ2PS    Y12, Y12
	VFMADD231PS  Y8, Y9, Y0
	VFMADD231PS  Y8, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y8, Y12, Y3
	VPMOVSXBD    32(R8), Y9
	VPMOVSXBD    40(R8), Y10
	VPMOVSXBD    48(R8), Y11
	VPMOVSXBD    56(R8), Y12
	VCVTDQ2PS    Y9, Y9
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VCVTDQ2PS    Y12, Y12
	VFMADD231PS  Y8, Y9, Y4
	VFMADD231PS  Y8, Y10, Y5
	VFMADD231PS  Y8, Y11, Y6
	VFMADD231PS  Y8, Y12, Y7
	ADDQ         $4, SI
	ADDQ         R12, R8
	DECQ         R13
	JNZ          kloop

kdone:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// func addInt8Q1x16F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)
// addInt8Q1x64F16C for 16 columns; even and odd rows in separate accumulators.
TEXT ·addInt8Q1x16F16C(SB), NOSPLIT, $0-48
	ADDQ1ARGS
	MOVQ    so+40(FP), R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	LEAQ    (R8)(R12*1), R10 // the odd row

mloop:
	CMPQ         R13, $2
	JB           mtail
	MOVWLZX      (R8)(R9*1), AX
	VMOVD        AX, X8
	VCVTPH2PS    X8, X8
	VMULSS       (SI), X8, X8
	VBROADCASTSS X8, Y8
	MOVWLZX      (R10)(R9*1), AX
	VMOVD        AX, X9
	VCVTPH2PS    X9, X9
	VMULSS       4(SI), X9, X9
	VBROADCASTSS X9, Y9
	VPMOVSXBD    (R8), Y10
	VPMOVSXBD    8(R8), Y11
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y8, Y11, Y1
	VPMOVSXBD    (R10), Y10
	VPMOVSXBD    8(R10), Y11
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VFMADD231PS  Y9, Y10, Y2
	VFMADD231PS  Y9, Y11, Y3
	ADDQ         $8, SI
	LEAQ         (R8)(R12*2), R8
	LEAQ         (R10)(R12*2), R10
	SUBQ         $2, R13
	JMP          mloop

mtail:
	TESTQ        R13, R13
	JZ           mdone
	MOVWLZX      (R8)(R9*1), AX
	VMOVD        AX, X8
	VCVTPH2PS    X8, X8
	VMULSS       (SI), X8, X8
	VBROADCASTSS X8, Y8
	VPMOVSXBD    (R8), Y10
	VPMOVSXBD    8(R8), Y11
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y8, Y11, Y1

mdone:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

// func addInt8Q4asm(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
// The four-query adds (ADDQ4) of int8, bfloat16, float32 and binary16 rows; their
// contracts are in rows_f16c_amd64.go.
TEXT ·addInt8Q4asm(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4(INT8ROW16)
	RET

// func addBF16Q4asm(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addBF16Q4asm(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4(BF16ROW16)
	RET

// func addF32Q4asm(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addF32Q4asm(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4(F32ROW16)
	RET

// func addF16Q4F16C(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addF16Q4F16C(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4(F16ROW16)
	RET

// func f32ToF16F16C(dst *byte, src *float32, n int)
TEXT ·f32ToF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   edone

eloop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       eloop

edone:
	VZEROUPPER
	RET

// INT8ROW64, F16ROW64 and BF16ROW64 load row i's 64 values at R8 as float32 into
// Z16..Z19 for ADDQ4Z, as INT8ROW16, F16ROW16 and BF16ROW16 do 16 into Y8, Y9.
#define INT8ROW64 \
	VPMOVSXBD (R8), Z16; \
	VPMOVSXBD 16(R8), Z17; \
	VPMOVSXBD 32(R8), Z18; \
	VPMOVSXBD 48(R8), Z19; \
	VCVTDQ2PS Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VCVTDQ2PS Z18, Z18; \
	VCVTDQ2PS Z19, Z19

#define F16ROW64 \
	VCVTPH2PS (R8), Z16; \
	VCVTPH2PS 32(R8), Z17; \
	VCVTPH2PS 64(R8), Z18; \
	VCVTPH2PS 96(R8), Z19

#define BF16ROW64 \
	VPMOVZXWD (R8), Z16; \
	VPMOVZXWD 32(R8), Z17; \
	VPMOVZXWD 64(R8), Z18; \
	VPMOVZXWD 96(R8), Z19; \
	VPSLLD    $16, Z16, Z16; \
	VPSLLD    $16, Z17, Z17; \
	VPSLLD    $16, Z18, Z18; \
	VPSLLD    $16, Z19, Z19

// func addInt8Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
// The four-query adds over 64 columns in ZMM registers (ADDQ4Z); their contracts
// are in rows_f16c_amd64.go.
TEXT ·addInt8Q4Z(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4Z(INT8ROW64)
	RET

// func addF16Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addF16Q4Z(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4Z(F16ROW64)
	RET

// func addBF16Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addBF16Q4Z(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4Z(BF16ROW64)
	RET

// W1INT8 is ADDQ1Z's weight step of Int8 rows: the weight times the row's f16
// scale at R8 + R9, as addInt8Q1x64F16C takes it.
#define W1INT8 \
	MOVWLZX      (R8)(R9*1), AX; \
	VMOVD        AX, X8; \
	VCVTPH2PS    X8, X8; \
	VMULSS       (SI), X8, X8; \
	VBROADCASTSS X8, Z20

// func addInt8Q1x64Z(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)
// addInt8Q1x64F16C in ZMM registers (ADDQ1Z): the same sums bit for bit.
TEXT ·addInt8Q1x64Z(SB), NOSPLIT, $0-48
	ADDQ1ARGS
	MOVQ so+40(FP), R9
	ADDQ1Z(W1INT8, INT8ROW64)
	RET

// func addInt8Q1x64ZNear(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)
// addInt8Q1x64Z asking for no rows ahead.
TEXT ·addInt8Q1x64ZNear(SB), NOSPLIT, $0-48
	ADDQ1ARGS
	MOVQ so+40(FP), R9
	ADDQ1ZLOOPPF(W1INT8, INT8ROW64, NOPF1, NOPF1)
	ADDQ1ZSTORE
	RET

// func dotF16R4Next(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr, next uintptr)
// dotF16R4 asking, instead of the lines PFDIST ahead, for the rows next bytes on
// (PFNEXTROWS).
TEXT ·dotF16R4Next(SB), NOSPLIT, $0-80
	R4FRAME
	DOTR4_16(F16W16, PFNEXTROWS)

// func addF16Q1x64Next(acc, w, src unsafe.Pointer, stride uintptr, n int, next uintptr)
// addF16Q1x64 asking, instead of the rows ahead, for the two lines next bytes on
// from each row's 64 values.
TEXT ·addF16Q1x64Next(SB), NOSPLIT, $0-48
	ADDQ1ARGS
	ADDQ1X64_16(F16W16, NEXTSET, PFROW2L2)

// func addInt8Q1x64ZNext(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, next uintptr)
// addInt8Q1x64Z asking, instead of the rows ahead, for the two lines next bytes on
// from each row's codes.
TEXT ·addInt8Q1x64ZNext(SB), NOSPLIT, $0-56
	ADDQ1ARGS
	MOVQ so+40(FP), R9
	ADDQ1ZLOOPPF(W1INT8, INT8ROW64, NEXTSET48, PFROW2L2)
	ADDQ1ZSTORE
	RET
