//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"

// Q4_0 and Q5_0 products in AVX2 + FMA + F16C assembly (the references are
// dotQ4Scalar and dotQ5Scalar). A Q4_0 block is 18 bytes: binary16 d, then 16 bytes
// whose low nibbles are values 0..15 and high nibbles values 16..31; value =
// d·(code − 8). A Q5_0 block is 22 bytes: d, 4 bytes qh whose bit j is value j's fifth
// bit, then the 16 bytes of nibbles; value = d·(code − 16). Per block the nibbles are
// spread to 32 bytes in value order (for Q5_0 the fifth bits added: qh broadcast, byte
// j picking qh's byte j/8 by VPSHUFB and tested against 1 << j mod 8), the offset
// subtracted (s in [−8, 7] or [−16, 15]), and the integer dot formed as for Q8_0:
// VPMADDUBSW(|s|, x·sign(s)) (a pair sum is at most 2·16·127, no saturation), then
// VPMADDWD with ones; converted and accumulated with one FMA by d·xd. Even blocks add
// into Y0 and odd ones into Y5, so that two FMA chains overlap.

// Byte j of the 32 (a 128-bit lane each for values 0..15 and 16..31) picks byte j/8
// of the broadcast qh.
DATA q5Spread<>+0(SB)/8, $0x0000000000000000
DATA q5Spread<>+8(SB)/8, $0x0101010101010101
DATA q5Spread<>+16(SB)/8, $0x0202020202020202
DATA q5Spread<>+24(SB)/8, $0x0303030303030303
GLOBL q5Spread<>(SB), RODATA|NOPTR, $32

// NIBBLES(off) leaves in Y1 the 32 nibbles of the 16 bytes at off(SI), in value
// order. Y14: bytes 0x0f; X2 scratch.
#define NIBBLES(off) \
	VMOVDQU     off(SI), X1 \
	VPSRLW      $4, X1, X2 \
	VINSERTI128 $1, X2, Y1, Y1 \
	VPAND       Y14, Y1, Y1

// Q4CODES(off) leaves in Y1 the codes − 8 of the Q4_0 block at off(SI). Y13: bytes 8.
#define Q4CODES(off) \
	NIBBLES((off+2)) \
	VPSUBB Y13, Y1, Y1

// Q5CONSTS sets Q5CODES's constants: Y10 bytes 1 << j mod 8, Y11 q5Spread (AX
// scratch).
#define Q5CONSTS \
	MOVQ         $0x8040201008040201, AX \
	VMOVQ        AX, X10 \
	VPBROADCASTQ X10, Y10 \
	VMOVDQU      q5Spread<>(SB), Y11

// Q5CODES(off) leaves in Y1 the codes − 16 of the Q5_0 block at off(SI). Y10: bytes
// 1 << j mod 8, Y11: q5Spread, Y13: bytes 16; Y2 scratch.
#define Q5CODES(off) \
	NIBBLES((off+6)) \
	VPBROADCASTD (off+2)(SI), Y2 \
	VPSHUFB      Y11, Y2, Y2 \
	VPAND        Y10, Y2, Y2 \
	VPCMPEQB     Y10, Y2, Y2 \
	VPAND        Y13, Y2, Y2 \
	VPOR         Y2, Y1, Y1 \
	VPSUBB       Y13, Y1, Y1

// SIGNDOT(off, xoff, xdoff, acc) accumulates into acc the dot of the signed codes in
// Y1 with the activation codes at xoff(DI), times the block's d at off(SI) and the
// activation scale at xdoff(R8). Y15: int16 ones; Y1..Y4 scratch.
#define SIGNDOT(off, xoff, xdoff, acc) \
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

// ROWS32(CODES, bytes) writes to (R15) on the dots of R14 rows of R11 blocks of bytes
// bytes each, the first at R13, R12 bytes apart, with the activation codes at R10 and
// scales at R9: the rows one after the other in memory order, prefetched 4 KiB ahead,
// two blocks at a time, then one.
#define ROWS32(CODES, bytes) \
row: \
	MOVQ   R13, SI \
	MOVQ   R10, DI \
	MOVQ   R9, R8 \
	MOVQ   R11, CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y5, Y5, Y5 \
pair: \
	CMPQ       CX, $2 \
	JB         tail \
	PREFETCHT0 4096(SI) \
	CODES(0) \
	SIGNDOT(0, 0, 0, Y0) \
	CODES(bytes) \
	SIGNDOT(bytes, 32, 4, Y5) \
	ADDQ       $(2*bytes), SI \
	ADDQ       $64, DI \
	ADDQ       $8, R8 \
	SUBQ       $2, CX \
	JMP        pair \
tail: \
	TESTQ CX, CX \
	JE    sum \
	CODES(0) \
	SIGNDOT(0, 0, 0, Y0) \
sum: \
	VADDPS Y5, Y0, Y0 \
	HSUM0 \
	VMOVSS X0, (R15) \
	ADDQ   $4, R15 \
	ADDQ   R12, R13 \
	DECQ   R14 \
	JNZ    row

