//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"
#include "q4k_amd64.h"

// Q5_K products in AVX2 + FMA + F16C assembly (the reference is dotQ5KScalar). A
// super-block is Q4_K's with 32 bytes qh of fifth bits inserted before the codes
// (d, dmin and the packed scales at the same offsets, qh at 16, the 4-bit codes at
// 48): bit j of qh[l] is bit 4 of the code of value 32j + l. Codes go up to 31, so
// VPMADDUBSW's pair sums stay within 2·31·128 = 7936 (no saturation); the rest is
// Q4_K's kernel.

// Q5KHIGH(j, reg) sets bit 4 of each byte of reg to bit j of the same byte of qh (Y13),
// by word shifts (bit 4 of either byte of a word comes from bit j of that byte, as
// j and 4 lie in one byte) and the mask Y12 (0x10 in every byte); Y11 is scratch.
#define Q5KHIGHL(s, reg) \
	VPSLLW $s, Y13, Y11 \
	VPAND  Y12, Y11, Y11 \
	VPOR   Y11, reg, reg

#define Q5KHIGHR(s, reg) \
	VPSRLW $s, Y13, Y11 \
	VPAND  Y12, Y11, Y11 \
	VPOR   Y11, reg, reg

// Q5KSB adds to Y0 the super-block at SI times the activations at DI (codes), R8
// (scales) and R9 (code sums); Y14 holds nibble masks, Y15 int16 ones, Y12 the fifth-
// bit mask. Y1..Y11, Y13, AX, BX, DX and R10..R12 are scratch.
#define Q5KSB \
	VMOVDQU 16(SI), Y13 \
	Q4KCODES(48) \
	Q5KHIGHL(4, Y1) \
	Q5KHIGHL(3, Y2) \
	Q5KHIGHL(2, Y3) \
	Q5KHIGHL(1, Y4) \
	Q4KDOTS(0(DI), 32(DI), 64(DI), 96(DI), Y9) \
	Q4KCODES(112) \
	VPAND   Y12, Y13, Y11 \
	VPOR    Y11, Y1, Y1 \
	Q5KHIGHR(1, Y2) \
	Q5KHIGHR(2, Y3) \
	Q5KHIGHR(3, Y4) \
	Q4KDOTS(128(DI), 160(DI), 192(DI), 224(DI), Y10) \
	Q4KFOLD(Y9, Y10, Y1, Y2) \
	Q4KSCALES \
	Q4KACC(Y1, (R8), (R9), Y0)

// func q5kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)
// out[r] = the dot of the Q5_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·q5kDotRows(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x10, X12, Y12)

	Q4KROWS(Q5KSB, 176)
