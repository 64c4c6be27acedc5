//go:build amd64

#include "textflag.h"

// The four-query integer score kernels with ZMM registers and VPDPBUSD (AVX-512 VNNI):
// dotU4Q4I8P2Z (declaration and contract in lossy_i8_amd64.go). Four rows at a time,
// one row per 128-bit lane: a group's 16 code bytes of each row fill a register, whose
// low and high nibbles take one VPDPBUSD each per query against the query's 16
// matching bytes broadcast to the four lanes. Lane r of query q's accumulator then
// holds four partial sums of row r; one transposing reduction (ZI8REDUCE) leaves lane
// r = row r's sums of the four queries, so that the scales need no permute per
// query and no horizontal adds (VPHADDW) are left.

// zi8idx holds three VPERMPS index vectors: the f16 scales of four rows widened as
// [s0 z0 s1 z1 s2 z2 s3 z3] spread to each row's lane (s_r four times in lane r), the
// same of the zeros, and the transpose of 4×4 (lane r = row r's four queries → lane
// q = query q's four rows).
DATA zi8idx<>+0(SB)/8, $0x0000000000000000
DATA zi8idx<>+8(SB)/8, $0x0000000000000000
DATA zi8idx<>+16(SB)/8, $0x0000000200000002
DATA zi8idx<>+24(SB)/8, $0x0000000200000002
DATA zi8idx<>+32(SB)/8, $0x0000000400000004
DATA zi8idx<>+40(SB)/8, $0x0000000400000004
DATA zi8idx<>+48(SB)/8, $0x0000000600000006
DATA zi8idx<>+56(SB)/8, $0x0000000600000006
DATA zi8idx<>+64(SB)/8, $0x0000000100000001
DATA zi8idx<>+72(SB)/8, $0x0000000100000001
DATA zi8idx<>+80(SB)/8, $0x0000000300000003
DATA zi8idx<>+88(SB)/8, $0x0000000300000003
DATA zi8idx<>+96(SB)/8, $0x0000000500000005
DATA zi8idx<>+104(SB)/8, $0x0000000500000005
DATA zi8idx<>+112(SB)/8, $0x0000000700000007
DATA zi8idx<>+120(SB)/8, $0x0000000700000007
DATA zi8idx<>+128(SB)/8, $0x0000000400000000
DATA zi8idx<>+136(SB)/8, $0x0000000c00000008
DATA zi8idx<>+144(SB)/8, $0x0000000500000001
DATA zi8idx<>+152(SB)/8, $0x0000000d00000009
DATA zi8idx<>+160(SB)/8, $0x0000000600000002
DATA zi8idx<>+168(SB)/8, $0x0000000e0000000a
DATA zi8idx<>+176(SB)/8, $0x0000000700000003
DATA zi8idx<>+184(SB)/8, $0x0000000f0000000b
GLOBL zi8idx<>(SB), RODATA|NOPTR, $192

DATA zi8nib<>+0(SB)/4, $0x0f0f0f0f
GLOBL zi8nib<>(SB), RODATA|NOPTR, $4

// ZI8CODES4 leaves in Z3 the low nibbles and in Z4 the high nibbles of the 16 code
// bytes at off of each of the four rows R8..R11, row r in lane r (Z1: byte masks
// 0x0f).
#define ZI8CODES4(off) \
	VMOVDQU      off(R8), X3          \
	VINSERTI32X4 $1, off(R9), Z3, Z3  \
	VINSERTI32X4 $2, off(R10), Z3, Z3 \
	VINSERTI32X4 $3, off(R11), Z3, Z3 \
	VPSRLW       $4, Z3, Z4           \
	VPANDD       Z1, Z3, Z3           \
	VPANDD       Z1, Z4, Z4

// ZI8QUERY adds to Z the products of the codes Z3 (low nibbles) and Z4 (high) with one
// query's 16 matching bytes of each, at lo and hi, broadcast to the four lanes.
#define ZI8QUERY(lo, hi, Z) \
	VBROADCASTI32X4 lo, Z12 \
	VPDPBUSD        Z12, Z3, Z \
	VBROADCASTI32X4 hi, Z13 \
	VPDPBUSD        Z13, Z4, Z

// ZI8REDUCE leaves in Z14 the sums of the four dwords of each lane of Z8..Z11 (queries
// 0–3), lane r = the four queries' sums of row r: two levels of unpacking and adding
// (Z12, Z13, Z15 scratch).
#define ZI8REDUCE \
	VPUNPCKLDQ  Z9, Z8, Z12   \
	VPUNPCKHDQ  Z9, Z8, Z13   \
	VPADDD      Z13, Z12, Z12 \
	VPUNPCKLDQ  Z11, Z10, Z13 \
	VPUNPCKHDQ  Z11, Z10, Z15 \
	VPADDD      Z15, Z13, Z13 \
	VPUNPCKLQDQ Z13, Z12, Z14 \
	VPUNPCKHQDQ Z13, Z12, Z15 \
	VPADDD      Z15, Z14, Z14

