//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"

// Q3_K and Q2_K products in AVX2 + FMA + F16C assembly (the references are
// dotQ3KScalar and dotQ2KScalar). Both have a scale per 16 values and 2-bit codes in
// two halves of 32 bytes (block j = 4h + k of a super-block: bits 2k, 2k+1 of the
// half's bytes). Per 32-value block the integer dot is VPMADDUBSW with the unsigned
// codes, pairs summed by VPMADDWD (lanes 0-3: the block's first 16 values, 4-7: its
// last 16), converted and scaled per lane by the scales picked by VPERMPS, as Q6_K's.
//
// Q3_K: the code is (2 low bits) − 4 unless the block's bit of hmask is set; the
// kernel multiplies code + 4 = low | hbit << 2 (0..7) and subtracts VPMADDUBSW(4, x).
// Q2_K: value = d·sc·code − dmin·m; the minimums' part multiplies the pair sums of
// the activations (VPMADDUBSW(1, x)) by dmin·m.

// Lane picks of 8 scales for blocks k = 0..3: 2k for lanes 0-3, 2k+1 for lanes 4-7.
DATA k3Pick<>+0(SB)/8, $0x0000000000000000
DATA k3Pick<>+8(SB)/8, $0x0000000000000000
DATA k3Pick<>+16(SB)/8, $0x0000000100000001
DATA k3Pick<>+24(SB)/8, $0x0000000100000001
DATA k3Pick<>+32(SB)/8, $0x0000000200000002
DATA k3Pick<>+40(SB)/8, $0x0000000200000002
DATA k3Pick<>+48(SB)/8, $0x0000000300000003
DATA k3Pick<>+56(SB)/8, $0x0000000300000003
DATA k3Pick<>+64(SB)/8, $0x0000000400000004
DATA k3Pick<>+72(SB)/8, $0x0000000400000004
DATA k3Pick<>+80(SB)/8, $0x0000000500000005
DATA k3Pick<>+88(SB)/8, $0x0000000500000005
DATA k3Pick<>+96(SB)/8, $0x0000000600000006
DATA k3Pick<>+104(SB)/8, $0x0000000600000006
DATA k3Pick<>+112(SB)/8, $0x0000000700000007
DATA k3Pick<>+120(SB)/8, $0x0000000700000007
GLOBL k3Pick<>(SB), RODATA|NOPTR, $128

// Q3KSCALES writes the super-block's 16 scales times d, as float32, to sclo-64(SP)
// (0..7) and schi-32(SP) (8..15): with u0, u1, u2 the scale bytes 0-3, 4-7, 8-11,
// scales 0-3 = u0&0x0f.. | (u2&0x03..)<<4, 4-7 = u1&0x0f.. | (u2>>2&0x03..)<<4,
// 8-11 = u0>>4&0x0f.. | (u2>>4&0x03..)<<4, 12-15 = u1>>4&0x0f.. | (u2>>6&0x03..)<<4,
// each minus 32. AX, BX, DX, R10, R11, Y5..Y7 are scratch; Y11: 32 per dword.
#define Q3KSCALES \
	MOVL         96(SI), AX \
	MOVL         100(SI), BX \
	MOVL         104(SI), DX \
	MOVL         AX, R10 \
	ANDL         $0x0f0f0f0f, R10 \
	MOVL         DX, R11 \
	ANDL         $0x03030303, R11 \
	SHLL         $4, R11 \
	ORL          R11, R10 \
	MOVL         BX, R11 \
	ANDL         $0x0f0f0f0f, R11 \
	SHLQ         $32, R11 \
	ORQ          R11, R10 \
	MOVL         DX, R11 \
	SHRL         $2, R11 \
	ANDL         $0x03030303, R11 \
	SHLQ         $36, R11 \
	ORQ          R11, R10 \
	VPBROADCASTW 108(SI), X7 \
	VCVTPH2PS    X7, Y7 \
	VMOVQ        R10, X5 \
	VPMOVZXBD    X5, Y5 \
	VPSUBD       Y11, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y7, Y5, Y5 \
	VMOVUPS      Y5, sclo-64(SP) \
	SHRL         $4, AX \
	ANDL         $0x0f0f0f0f, AX \
	MOVL         DX, R11 \
	SHRL         $4, R11 \
	ANDL         $0x03030303, R11 \
	SHLL         $4, R11 \
	ORL          R11, AX \
	SHRL         $4, BX \
	ANDL         $0x0f0f0f0f, BX \
	SHRL         $6, DX \
	ANDL         $0x03030303, DX \
	SHLL         $4, DX \
	ORL          DX, BX \
	SHLQ         $32, BX \
	ORQ          BX, AX \
	VMOVQ        AX, X5 \
	VPMOVZXBD    X5, Y5 \
	VPSUBD       Y11, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y7, Y5, Y5 \
	VMOVUPS      Y5, schi-32(SP)

