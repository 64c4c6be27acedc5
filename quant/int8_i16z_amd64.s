//go:build amd64

#include "textflag.h"
#include "ztr4_amd64.h"

// dotInt8Q4I16Z (declaration and contract in int8_i16_amd64.go): the four-query int16
// scores of Int8 rows with ZMM registers and VPDPWSSD (AVX-512 VNNI). Four rows at a
// time in two pairs, one row per 256-bit half: 16 codes of each row of a pair, widened
// to words, take one VPDPWSSD per query against the query's 16 matching words
// broadcast to both halves. Each half of a query's accumulator then holds eight
// partial sums of its row; one transposing reduction (I16ZREDUCE, then a join of the
// two pairs) leaves lane r = row r's sums of the four queries.

// i16zspread is the VPERMPS index that spreads four floats, one per row, to their
// lanes (x_r four times in lane r).
DATA i16zspread<>+0(SB)/8, $0x0000000000000000
DATA i16zspread<>+8(SB)/8, $0x0000000000000000
DATA i16zspread<>+16(SB)/8, $0x0000000100000001
DATA i16zspread<>+24(SB)/8, $0x0000000100000001
DATA i16zspread<>+32(SB)/8, $0x0000000200000002
DATA i16zspread<>+40(SB)/8, $0x0000000200000002
DATA i16zspread<>+48(SB)/8, $0x0000000300000003
DATA i16zspread<>+56(SB)/8, $0x0000000300000003
GLOBL i16zspread<>(SB), RODATA|NOPTR, $64

// I16ZQUERY adds to a and b the products of the widened codes Z8 (rows 0 and 1) and
// Z9 (rows 2 and 3) with the query's 16 words at addr, broadcast to both halves.
#define I16ZQUERY(addr, a, b) \
	VBROADCASTI64X4 addr, Z10 \
	VPDPWSSD        Z10, Z8, a \
	VPDPWSSD        Z10, Z9, b

// I16ZREDUCE leaves in out the sums of the four dwords of each lane of q0..q3 (the
// four queries' accumulators), lane l = [q0 q1 q2 q3] of lane l: two levels of
// unpacking and adding (Z12, Z13 scratch).
#define I16ZREDUCE(q0, q1, q2, q3, out) \
	VPUNPCKLDQ  q1, q0, Z12   \
	VPUNPCKHDQ  q1, q0, Z13   \
	VPADDD      Z13, Z12, Z12 \
	VPUNPCKLDQ  q3, q2, Z13   \
	VPUNPCKHDQ  q3, q2, out   \
	VPADDD      out, Z13, Z13 \
	VPUNPCKLQDQ Z13, Z12, out \
	VPUNPCKHQDQ Z13, Z12, Z12 \
	VPADDD      Z12, out, out

// func dotInt8Q4I16Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)
//
// Per block of four rows (R8, R15, CX, DX): the accumulators of rows 0–1 in Z0..Z3
// and of rows 2–3 in Z4..Z7 (query r in the r-th of each), then the reduction, each
// row's two lanes added (VSHUFI64X2), the sums converted and scaled as
// dotInt8Q4I16 does (by the row's scale, then by the query's D: the same bits), and
// stored per query.
TEXT ·dotInt8Q4I16Z(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldb+8(FP), BX
	MOVQ q+16(FP), SI
	MOVQ qs+24(FP), CX
	MOVQ src+32(FP), R8
	MOVQ stride+40(FP), R12
	MOVQ n+48(FP), R13
	SHRQ $2, R13
	MOVQ d+56(FP), R14
	LEAQ (SI)(CX*1), R9
	LEAQ (R9)(CX*1), R10
	LEAQ (R10)(CX*1), R11

	// The four queries' D, [D0 D1 D2 D3] in every lane (Z20).
	VMOVSS      (SI)(R14*2), X7
	VINSERTPS   $0x10, (R9)(R14*2), X7, X7
	VINSERTPS   $0x20, (R10)(R14*2), X7, X7
	VINSERTPS   $0x30, (R11)(R14*2), X7, X7
	VSHUFF32X4  $0, Z7, Z7, Z20
	VMOVDQU32   i16zspread<>(SB), Z17
	VMOVDQU32   ztr4<>(SB), Z18

zblock:
	LEAQ   (R8)(R12*1), R15
	LEAQ   (R15)(R12*1), CX
	LEAQ   (CX)(R12*1), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	XORQ   AX, AX

zloop:
	VMOVDQU     2(R8)(AX*1), X8
	VINSERTI128 $1, 2(R15)(AX*1), Y8, Y8
	VPMOVSXBW   Y8, Z8
	VMOVDQU     2(CX)(AX*1), X9
	VINSERTI128 $1, 2(DX)(AX*1), Y9, Y9
	VPMOVSXBW   Y9, Z9
	I16ZQUERY((SI)(AX*2), Z0, Z4)
	I16ZQUERY((R9)(AX*2), Z1, Z5)
	I16ZQUERY((R10)(AX*2), Z2, Z6)
	I16ZQUERY((R11)(AX*2), Z3, Z7)
	ADDQ $16, AX
	CMPQ AX, R14
	JB   zloop

	I16ZREDUCE(Z0, Z1, Z2, Z3, Z14)
	I16ZREDUCE(Z4, Z5, Z6, Z7, Z15)
	VSHUFI64X2 $0x88, Z15, Z14, Z12
	VSHUFI64X2 $0xdd, Z15, Z14, Z13
	VPADDD     Z13, Z12, Z12
	VCVTDQ2PS  Z12, Z12

	// The rows' f16 scales, spread to their lanes.
	VPXOR     X11, X11, X11
	VPINSRW   $0, (R8), X11, X11
	VPINSRW   $1, (R15), X11, X11
	VPINSRW   $2, (CX), X11, X11
	VPINSRW   $3, (DX), X11, X11
	VCVTPH2PS X11, X11
	VPERMPS   Z11, Z17, Z11
	VMULPS    Z11, Z12, Z12
	VMULPS    Z20, Z12, Z12
	VPERMPS   Z12, Z18, Z12

	LEAQ          (BX)(BX*2), AX
	VMOVUPS       X12, (DI)
	VEXTRACTF32X4 $1, Z12, (DI)(BX*1)
	VEXTRACTF32X4 $2, Z12, (DI)(BX*2)
	VEXTRACTF32X4 $3, Z12, (DI)(AX*1)
	ADDQ          $16, DI
	LEAQ          (R8)(R12*4), R8
	DECQ          R13
	JNZ           zblock
	VZEROUPPER
	RET
