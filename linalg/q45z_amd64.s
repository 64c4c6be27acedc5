//go:build amd64

#include "textflag.h"
#include "blockz_amd64.h"

// Q4_0 and Q5_0 products with AVX-512 VNNI that compute dotQ4Scalar's and dotQ5Scalar's
// sums bit for bit, as q8z_amd64.s does for Q8_0 (blockz_amd64.h): q4Rows1Z and
// q5Rows1Z for one token, and for many the rows expanded to Q8_0 blocks (q4ExpandZ,
// q5ExpandZ: the same scale, the codes less their offset as int8) that q8TokensZ
// multiplies. A Q4_0 block is 18 bytes: binary16 d, then 16 bytes whose low nibbles
// are values 0..15 and high nibbles values 16..31, value = d·(code − 8); a Q5_0 block
// is 22 bytes: d, 4 bytes qh whose bit j is value j's fifth bit, then the 16 bytes of
// nibbles, value = d·(code − 16).

// Byte j of the 32 (a 128-bit lane each for values 0..15 and 16..31) picks byte j/8
// of the broadcast qh.
DATA q5SpreadZ<>+0(SB)/8, $0x0000000000000000
DATA q5SpreadZ<>+8(SB)/8, $0x0101010101010101
DATA q5SpreadZ<>+16(SB)/8, $0x0202020202020202
DATA q5SpreadZ<>+24(SB)/8, $0x0303030303030303
GLOBL q5SpreadZ<>(SB), RODATA|NOPTR, $32

// Q4CODES(off): the 32 codes (0..15) of the Q4_0 block at off(R8) in Y1, in value
// order. Y14: bytes 0x0f; X2 scratch.
#define Q4CODES(off) \
	VMOVDQU     (off+2)(R8), X1 \
	VPSRLW      $4, X1, X2 \
	VINSERTI128 $1, X2, Y1, Y1 \
	VPAND       Y14, Y1, Y1

// Q5CODES(off): the 32 codes (0..31) of the Q5_0 block at off(R8) in Y1, in value
// order: the nibbles, and qh broadcast, byte j picking qh's byte j/8 (Y16), tested
// against 1 << j mod 8 (Y17), made 0 or 1 (VPMINUB with Y18: bytes 1) and moved to bit
// 4. Y14: bytes 0x0f; Y2 scratch.
#define Q5CODES(off) \
	VMOVDQU      (off+6)(R8), X1 \
	VPSRLW       $4, X1, X2 \
	VINSERTI128  $1, X2, Y1, Y1 \
	VPAND        Y14, Y1, Y1 \
	VPBROADCASTD (off+2)(R8), Y2 \
	VPSHUFB      Y16, Y2, Y2 \
	VPANDD       Y17, Y2, Y2 \
	VPMINUB      Y18, Y2, Y2 \
	VPSLLW       $4, Y2, Y2 \
	VPOR         Y2, Y1, Y1

// NIBBLEMASK sets Y14 to bytes 0x0f (R9 scratch).
#define NIBBLEMASK \
	MOVL         $0x0f0f0f0f, R9 \
	VPBROADCASTD R9, Y14

// Q5CONSTS sets Q5CODES's Y14, Y16, Y17 and Y18 (R9 scratch).
#define Q5CONSTS \
	NIBBLEMASK \
	VMOVDQU64    q5SpreadZ<>(SB), Y16 \
	MOVQ         $0x8040201008040201, R9 \
	VPBROADCASTQ R9, Y17 \
	MOVL         $0x01010101, R9 \
	VPBROADCASTD R9, Y18

// ROWS1(CODES, blk, shift): the body of q4Rows1Z and q5Rows1Z (see q8Rows1Z, whose
// loop this is for blocks of blk bytes with codes offset by 1 << shift).
#define ROWS1(CODES, blk, shift) \
	MOVQ   out+0(FP), AX \
	MOVQ   w+8(FP), SI \
	MOVQ   rows+24(FP), R11 \
row:  \
	TESTQ  R11, R11 \
	JE     done \
	MOVQ   SI, R8 \
	MOVQ   xq+32(FP), DI \
	MOVQ   xd+40(FP), R13 \
	MOVQ   xsum+48(FP), R14 \
	MOVQ   nb+56(FP), CX \
	VXORPS X0, X0, X0 \
block8: \
	CMPQ   CX, $8 \
	JL     block \
	R1BLOCKS8(CODES, blk, shift) \
	SUBQ   $8, CX \
	JMP    block8 \
block: \
	TESTQ  CX, CX \
	JE     end \
	R1BLOCK(CODES, blk, shift) \
	DECQ   CX \
	JMP    block \
end: \
	VMOVSS X0, (AX) \
	ADDQ   $4, AX \
	ADDQ   rowBytes+16(FP), SI \
	DECQ   R11 \
	JMP    row \
done: \
	VZEROUPPER \
	RET

// EXPAND(CODES, blk, off): the body of q4ExpandZ and q5ExpandZ: each block of blk bytes
// at R8 to a Q8_0 block at DI, its scale copied and its codes less off (Y13) stored as
// int8.
#define EXPAND(CODES, blk, off) \
	MOVQ         dst+0(FP), DI \
	MOVQ         w+8(FP), R8 \
	MOVQ         blocks+16(FP), CX \
	MOVL         $(off*0x01010101), R9 \
	VPBROADCASTD R9, Y13 \
	TESTQ        CX, CX \
	JE           done \
loop: \
	CODES(0) \
	VPSUBB       Y13, Y1, Y1 \
	MOVWLZX      (R8), R9 \
	MOVW         R9, (DI) \
	VMOVDQU      Y1, 2(DI) \
	ADDQ         $blk, R8 \
	ADDQ         $34, DI \
	DECQ         CX \
	JNE          loop \
done: \
	VZEROUPPER \
	RET

// func q4Rows1Z(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nb int)
// out[r] = dotQ4Scalar of the Q4_0 row of nb blocks at w+r·rowBytes with one token's
// activations (xsum[b]: the sum of block b's codes), for r < rows, as q8Rows1Z.
TEXT ·q4Rows1Z(SB), NOSPLIT, $0-64
	NIBBLEMASK
	ROWS1(Q4CODES, 18, 3)

// func q5Rows1Z(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nb int)
// q4Rows1Z for Q5_0 rows.
TEXT ·q5Rows1Z(SB), NOSPLIT, $0-64
	Q5CONSTS
	ROWS1(Q5CODES, 22, 4)

// func q4ExpandZ(dst *byte, w *byte, blocks int)
// The Q4_0 blocks at w as Q8_0 blocks at dst (34 bytes each): value j of a block
// int8(code_j − 8), its scale the same.
TEXT ·q4ExpandZ(SB), NOSPLIT, $0-24
	NIBBLEMASK
	EXPAND(Q4CODES, 18, 8)

// func q5ExpandZ(dst *byte, w *byte, blocks int)
// q4ExpandZ for Q5_0 blocks: value j int8(code_j − 16).
TEXT ·q5ExpandZ(SB), NOSPLIT, $0-24
	Q5CONSTS
	EXPAND(Q5CODES, 22, 16)