// Q3KCODES(lo2, hb) leaves in Y4 the codes + 4 of block j = 4h + k: its low bits
// from the half's bytes in Y1 shifted right by 2k (lo2: the shift instruction and
// mask), bit j of hmask (Y3) moved to bit 2 (hb: the shift). Y14: bytes 0x03, Y13:
// bytes 0x04; Y6 scratch.
#define Q3KLOW0 VPAND Y14, Y1, Y4
#define Q3KLOW(s) \
	VPSRLW $s, Y1, Y4 \
	VPAND  Y14, Y4, Y4
#define Q3KHIGHL(s) \
	VPSLLW $s, Y3, Y6 \
	VPAND  Y13, Y6, Y6 \
	VPOR   Y6, Y4, Y4
#define Q3KHIGH2 \
	VPAND  Y13, Y3, Y6 \
	VPOR   Y6, Y4, Y4
#define Q3KHIGHR(s) \
	VPSRLW $s, Y3, Y6 \
	VPAND  Y13, Y6, Y6 \
	VPOR   Y6, Y4, Y4

// Q3KBLK(xoff, pickoff, xdoff, scoff) adds to Y0 the dot of the block whose codes + 4
// are in Y4 with the activations at xoff(DI) and xdoff(R8), its scales picked from the
// 8 at scoff(SP). Y12: bytes 4, Y15: int16 ones; Y5..Y9 scratch.
#define Q3KBLK(xoff, pickoff, xdoff, scoff) \
	VMOVDQU      k3Pick<>+pickoff(SB), Y9 \
	VPERMPS      scoff(SP), Y9, Y9 \
	VPMADDUBSW   xoff(DI), Y4, Y5 \
	VPMADDUBSW   xoff(DI), Y12, Y6 \
	VPSUBW       Y6, Y5, Y5 \
	VPMADDWD     Y15, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y9, Y5, Y5 \
	VBROADCASTSS xdoff(R8), Y7 \
	VFMADD231PS  Y7, Y5, Y0

// func q3kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the Q3_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·q3kDotRows(SB), NOSPLIT, $64-56
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x03, X14, Y14)
	BYTES32(0x04, X13, Y13)
	BYTES32(0x04, X12, Y12)
	MOVL         $32, AX
	VMOVD        AX, X11
	VPBROADCASTD X11, Y11

q3row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

q3sb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	Q3KSCALES
	VMOVDQU    (SI), Y3
	VMOVDQU    32(SI), Y1
	Q3KLOW0
	Q3KHIGHL(2)
	Q3KBLK(0, 0, 0, sclo-64)
	Q3KLOW(2)
	Q3KHIGHL(1)
	Q3KBLK(32, 32, 4, sclo-64)
	Q3KLOW(4)
	Q3KHIGH2
	Q3KBLK(64, 64, 8, sclo-64)
	Q3KLOW(6)
	Q3KHIGHR(1)
	Q3KBLK(96, 96, 12, sclo-64)
	VMOVDQU    64(SI), Y1
	Q3KLOW0
	Q3KHIGHR(2)
	Q3KBLK(128, 0, 16, schi-32)
	Q3KLOW(2)
	Q3KHIGHR(3)
	Q3KBLK(160, 32, 20, schi-32)
	Q3KLOW(4)
	Q3KHIGHR(4)
	Q3KBLK(192, 64, 24, schi-32)
	Q3KLOW(6)
	Q3KHIGHR(5)
	Q3KBLK(224, 96, 28, schi-32)
	ADDQ       $110, SI
	ADDQ       $256, DI
	ADDQ       $32, R8
	DECQ       CX
	JNZ        q3sb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    q3row
	VZEROUPPER
	RET

// Dword picks putting a super-block's 8 scales of blocks' halves in fold order:
// lanes 0-3 the first halves of blocks 0..3 (scales 0, 2, 4, 6), lanes 4-7 their
// second halves (1, 3, 5, 7).
DATA k2Fold<>+0(SB)/4, $0
DATA k2Fold<>+4(SB)/4, $2
DATA k2Fold<>+8(SB)/4, $4
DATA k2Fold<>+12(SB)/4, $6
DATA k2Fold<>+16(SB)/4, $1
DATA k2Fold<>+20(SB)/4, $3
DATA k2Fold<>+24(SB)/4, $5
DATA k2Fold<>+28(SB)/4, $7
GLOBL k2Fold<>(SB), RODATA|NOPTR, $32

