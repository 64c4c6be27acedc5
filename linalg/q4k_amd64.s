//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"

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

// Q4KFOUR(qoff, xoff, dst) leaves in dst the partial dots of the four sub-blocks
// whose codes are the 64 bytes at qoff(SI), against the activation codes at xoff(DI):
// lanes [0 1 2 3 | 0 1 2 3], each half the sums of its half of the 32 values. Y14:
// nibble masks, Y15: int16 ones; Y1..Y4 scratch.
#define Q4KFOUR(qoff, xoff, dst) \
	VMOVDQU    qoff(SI), Y1 \
	VPSRLW     $4, Y1, Y2 \
	VPAND      Y14, Y1, Y1 \
	VPAND      Y14, Y2, Y2 \
	VPMADDUBSW xoff(DI), Y1, Y1 \
	VPMADDUBSW (xoff+32)(DI), Y2, Y2 \
	VMOVDQU    (qoff+32)(SI), Y3 \
	VPSRLW     $4, Y3, Y4 \
	VPAND      Y14, Y3, Y3 \
	VPAND      Y14, Y4, Y4 \
	VPMADDUBSW (xoff+64)(DI), Y3, Y3 \
	VPMADDUBSW (xoff+96)(DI), Y4, Y4 \
	VPMADDWD   Y15, Y1, Y1 \
	VPMADDWD   Y15, Y2, Y2 \
	VPMADDWD   Y15, Y3, Y3 \
	VPMADDWD   Y15, Y4, Y4 \
	VPHADDD    Y2, Y1, Y1 \
	VPHADDD    Y4, Y3, Y3 \
	VPHADDD    Y3, Y1, dst

// Q4KSB adds to Y0 the super-block at SI times the activations at DI (codes), R8
// (scales) and R9 (code sums); Y14 holds nibble masks, Y15 int16 ones. Y1..Y8,
// AX, BX, DX and R10..R12 are scratch. Lane j of Y1 gets sub-block j's dot (low
// halves plus high halves of the folds). The scales and minimums come from the 12
// packed bytes (u0, u1, u2) as sc = u0&0x3f.. | (u2&0x0f.. | (u0>>6&0x03..)<<4)<<32 and
// m = u1&0x3f.. | (u2>>4&0x0f.. | (u1>>6&0x03..)<<4)<<32, one byte each; then
// Y0 += dots·sc·d·xd − m·dmin·xd·xsum.
#define Q4KSB \
	Q4KFOUR(16, 0, Y5) \
	Q4KFOUR(80, 128, Y6) \
	VPERM2I128   $0x20, Y6, Y5, Y1 \
	VPERM2I128   $0x31, Y6, Y5, Y2 \
	VPADDD       Y2, Y1, Y1 \
	VCVTDQ2PS    Y1, Y1 \
	MOVL         4(SI), AX \
	MOVL         8(SI), BX \
	MOVL         12(SI), DX \
	MOVL         AX, R10 \
	ANDL         $0x3f3f3f3f, R10 \
	MOVL         DX, R11 \
	ANDL         $0x0f0f0f0f, R11 \
	SHRL         $6, AX \
	ANDL         $0x03030303, AX \
	SHLL         $4, AX \
	ORL          AX, R11 \
	MOVL         BX, R12 \
	ANDL         $0x3f3f3f3f, R12 \
	SHRL         $4, DX \
	ANDL         $0x0f0f0f0f, DX \
	SHRL         $6, BX \
	ANDL         $0x03030303, BX \
	SHLL         $4, BX \
	ORL          BX, DX \
	VMOVD        R10, X2 \
	VPINSRD      $1, R11, X2, X2 \
	VPMOVZXBD    X2, Y2 \
	VCVTDQ2PS    Y2, Y2 \
	VMOVD        R12, X3 \
	VPINSRD      $1, DX, X3, X3 \
	VPMOVZXBD    X3, Y3 \
	VCVTDQ2PS    Y3, Y3 \
	VMOVD        (SI), X4 \
	VCVTPH2PS    X4, X4 \
	VBROADCASTSS X4, Y5 \
	VMOVSHDUP    X4, X4 \
	VBROADCASTSS X4, Y6 \
	VMOVUPS      (R8), Y7 \
	VCVTDQ2PS    (R9), Y8 \
	VMULPS       Y7, Y8, Y8 \
	VMULPS       Y5, Y2, Y2 \
	VMULPS       Y7, Y2, Y2 \
	VFMADD231PS  Y2, Y1, Y0 \
	VMULPS       Y6, Y3, Y3 \
	VFNMADD231PS Y3, Y8, Y0

// func q4kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)
// out[r] = the dot of the Q4_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·q4kDotRows(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x0f, X14, Y14)

row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   xsum+48(FP), R9
	MOVQ   units+56(FP), CX
	VXORPS Y0, Y0, Y0

sb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	Q4KSB
	ADDQ       $144, SI
	ADDQ       $256, DI
	ADDQ       $32, R8
	ADDQ       $32, R9
	DECQ       CX
	JNZ        sb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    row
	VZEROUPPER
	RET
