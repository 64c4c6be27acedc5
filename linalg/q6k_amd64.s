//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"
#include "q6k_amd64.h"

// Q6_K products in AVX2 + FMA + F16C assembly (the reference is dotQ6KScalar). A
// super-block of 256 values is 210 bytes: 128 bytes of low 4 bits (ql), 64 of high 2
// bits (qh), 16 int8 scales, binary16 d; value = d·sc·(code − 32), a scale per 16
// values. Per half super-block (128 values, activation blocks 4h..4h+3) the 32-value
// blocks' 6-bit codes are assembled from ql and qh with masks and 16-bit shifts (bits
// that cross into a neighbouring byte are masked off); each block's integer dot is
// VPMADDUBSW(code, x) − VPMADDUBSW(32, x) (|code·x| ≤ 63·127·2: no saturation), pairs
// summed by VPMADDWD (lanes 0-3: its first 16 values, 4-7: its last 16), converted and
// scaled per lane by d·sc (picked by VPERMPS from the super-block's scales, widened
// once) and the block's activation scale.

// Lane picks of the 8 scales of a half for its blocks k = 0..3: 2k for lanes 0-3,
// 2k+1 for lanes 4-7.
DATA q6kPick<>+0(SB)/8, $0x0000000000000000
DATA q6kPick<>+8(SB)/8, $0x0000000000000000
DATA q6kPick<>+16(SB)/8, $0x0000000100000001
DATA q6kPick<>+24(SB)/8, $0x0000000100000001
DATA q6kPick<>+32(SB)/8, $0x0000000200000002
DATA q6kPick<>+40(SB)/8, $0x0000000200000002
DATA q6kPick<>+48(SB)/8, $0x0000000300000003
DATA q6kPick<>+56(SB)/8, $0x0000000300000003
DATA q6kPick<>+64(SB)/8, $0x0000000400000004
DATA q6kPick<>+72(SB)/8, $0x0000000400000004
DATA q6kPick<>+80(SB)/8, $0x0000000500000005
DATA q6kPick<>+88(SB)/8, $0x0000000500000005
DATA q6kPick<>+96(SB)/8, $0x0000000600000006
DATA q6kPick<>+104(SB)/8, $0x0000000600000006
DATA q6kPick<>+112(SB)/8, $0x0000000700000007
DATA q6kPick<>+120(SB)/8, $0x0000000700000007
GLOBL q6kPick<>(SB), RODATA|NOPTR, $128

// Q6KPICK leaves in Y9 the scales for block k (0..3) of a half, picked from the 8 at
// scoff(SP) by q6kPick at pickoff = 32k.
#define Q6KPICK(pickoff, scoff) \
	VMOVDQU q6kPick<>+pickoff(SB), Y9 \
	VPERMPS scoff(SP), Y9, Y9

// Q6KTOK(c, x, xd, acc) adds to acc block c's (codes in c) dot with the activation
// codes at x, times the picked scales in Y9 and the activation scale at xd. Y12: bytes
// 32, Y15: int16 ones; Y5..Y7 scratch.
#define Q6KTOK(c, x, xd, acc) \
	VPMADDUBSW   x, c, Y5 \
	VPMADDUBSW   x, Y12, Y6 \
	VPSUBW       Y6, Y5, Y5 \
	VPMADDWD     Y15, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y9, Y5, Y5 \
	VBROADCASTSS xd, Y7 \
	VFMADD231PS  Y7, Y5, acc

// Q6KBLK adds to Y0 block c's dot with the activations at xoff(DI) and xdoff(R8), its
// scales picked from the 8 at scoff(SP).
#define Q6KBLK(c, xoff, pickoff, xdoff, scoff) \
	Q6KPICK(pickoff, scoff) \
	Q6KTOK(c, xoff(DI), xdoff(R8), Y0)

// Q6KBLK2 is Q6KBLK for two tokens sharing block c's codes and picked scales: token
// 0's activations at xoff(DI) and xdoff(R8) into Y0, token 1's at xoff(DI)(R13*8) and
// xdoff(R8)(R13*1) into Y8.
#define Q6KBLK2(c, xoff, pickoff, xdoff, scoff) \
	Q6KPICK(pickoff, scoff) \
	Q6KTOK(c, xoff(DI), xdoff(R8), Y0) \
	Q6KTOK(c, xoff(DI)(R13*8), xdoff(R8)(R13*1), Y8)