// Q2KDOT(xoff, dst, sdst) leaves in dst the pair sums (VPMADDWD lanes 0-3: the block's
// first 16 values, 4-7: its last 16) of the codes in Y4 times the activations at
// xoff(DI), and in sdst those of the activations alone. Y12: bytes 1, Y15: int16 ones.
#define Q2KDOT(xoff, dst, sdst) \
	VMOVDQU    xoff(DI), Y3 \
	VPMADDUBSW Y3, Y4, dst \
	VPMADDWD   Y15, dst, dst \
	VPMADDUBSW Y3, Y12, sdst \
	VPMADDWD   Y15, sdst, sdst

// Q2KHALF(qoff, xoff, dsum, xsum) folds the four blocks of the half whose codes are at
// qoff(SI) (activations from xoff(DI)) into dsum (code dots) and xsum (activation
// sums) as float32 lanes [blocks 0..3, first halves | blocks 0..3, second halves].
// Y1, Y4..Y10 are scratch; Y14: bytes 3.
#define Q2KHALF(qoff, x0, x1, x2, x3, dsum, xsum) \
	VMOVDQU   qoff(SI), Y1 \
	VPAND     Y14, Y1, Y4 \
	Q2KDOT(x0, Y5, Y6) \
	VPSRLW    $2, Y1, Y4 \
	VPAND     Y14, Y4, Y4 \
	Q2KDOT(x1, Y7, Y8) \
	VPHADDD   Y7, Y5, Y5 \
	VPHADDD   Y8, Y6, Y6 \
	VPSRLW    $4, Y1, Y4 \
	VPAND     Y14, Y4, Y4 \
	Q2KDOT(x2, Y7, Y8) \
	VPSRLW    $6, Y1, Y4 \
	VPAND     Y14, Y4, Y4 \
	Q2KDOT(x3, Y9, Y10) \
	VPHADDD   Y9, Y7, Y7 \
	VPHADDD   Y10, Y8, Y8 \
	VPHADDD   Y7, Y5, dsum \
	VPHADDD   Y8, Y6, xsum \
	VCVTDQ2PS dsum, dsum \
	VCVTDQ2PS xsum, xsum

// Q2KSCALES(soff, sc, m) leaves in sc and m the scales times d (Y13) and minimums
// times dmin (Y11) of the 8 blocks' halves whose scale bytes are at soff(SI), in fold
// order. Y2: the fold picks; Y3 scratch.
#define Q2KSCALES(soff, sc, m) \
	VPMOVZXBD soff(SI), sc \
	VPERMD    sc, Y2, sc \
	VPSRLD    $4, sc, m \
	VPSLLD    $28, sc, sc \
	VPSRLD    $28, sc, sc \
	VCVTDQ2PS sc, sc \
	VMULPS    Y13, sc, sc \
	VCVTDQ2PS m, m \
	VMULPS    Y11, m, m

// Q2KACC(dsum, xsum, sc, m, xd) adds to Y0 one half's (dsum·sc − xsum·m)·xd, the
// activation scales broadcast from xd to both 128-bit lanes; Y3 scratch.
#define Q2KACC(dsum, xsum, sc, m, xd) \
	VBROADCASTF128 xd, Y3 \
	VMULPS         sc, dsum, dsum \
	VFNMADD231PS   m, xsum, dsum \
	VFMADD231PS    Y3, dsum, Y0

// func q2kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the Q2_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go). Per super-block the eight blocks' dots are
// folded (VPHADDD) into two vectors of their 16-value halves and scaled at once.
TEXT ·q2kDotRows(SB), NOSPLIT, $0-56
	MOVQ    out+0(FP), R15
	MOVQ    w+8(FP), R13
	MOVQ    rows+24(FP), R14
	ONES16
	BYTES32(0x03, X14, Y14)
	BYTES32(0x01, X12, Y12)
	VMOVDQU k2Fold<>(SB), Y2

q2row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

q2sb:
	PREFETCHT0   4096(SI)
	PREFETCHT0   4160(SI)
	VPBROADCASTW 80(SI), X13
	VCVTPH2PS    X13, Y13
	VPBROADCASTW 82(SI), X11
	VCVTPH2PS    X11, Y11
	Q2KHALF(16, 0, 32, 64, 96, Y5, Y6)
	Q2KSCALES(0, Y7, Y8)
	Q2KACC(Y5, Y6, Y7, Y8, (R8))
	Q2KHALF(48, 128, 160, 192, 224, Y5, Y6)
	Q2KSCALES(8, Y7, Y8)
	Q2KACC(Y5, Y6, Y7, Y8, 16(R8))
	ADDQ         $84, SI
	ADDQ         $256, DI
	ADDQ         $32, R8
	DECQ         CX
	JNZ          q2sb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    q2row
	VZEROUPPER
	RET
