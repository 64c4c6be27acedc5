//go:build amd64

#include "textflag.h"

// Q5_0 products in AVX2 + FMA + F16C assembly (the reference is dotQ5Scalar). A block
// is 22 bytes: binary16 d, 4 bytes qh whose bit j is value j's fifth bit, then 16
// bytes whose low nibbles are values 0..15 and high nibbles values 16..31; value =
// d·(code − 16). Per block the nibbles are spread to 32 bytes in value order, the fifth
// bits added (qh broadcast, byte j picking qh's byte j/8 by VPSHUFB, tested against
// 1 << j mod 8), 16 subtracted (s in [−16, 15]), and the integer dot formed as for
// Q4_0 (VPMADDUBSW(|s|, x·sign(s)): a pair sum is at most 2·16·127). Even blocks add
// into Y0 and odd ones into Y5.

// Byte j of the 32 (a 128-bit lane each for values 0..15 and 16..31) picks byte j/8
// of the broadcast qh.
DATA q5Spread<>+0(SB)/8, $0x0000000000000000
DATA q5Spread<>+8(SB)/8, $0x0101010101010101
DATA q5Spread<>+16(SB)/8, $0x0202020202020202
DATA q5Spread<>+24(SB)/8, $0x0303030303030303
GLOBL q5Spread<>(SB), RODATA|NOPTR, $32

// Q5BLK accumulates the block at off(SI) times the activation codes at xoff(DI) and
// scale at xdoff(R8) into acc. Y9: bytes 0x10, Y10: bytes 1 << j mod 8, Y11: q5Spread,
// Y13: bytes 16, Y14: bytes 0x0f, Y15: int16 ones; Y1..Y4 scratch.
#define Q5BLK(off, xoff, xdoff, acc) \
	VMOVDQU      (off+6)(SI), X1 \
	VPSRLW       $4, X1, X2 \
	VINSERTI128  $1, X2, Y1, Y1 \
	VPAND        Y14, Y1, Y1 \
	VPBROADCASTD (off+2)(SI), Y2 \
	VPSHUFB      Y11, Y2, Y2 \
	VPAND        Y10, Y2, Y2 \
	VPCMPEQB     Y10, Y2, Y2 \
	VPAND        Y9, Y2, Y2 \
	VPOR         Y2, Y1, Y1 \
	VPSUBB       Y13, Y1, Y1 \
	VMOVDQU      xoff(DI), Y2 \
	VPSIGNB      Y1, Y2, Y2 \
	VPSIGNB      Y1, Y1, Y1 \
	VPMADDUBSW   Y2, Y1, Y1 \
	VPMADDWD     Y15, Y1, Y1 \
	VCVTDQ2PS    Y1, Y1 \
	VPBROADCASTW off(SI), X3 \
	VCVTPH2PS    X3, Y3 \
	VBROADCASTSS xdoff(R8), Y4 \
	VMULPS       Y4, Y3, Y3 \
	VFMADD231PS  Y3, Y1, acc

// func q5DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int)
// out[r] = the dot of the Q5_0 row of nb blocks at w+r·rowBytes with the activations
// (codes xq, scales xd per 32 values), for r < rows (rows, nb ≥ 1): the rows one after
// the other in memory order, prefetched 4 KiB ahead.
TEXT ·q5DotRows(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), R15
	MOVQ         w+8(FP), R13
	MOVQ         rows+24(FP), R14
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU      Y13, Y9
	MOVQ         $0x8040201008040201, AX
	VMOVQ        AX, X10
	VPBROADCASTQ X10, Y10
	VMOVDQU      q5Spread<>(SB), Y11

row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5

pair:
	CMPQ       CX, $2
	JB         tail
	PREFETCHT0 4096(SI)
	Q5BLK(0, 0, 0, Y0)
	Q5BLK(22, 32, 4, Y5)
	ADDQ       $44, SI
	ADDQ       $64, DI
	ADDQ       $8, R8
	SUBQ       $2, CX
	JMP        pair

tail:
	TESTQ CX, CX
	JE    sum
	Q5BLK(0, 0, 0, Y0)

sum:
	VADDPS       Y5, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (R15)
	ADDQ         $4, R15
	ADDQ         rowBytes+16(FP), R13
	DECQ         R14
	JNZ          row
	VZEROUPPER
	RET
