//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"
#include "q4k_amd64.h"

// Q4_K products in AVX2 + FMA + F16C assembly (the reference is dotQ4KScalar). A
// super-block of 256 values is 144 bytes: binary16 d and dmin, 12 bytes of packed
// 6-bit sub-block scales sc and minimums m, then 128 bytes of 4-bit codes (bytes
// 32g..32g+31 hold sub-block 2g in their low nibbles, 2g+1 in their high ones).
// Activation block b lines up with sub-block b mod 8, so per super-block
//
//	Σ_j xd_j·(d·sc_j·Σ code·xq − dmin·m_j·xsum_j),
//
// the integer dots by VPMADDUBSW (unsigned codes ≤ 15 times int8: a pair sum is at
// most 3810, no saturation) and VPMADDWD with ones, folded by VPHADDD into one
// vector whose lane j is sub-block j's dot, then scaled all 8 lanes at once.

// Q4KSB adds to Y0 the super-block at SI times the activations at DI (codes), R8
// (scales) and R9 (code sums); Y14 holds nibble masks, Y15 int16 ones. Y1..Y10, AX,
// BX, DX and R10..R12 are scratch.
#define Q4KSB \
	Q4KCODES(16) \
	Q4KDOTS(0(DI), 32(DI), 64(DI), 96(DI), Y9) \
	Q4KCODES(80) \
	Q4KDOTS(128(DI), 160(DI), 192(DI), 224(DI), Y10) \
	Q4KFOLD(Y9, Y10, Y1, Y2) \
	Q4KSCALES \
	Q4KACC(Y1, (R8), (R9), Y0)

// func q4kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)
// out[r] = the dot of the Q4_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·q4kDotRows(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x0f, X14, Y14)

	Q4KROWS(Q4KSB, 144)

// Q4KSB2 is Q4KSB for two tokens: token 0's sums into Y0 (activations at DI, R8, R9),
// token 1's into Y13 (at DI+8·R13, R8+R13, R9+R13), each in Q4KSB's order and rounding,
// so that each token's sum is q4kDotRows's bit for bit. The codes are unpacked, and the
// scales and minimums decoded, once for both. Y1..Y12 are scratch.
#define Q4KSB2 \
	Q4KCODES(16) \
	Q4KDOTS(0(DI), 32(DI), 64(DI), 96(DI), Y9) \
	Q4KDOTS(0(DI)(R13*8), 32(DI)(R13*8), 64(DI)(R13*8), 96(DI)(R13*8), Y10) \
	Q4KCODES(80) \
	Q4KDOTS(128(DI), 160(DI), 192(DI), 224(DI), Y11) \
	Q4KDOTS(128(DI)(R13*8), 160(DI)(R13*8), 192(DI)(R13*8), 224(DI)(R13*8), Y12) \
	Q4KFOLD(Y9, Y11, Y1, Y2) \
	Q4KFOLD(Y10, Y12, Y9, Y2) \
	Q4KSCALES \
	Q4KACC(Y1, (R8), (R9), Y0) \
	Q4KACC(Y9, (R8)(R13*1), (R9)(R13*1), Y13)

// func q4kDot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, xsum *int32, units int)
// q4kDotRows for two tokens over rows stored one after the other (rowBytes =
// units·144): token 0's activations at xq, xd, xsum, token 1's right after them
// (xq + 256·units, xd + 8·units, xsum + 8·units); token 0's dot of row r to out[r],
// token 1's to out[ldo+r] (ldo in values).
TEXT ·q4kDot2Rows(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R15
	MOVQ w+16(FP), SI
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x0f, X14, Y14)

row2:
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   xsum+48(FP), R9
	MOVQ   units+56(FP), CX
	MOVQ   CX, R13
	SHLQ   $5, R13 // token 1's xd and xsum offset: 8 values of 4 bytes per super-block
	VXORPS Y0, Y0, Y0
	VXORPS Y13, Y13, Y13

sb2:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	Q4KSB2
	ADDQ       $144, SI
	ADDQ       $256, DI
	ADDQ       $32, R8
	ADDQ       $32, R9
	DECQ       CX
	JNZ        sb2

	HSUM0
	VMOVSS       X0, (R15)
	HSUM(Y13, X13)
	MOVQ         ldo+8(FP), AX
	VMOVSS       X13, (R15)(AX*4)
	ADDQ         $4, R15
	DECQ         R14
	JNZ          row2
	VZEROUPPER
	RET
