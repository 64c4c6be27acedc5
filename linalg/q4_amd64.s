//go:build amd64

#include "textflag.h"

// Q4_0 products in AVX2 + FMA + F16C assembly (the reference is dotQ4Scalar). A block
// is 18 bytes: binary16 d, then 16 bytes whose low nibbles are values 0..15 and high
// nibbles values 16..31, each code − 8. Per block the nibbles are spread to 32 bytes in
// value order, 8 subtracted (s = code − 8 in [−8, 7]), and the integer dot formed as
// for Q8_0: VPMADDUBSW(|s|, x·sign(s)) (a pair sum is at most 2·8·127, no saturation)
// then VPMADDWD with ones; converted and accumulated with one FMA by d·xd. Even blocks
// add into Y0 and odd ones into Y5, so that two FMA chains overlap.

// Q4BLK accumulates the block at off(SI) times the activation codes at xoff(DI) and
// scale at xdoff(R8) into acc. Y13: bytes 8, Y14: bytes 0x0f, Y15: int16 ones; Y1..Y4
// scratch.
#define Q4BLK(off, xoff, xdoff, acc) \
	VMOVDQU      (off+2)(SI), X1 \
	VPSRLW       $4, X1, X2 \
	VINSERTI128  $1, X2, Y1, Y1 \
	VPAND        Y14, Y1, Y1 \
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

// func q4DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int)
// out[r] = the dot of the Q4_0 row of nb blocks at w+r·rowBytes with the activations
// (codes xq, scales xd per 32 values), for r < rows (rows, nb ≥ 1): the rows one after
// the other in memory order, prefetched 4 KiB ahead.
TEXT ·q4DotRows(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), R15
	MOVQ         w+8(FP), R13
	MOVQ         rows+24(FP), R14
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

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
	Q4BLK(0, 0, 0, Y0)
	Q4BLK(18, 32, 4, Y5)
	ADDQ       $36, SI
	ADDQ       $64, DI
	ADDQ       $8, R8
	SUBQ       $2, CX
	JMP        pair

tail:
	TESTQ CX, CX
	JE    sum
	Q4BLK(0, 0, 0, Y0)

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