// SIGNDOT2 is SIGNDOT for two tokens sharing the block's codes (Y1) and d: token 0's
// activations at xoff(DI) and xdoff(R8) into acc0, token 1's at xoff(DI)(BX*8) and
// xdoff(R8)(BX*1) into acc1, each in SIGNDOT's order and rounding. Y1..Y4, Y6 scratch.
#define SIGNDOT2(off, xoff, xdoff, acc0, acc1) \
	VMOVDQU      xoff(DI), Y2 \
	VPSIGNB      Y1, Y2, Y2 \
	VMOVDQU      xoff(DI)(BX*8), Y6 \
	VPSIGNB      Y1, Y6, Y6 \
	VPSIGNB      Y1, Y1, Y1 \
	VPMADDUBSW   Y2, Y1, Y2 \
	VPMADDUBSW   Y6, Y1, Y6 \
	VPMADDWD     Y15, Y2, Y2 \
	VPMADDWD     Y15, Y6, Y6 \
	VCVTDQ2PS    Y2, Y2 \
	VCVTDQ2PS    Y6, Y6 \
	VPBROADCASTW off(SI), X3 \
	VCVTPH2PS    X3, Y3 \
	VBROADCASTSS xdoff(R8), Y4 \
	VMULPS       Y4, Y3, Y4 \
	VFMADD231PS  Y4, Y2, acc0 \
	VBROADCASTSS xdoff(R8)(BX*1), Y4 \
	VMULPS       Y4, Y3, Y4 \
	VFMADD231PS  Y4, Y6, acc1

// ROWS32X2(CODES, bytes) is ROWS32 for two tokens (SIGNDOT2) over rows stored one
// after the other: token 1's activation codes at R10 + 8·BX, its scales at R9 + BX;
// token 0's dots to (R15) on, token 1's DX values further. Token 0 sums even blocks
// into Y0 and odd ones into Y5, token 1 into Y7 and Y8, as ROWS32 does.
#define ROWS32X2(CODES, bytes) \
row2: \
	MOVQ   R10, DI \
	MOVQ   R9, R8 \
	MOVQ   R11, CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
pair2: \
	CMPQ       CX, $2 \
	JB         tail2 \
	PREFETCHT0 4096(SI) \
	CODES(0) \
	SIGNDOT2(0, 0, 0, Y0, Y7) \
	CODES(bytes) \
	SIGNDOT2(bytes, 32, 4, Y5, Y8) \
	ADDQ       $(2*bytes), SI \
	ADDQ       $64, DI \
	ADDQ       $8, R8 \
	SUBQ       $2, CX \
	JMP        pair2 \
tail2: \
	TESTQ CX, CX \
	JE    sum2 \
	CODES(0) \
	SIGNDOT2(0, 0, 0, Y0, Y7) \
	ADDQ  $bytes, SI \
sum2: \
	VADDPS Y5, Y0, Y0 \
	HSUM0 \
	VMOVSS X0, (R15) \
	VADDPS Y8, Y7, Y7 \
	HSUM(Y7, X7) \
	VMOVSS X7, (R15)(DX*4) \
	ADDQ   $4, R15 \
	DECQ   R14 \
	JNZ    row2

// func q4DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the Q4_0 row of units blocks at w+r·rowBytes with the activations
// (codes xq, scales xd per 32 values), for r < rows (rows, units ≥ 1; see rows_amd64.go).
TEXT ·q4DotRows(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rowBytes+16(FP), R12
	MOVQ rows+24(FP), R14
	MOVQ xq+32(FP), R10
	MOVQ xd+40(FP), R9
	MOVQ units+48(FP), R11
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x08, X13, Y13)
	ROWS32(Q4CODES, 18)
	VZEROUPPER
	RET

// func q5DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// q4DotRows for Q5_0 rows.
TEXT ·q5DotRows(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), R15
	MOVQ         w+8(FP), R13
	MOVQ         rowBytes+16(FP), R12
	MOVQ         rows+24(FP), R14
	MOVQ         xq+32(FP), R10
	MOVQ         xd+40(FP), R9
	MOVQ         units+48(FP), R11
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x10, X13, Y13)
	Q5CONSTS
	ROWS32(Q5CODES, 22)
	VZEROUPPER
	RET

// func q4Dot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, units int)
// q4DotRows for two tokens over rows stored one after the other (rowBytes = 18·units),
// each token's sum bit for bit q4DotRows's: token 0's activations at xq and xd, token
// 1's right after them (xq + 32·units, xd + units); token 0's dot of row r to out[r],
// token 1's to out[ldo+r] (ldo in values).
TEXT ·q4Dot2Rows(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R15
	MOVQ ldo+8(FP), DX
	MOVQ w+16(FP), SI
	MOVQ rows+24(FP), R14
	MOVQ xq+32(FP), R10
	MOVQ xd+40(FP), R9
	MOVQ units+48(FP), R11
	LEAQ (R11*4), BX // token 1's xd offset in bytes; its xq offset is 8·BX
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x08, X13, Y13)
	ROWS32X2(Q4CODES, 18)
	VZEROUPPER
	RET

// func q5Dot2Rows(out *float32, ldo int, w *byte, rows int, xq *int8, xd *float32, units int)
// q4Dot2Rows for Q5_0 rows (rowBytes = 22·units).
TEXT ·q5Dot2Rows(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), R15
	MOVQ         ldo+8(FP), DX
	MOVQ         w+16(FP), SI
	MOVQ         rows+24(FP), R14
	MOVQ         xq+32(FP), R10
	MOVQ         xd+40(FP), R9
	MOVQ         units+48(FP), R11
	LEAQ         (R11*4), BX // token 1's xd offset in bytes; its xq offset is 8·BX
	ONES16
	BYTES32(0x0f, X14, Y14)
	BYTES32(0x10, X13, Y13)
	Q5CONSTS
	ROWS32X2(Q5CODES, 22)
	VZEROUPPER
	RET