// Q6KHALF adds half h of the super-block at SI (ql at lo(SI), qh at hi(SI)) against
// the activation blocks at xoff(DI) and xdoff(R8), scales at scoff(SP), block by block
// with BLK (Q6KBLK, or Q6KBLK2 for two tokens).
#define Q6KHALF(BLK, lo, hi, xoff, xdoff, scoff) \
	Q6KLOAD(lo, hi) \
	Q6KCODE0 \
	BLK(Y4, xoff, 0, xdoff, scoff) \
	Q6KCODE1 \
	BLK(Y4, (xoff+32), 32, (xdoff+4), scoff) \
	Q6KCODE2 \
	BLK(Y4, (xoff+64), 64, (xdoff+8), scoff) \
	Q6KCODE3 \
	BLK(Y4, (xoff+96), 96, (xdoff+12), scoff)

// Q6KSCALES writes the super-block's 16 scales times d, as float32, to sclo-64(SP)
// and schi-32(SP), after prefetching 4 KiB ahead of SI. Y5, Y7 scratch.
#define Q6KSCALES \
	PREFETCHT0   4096(SI) \
	PREFETCHT0   4160(SI) \
	PREFETCHT0   4224(SI) \
	PREFETCHT0   4288(SI) \
	VPBROADCASTW 208(SI), X7 \
	VCVTPH2PS    X7, Y7 \
	VPMOVSXBD    192(SI), Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y7, Y5, Y5 \
	VMOVUPS      Y5, sclo-64(SP) \
	VPMOVSXBD    200(SI), Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y7, Y5, Y5 \
	VMOVUPS      Y5, schi-32(SP)

// func q6kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the Q6_K row of units super-blocks at w+r·rowBytes with the
// activations (codes xq, scales xd per 32 values), for r < rows (rows, units ≥ 1): the
// rows one after the other in memory order, prefetched 4 KiB ahead.
TEXT ·q6kDotRows(SB), NOSPLIT, $64-56
	MOVQ         out+0(FP), R15
	MOVQ         w+8(FP), R13
	MOVQ         rows+24(FP), R14
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x30, X13, Y13)
	BYTES32(0x20, X12, Y12)

row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

sb:
	Q6KSCALES
	Q6KHALF(Q6KBLK, 0, 128, 0, 0, sclo-64)
	Q6KHALF(Q6KBLK, 64, 160, 128, 16, schi-32)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R8
	DECQ CX
	JNZ  sb

	HSUM0
	VMOVSS       X0, (R15)
	ADDQ         $4, R15
	ADDQ         rowBytes+16(FP), R13
	DECQ         R14
	JNZ          row
	VZEROUPPER
	RET

// func q6kDot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, units int)
// q6kDotRows for two tokens over rows stored one after the other (rowBytes =
// units·210), each token's sum bit for bit q6kDotRows's: token 0's activations at xq
// and xd, token 1's right after them (xq + 256·units, xd + 8·units); token 0's dot of
// row r to out[r], token 1's to out[ldo+r] (ldo in values). The codes are assembled and
// the scales picked once for both.
TEXT ·q6kDot2Rows(SB), NOSPLIT, $64-56
	MOVQ out+0(FP), R15
	MOVQ w+16(FP), SI
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x30, X13, Y13)
	BYTES32(0x20, X12, Y12)

row2:
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	MOVQ   CX, R13
	SHLQ   $5, R13 // token 1's xd offset: 8 values of 4 bytes per super-block
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8

sb2:
	Q6KSCALES
	Q6KHALF(Q6KBLK2, 0, 128, 0, 0, sclo-64)
	Q6KHALF(Q6KBLK2, 64, 160, 128, 16, schi-32)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R8
	DECQ CX
	JNZ  sb2

	HSUM0
	VMOVSS       X0, (R15)
	HSUM(Y8, X8)
	MOVQ         ldo+8(FP), AX
	VMOVSS       X8, (R15)(AX*4)
	ADDQ         $4, R15
	DECQ         R14
	JNZ          row2
	VZEROUPPER
	RET