// ZI8SCALE scales the four rows' integer sums Z14 (lane r: row r's four queries) of
// one group into F: the rows' f16 scales and zeros, the 4 bytes at off of R8..R11,
// spread to their lanes (Z16, Z17), times the four queries' d_k at dq and d_k·Σq̂ at
// eq (broadcast to the four lanes), in the order of dotU4Q4I8P2: F += sum·(s·d), then
// F += z·e.
#define ZI8SCALE(off, dq, eq, F) \
	VCVTDQ2PS       Z14, Z14           \
	VMOVD           off(R8), X5        \
	VPINSRD         $1, off(R9), X5, X5  \
	VPINSRD         $2, off(R10), X5, X5 \
	VPINSRD         $3, off(R11), X5, X5 \
	VCVTPH2PS       X5, Y5             \
	VPERMPS         Z5, Z16, Z6        \
	VPERMPS         Z5, Z17, Z7        \
	VBROADCASTF32X4 dq, Z15            \
	VMULPS          Z15, Z6, Z6        \
	VFMADD231PS     Z6, Z14, F         \
	VBROADCASTF32X4 eq, Z15            \
	VFMADD231PS     Z15, Z7, F

// ZI8GROUP4 adds to F the scores of one group of the four 4-bit rows (codes at off of
// R8..R11, scales and zeros at off−4) against the four queries, query r's bytes at
// qoff of SI, SI+BX, SI+2·BX and DX+2·BX (DX = SI+BX), its low-nibble bytes then 32
// bytes on its high-nibble ones, the factors at foff of R12 (d_k) and 32 bytes on
// (d_k·Σq̂).
#define ZI8GROUP4(off, qoff, foff, F) \
	ZI8CODES4(off)                                  \
	VPXORD   Z8, Z8, Z8                             \
	VPXORD   Z9, Z9, Z9                             \
	VPXORD   Z10, Z10, Z10                          \
	VPXORD   Z11, Z11, Z11                          \
	ZI8QUERY(qoff(SI), qoff+32(SI), Z8)             \
	ZI8QUERY(qoff(SI)(BX*1), qoff+32(SI)(BX*1), Z9) \
	ZI8QUERY(qoff(SI)(BX*2), qoff+32(SI)(BX*2), Z10) \
	ZI8QUERY(qoff(DX)(BX*2), qoff+32(DX)(BX*2), Z11) \
	ZI8REDUCE                                       \
	ZI8SCALE(off-4, foff(R12), foff+32(R12), F)

// ZI8STORE stores lane q of Z0 (query q's scores of the four rows) to DI + q·ldo for
// q < nq, then steps to the next block of four rows (R15, DI; label block) or returns
// after the last. AX scratch.
#define ZI8STORE(block) \
	MOVQ          DI, AX          \
	VMOVUPS       X0, (AX)        \
	CMPQ          nq+16(FP), $1   \
	JEQ           zstored         \
	ADDQ          ldo+8(FP), AX   \
	VEXTRACTF32X4 $1, Z0, (AX)    \
	CMPQ          nq+16(FP), $2   \
	JEQ           zstored         \
	ADDQ          ldo+8(FP), AX   \
	VEXTRACTF32X4 $2, Z0, (AX)    \
	CMPQ          nq+16(FP), $3   \
	JEQ           zstored         \
	ADDQ          ldo+8(FP), AX   \
	VEXTRACTF32X4 $3, Z0, (AX)    \
zstored:                              \
	ADDQ          $16, DI         \
	MOVQ          stride+40(FP), AX \
	LEAQ          (R15)(AX*4), R15 \
	DECQ          R13             \
	JNZ           block           \
	VZEROUPPER                    \
	RET

// func dotU4Q4I8P2Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
//
// Per block of four rows and pair of groups k, k+1 (the queries and factors in pair
// order, as dotU4Q4I8P2 reads them): group k into Z0, group k+1 into Z2, the two
// added when the row block ends (the two lanes of dotU4Q4I8P2), transposed to lane
// q = query q's four rows and stored. The second group's codes are gb (CX) bytes
// after the first's, so the row pointers step by 2·gb per pair.
TEXT ·dotU4Q4I8P2Z(SB), NOSPLIT, $0-80
	VPBROADCASTD zi8nib<>(SB), Z1
	VMOVDQU32    zi8idx<>(SB), Z16
	VMOVDQU32    zi8idx<>+64(SB), Z17
	VMOVDQU32    zi8idx<>+128(SB), Z18
	MOVQ         out+0(FP), DI
	MOVQ         rows+32(FP), R15
	MOVQ         n+48(FP), R13
	SHRQ         $2, R13
	MOVQ         np+64(FP), BX
	SHLQ         $5, BX
	MOVQ         gb+72(FP), CX

zp2block:
	MOVQ   q+24(FP), SI
	LEAQ   (SI)(BX*1), DX
	MOVQ   qf+56(FP), R12
	MOVQ   np+64(FP), R14
	SHRQ   $1, R14
	MOVQ   stride+40(FP), AX
	MOVQ   R15, R8
	LEAQ   (R8)(AX*1), R9
	LEAQ   (R9)(AX*1), R10
	LEAQ   (R10)(AX*1), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z2, Z2, Z2

zp2pair:
	ZI8GROUP4(0, 0, 0, Z0)
	ADDQ CX, R8
	ADDQ CX, R9
	ADDQ CX, R10
	ADDQ CX, R11
	ZI8GROUP4(0, 16, 16, Z2)
	ADDQ CX, R8
	ADDQ CX, R9
	ADDQ CX, R10
	ADDQ CX, R11
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, R12
	DECQ R14
	JNZ  zp2pair

	VADDPS  Z2, Z0, Z0
	VPERMPS Z0, Z18, Z0
	ZI8STORE(zp2block)

