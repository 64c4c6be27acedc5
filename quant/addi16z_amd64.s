//go:build amd64

#include "textflag.h"
#include "p2gather_amd64.h"
#include "zrows4_amd64.h"
#include "prefetch_amd64.h"
#include "i16loop_amd64.h"
#include "i16pre_amd64.h"

// The integer four-query value sums of 4-bit and 2-bit Affine rows in pairs of
// groups of 32 with ZMM registers and VPDPWSSD (AVX-512 VNNI): addU4Q4I16Z and
// addU2Q4I16Z, the four-query twins of addU4Q1I16 and addU2Q1I16 (declarations and
// contracts in addi16_amd64.go). Each query gets its twin's products, roundings and
// sums, bit for bit; what the four share is the reading and widening of the rows: a
// row pair's codes, widened once, take one VPDPWSSD per query and 16 columns,
// against the query's [π_A, π_B]. At the end, addInt8Q4I16Z does the same for Int8
// rows (its own frame).
//
// Frame (hardware SP): the products p, 128 bytes per block of four rows (two
// vectors, the first group's and the second's, lanes 4q..4q+3 query q's rows 0–3) at
// 0; their int16 roundings π, 64 bytes per block (per group 32: query q's words of
// rows 0–3 at 8q), at Z16PI; the factors P and the zero sums Z of the two groups, a
// vector each (lane 4q query q's), at Z16P and Z16Z.

#define Z16PI 2048
#define Z16P 3072
#define Z16Z 3200

DATA z16c<>+0(SB)/4, $0x7fffffff // |x| mask
DATA z16c<>+4(SB)/4, $0x000f000f // word mask of a 4-bit code
DATA z16c<>+8(SB)/4, $0x46fffe00 // 32767
DATA z16c<>+12(SB)/4, $0x07800000 // 2^-112, the smallest largest-product with code terms
DATA z16c<>+16(SB)/4, $0x00030003 // word mask of a 2-bit code
GLOBL z16c<>(SB), RODATA|NOPTR, $20

// z16perm: VPERMT2PS indexes that put the interleaved even and odd columns of a group
// (VUNPCKLPS: lanes 4j..4j+3 columns 8j..8j+3; VUNPCKHPS: 8j+4..8j+7) in column
// order, columns 0–15 and then 16–31.
DATA z16perm<>+0(SB)/8, $0x0000000100000000
DATA z16perm<>+8(SB)/8, $0x0000000300000002
DATA z16perm<>+16(SB)/8, $0x0000001100000010
DATA z16perm<>+24(SB)/8, $0x0000001300000012
DATA z16perm<>+32(SB)/8, $0x0000000500000004
DATA z16perm<>+40(SB)/8, $0x0000000700000006
DATA z16perm<>+48(SB)/8, $0x0000001500000014
DATA z16perm<>+56(SB)/8, $0x0000001700000016
DATA z16perm<>+64(SB)/8, $0x0000000900000008
DATA z16perm<>+72(SB)/8, $0x0000000b0000000a
DATA z16perm<>+80(SB)/8, $0x0000001900000018
DATA z16perm<>+88(SB)/8, $0x0000001b0000001a
DATA z16perm<>+96(SB)/8, $0x0000000d0000000c
DATA z16perm<>+104(SB)/8, $0x0000000f0000000e
DATA z16perm<>+112(SB)/8, $0x0000001d0000001c
DATA z16perm<>+120(SB)/8, $0x0000001f0000001e
GLOBL z16perm<>(SB), RODATA|NOPTR, $128

// ZHALVES leaves in every lane of each 128-bit lane of z the OP (VMAXPS, VADDPS) of
// its four lanes, as addi16_amd64.s's HALVES does in each half: (l0 OP l2) OP
// (l1 OP l3). Clobbers Z8.
#define ZHALVES(OP, z) \
	VPERMILPS $0x4e, z, Z8 \
	OP        Z8, z, z     \
	VPERMILPS $0xb1, z, Z8 \
	OP        Z8, z, z

// ZFACTORS turns one group's lanes of largest magnitudes m and of Σp·0 f (the four
// queries in the four 128-bit lanes, ZHALVES reducing each) into the factors P =
// m/32767 + Σp·0, stored at off(SP), and inv = 32767/m, 0 where m < 2^-112 (as
// addi16_amd64.s's I16PRE does). Clobbers Z0, Z8, Z9, K1.
#define ZFACTORS(m, f, off, inv) \
	ZHALVES(VMAXPS, m)              \
	ZHALVES(VADDPS, f)              \
	VBROADCASTSS z16c<>+8(SB), Z9   \
	VDIVPS       Z9, m, Z0          \
	VADDPS       f, Z0, Z0          \
	VMOVUPS      Z0, off(SP)        \
	VDIVPS       m, Z9, inv         \
	VBROADCASTSS z16c<>+12(SB), Z9  \
	VCMPPS       $0x1d, Z9, m, K1   \
	VMOVAPS.Z    inv, K1, inv

// ZROUND rounds the 16 products at off(R8) times inv to int16 (π, saturating as
// VPACKSSDW does) and stores them at doff(R12). Clobbers Z0.
#define ZROUND(off, inv, doff) \
	VMULPS    off(R8), inv, Z0 \
	VCVTPS2DQ Z0, Z0           \
	VPMOVSDW  Z0, Y0           \
	VMOVDQU   Y0, doff(R12)

// Z16PRE fills the frame from the nb blocks of four rows (R9 cp, R10 stride, R11 nb,
// CX gb; SI, DI, AX, DX the four queries' weights), as I16PRE does for one query,
// the four queries in the four 128-bit lanes: per block, the rows' scales and zeros
// of both groups (P2SZ), spread to the four lanes, times the weights give the
// products p (stored) and the zero sums (Z4, Z5, per lane); then per group and query
// m = max|p|, P = m/32767 plus Σp·0, Z = the zero sum and π = round(p·32767/m) (0
// when m < 2^-112; ZFACTORS, ZROUND). Clobbers AX, BX, DX, SI, DI, R8, R9,
// R12..R14, K1, Z0..Z19.
#define Z16PRE \
	MOVQ         R11, R14           \
	MOVQ         SP, R8             \
	VPBROADCASTD z16c<>+0(SB), Z17  \
	VPXORD       Z16, Z16, Z16      \
	VPXORD       Z4, Z4, Z4         \
	VPXORD       Z5, Z5, Z5         \
	VPXORD       Z6, Z6, Z6         \
	VPXORD       Z7, Z7, Z7         \
	VPXORD       Z13, Z13, Z13      \
	VPXORD       Z14, Z14, Z14      \
z16blk:                             \
	LEAQ          (R9)(R10*1), R13   \
	LEAQ          (R13)(R10*1), R12  \
	LEAQ          (R12)(R10*1), BX   \
	P2SZ(R9, R13, R12, BX)           \
	VMOVUPS       (SI), X12          \
	VINSERTF32X4  $1, (DI), Z12, Z12 \
	VINSERTF32X4  $2, (AX), Z12, Z12 \
	VINSERTF32X4  $3, (DX), Z12, Z12 \
	VSHUFF32X4    $0x00, Z10, Z10, Z0 \
	VSHUFF32X4    $0x55, Z10, Z10, Z1 \
	VSHUFF32X4    $0x00, Z11, Z11, Z2 \
	VSHUFF32X4    $0x55, Z11, Z11, Z3 \
	VMULPS        Z12, Z0, Z0        \
	VMULPS        Z12, Z1, Z1        \
	VFMADD231PS   Z12, Z2, Z4        \
	VFMADD231PS   Z12, Z3, Z5        \
	VFMADD231PS   Z16, Z0, Z6        \
	VFMADD231PS   Z16, Z1, Z7        \
	VMOVUPS       Z0, (R8)           \
	VMOVUPS       Z1, 64(R8)         \
	VPANDD        Z17, Z0, Z18       \
	VPANDD        Z17, Z1, Z19       \
	VMAXPS        Z18, Z13, Z13      \
	VMAXPS        Z19, Z14, Z14      \
	LEAQ          (BX)(R10*1), R9    \
	ADDQ          $16, SI            \
	ADDQ          $16, DI            \
	ADDQ          $16, AX            \
	ADDQ          $16, DX            \
	ADDQ          $128, R8           \
	DECQ          R14                \
	JNZ           z16blk             \
	ZHALVES(VADDPS, Z4)              \
	ZHALVES(VADDPS, Z5)              \
	VMOVUPS       Z4, Z16Z(SP)       \
	VMOVUPS       Z5, Z16Z+64(SP)    \
	ZFACTORS(Z13, Z6, Z16P, Z2)      \
	ZFACTORS(Z14, Z7, Z16P+64, Z3)   \
	MOVQ          R11, BX            \
	MOVQ          SP, R8             \
	LEAQ          Z16PI(SP), R12     \
z16round:                            \
	ZROUND(0, Z2, 0)                 \
	ZROUND(64, Z3, 32)               \
	ADDQ          $128, R8           \
	ADDQ          $64, R12           \
	DECQ          BX                 \
	JNZ           z16round

// Z4CODES widens the 16 code bytes of one group of rows A and B (memory operands) to
// the pairs Z4PAIR multiplies: the even columns' words in Z1, the odd ones' in Z0.
#define Z4CODES(A, B) \
	VPMOVZXBD A, Z0     \
	VPMOVZXBD B, Z1     \
	VPSLLD    $16, Z1, Z1 \
	VPORD     Z1, Z0, Z0 \
	VPANDD    Z15, Z0, Z1 \
	VPSRLW    $4, Z0, Z0

// Z4PAIR adds the codes of one group of rows A and B (16 bytes each, 32 codes) times
// each query's [π_A, π_B] (the dword at off(R12) + 8q) into the group's
// accumulators, query q's even columns into eq and odd ones into oq, as int32: each
// row's bytes widened to dwords, B's shifted into the high words, so that a dword
// holds the two rows' bytes of a column pair as words; the low nibbles are the even
// columns, the high nibbles the odd ones. Z15 holds the nibble mask; clobbers Z0, Z1.
#define Z4PAIR(A, B, off, e0, o0, e1, o1, e2, o2, e3, o3) \
	Z4CODES(A, B)                       \
	VPDPWSSD.BCST off(R12), Z1, e0      \
	VPDPWSSD.BCST off(R12), Z0, o0      \
	VPDPWSSD.BCST off+8(R12), Z1, e1    \
	VPDPWSSD.BCST off+8(R12), Z0, o1    \
	VPDPWSSD.BCST off+16(R12), Z1, e2   \
	VPDPWSSD.BCST off+16(R12), Z0, o2   \
	VPDPWSSD.BCST off+24(R12), Z1, e3   \
	VPDPWSSD.BCST off+24(R12), Z0, o3

// Z4BLOCK adds a block's two row pairs, both groups (rows R9, R13; then R9 moved to
// row 2 and R13 to row 3), with their weights at R12: query q's accumulators of the
// first group are Z16+2q (even columns) and Z17+2q, of the second Z24+2q and Z25+2q.
#define Z4BLOCK \
	LEAQ   (R9)(CX*1), AX                                                  \
	LEAQ   (R13)(CX*1), BX                                                 \
	Z4PAIR((R9), (R13), 0, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)         \
	Z4PAIR((AX), (BX), 32, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)         \
	LEAQ   (R13)(R10*1), R9                                                \
	LEAQ   (R9)(R10*1), R13                                                \
	LEAQ   (R9)(CX*1), AX                                                  \
	LEAQ   (R13)(CX*1), BX                                                 \
	Z4PAIR((R9), (R13), 4, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)         \
	Z4PAIR((AX), (BX), 36, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)

// Z16ZERO clears the accumulators Z16..Z31 (Z16ZERO8, zrows4_amd64.h, the first
// half).
#define Z16ZERO \
	Z16ZERO8             \
	VPXORD Z24, Z24, Z24 \
	VPXORD Z25, Z25, Z25 \
	VPXORD Z26, Z26, Z26 \
	VPXORD Z27, Z27, Z27 \
	VPXORD Z28, Z28, Z28 \
	VPXORD Z29, Z29, Z29 \
	VPXORD Z30, Z30, Z30 \
	VPXORD Z31, Z31, Z31

// Z16ROWS runs BLOCK over the nb blocks of four rows (I16LOOP, i16loop_amd64.h) with
// Z16..Z31 zeroed first and Z15 the code mask at MASK. Clobbers AX, BX, DX, R8, R12,
// R13, Z0..Z15.
#define Z16ROWS(BLOCK, MASK) \
	Z16ZERO                        \
	VPBROADCASTD MASK, Z15         \
	I16LOOP(Z16PI, 64, I16PF3, BLOCK, z16blk2)

// Z16SCALE turns one query's sums of a group (e the even columns, o the odd ones)
// into float(sum)·P + Z, P and Z the float32s at the memory operands P and Z, and
// puts them in column order: columns 0–15 into e, 16–31 into o. Z13 and Z14 hold
// z16perm; clobbers Z0..Z2.
#define Z16SCALE(e, o, P, Z) \
	VBROADCASTSS P, Z0                 \
	VBROADCASTSS Z, Z1                 \
	VCVTDQ2PS    e, e                  \
	VCVTDQ2PS    o, o                  \
	VMULPS       Z0, e, e              \
	VMULPS       Z0, o, o              \
	VADDPS       Z1, e, e              \
	VADDPS       Z1, o, o              \
	VUNPCKLPS    o, e, Z2              \
	VUNPCKHPS    o, e, Z0              \
	VMOVAPS      Z2, e                 \
	VPERMT2PS    Z0, Z13, e            \
	VMOVAPS      Z2, o                 \
	VPERMT2PS    Z0, Z14, o

// Z16ADD adds query q's 64 columns (the first group's in e0, o0, the second's in e1,
// o1) to the float32s at p; Z16STORE stores them there.
#define Z16ADD(p, e0, o0, e1, o1) \
	VADDPS (p), e0, e0     \
	VADDPS 64(p), o0, o0   \
	VADDPS 128(p), e1, e1  \
	VADDPS 192(p), o1, o1

#define Z16STORE(p, e0, o0, e1, o1) \
	VMOVUPS e0, (p)    \
	VMOVUPS o0, 64(p)  \
	VMOVUPS e1, 128(p) \
	VMOVUPS o1, 192(p)

// Z16ACC adds the four queries' 64 columns (query q's in its four registers, columns
// 0–15 first) to the float32s at SI, DI, AX and DX: all read before any is written
// (a query may repeat).
#define Z16ACC(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3) \
	Z16ADD(SI, a0, a1, a2, a3)   \
	Z16ADD(DI, b0, b1, b2, b3)   \
	Z16ADD(AX, c0, c1, c2, c3)   \
	Z16ADD(DX, d0, d1, d2, d3)   \
	Z16STORE(SI, a0, a1, a2, a3) \
	Z16STORE(DI, b0, b1, b2, b3) \
	Z16STORE(AX, c0, c1, c2, c3) \
	Z16STORE(DX, d0, d1, d2, d3)

// Z16OUT adds the sums of Z16..Z31 to the four queries' columns at a0..a3 (Z16ACC).
#define Z16OUT \
	VMOVDQU64 z16perm<>+0(SB), Z13        \
	VMOVDQU64 z16perm<>+64(SB), Z14       \
	Z16SCALE(Z16, Z17, Z16P+0(SP), Z16Z+0(SP))              \
	Z16SCALE(Z18, Z19, Z16P+16(SP), Z16Z+16(SP))              \
	Z16SCALE(Z20, Z21, Z16P+32(SP), Z16Z+32(SP))              \
	Z16SCALE(Z22, Z23, Z16P+48(SP), Z16Z+48(SP))              \
	Z16SCALE(Z24, Z25, Z16P+64(SP), Z16Z+64(SP))             \
	Z16SCALE(Z26, Z27, Z16P+80(SP), Z16Z+80(SP))             \
	Z16SCALE(Z28, Z29, Z16P+96(SP), Z16Z+96(SP))             \
	Z16SCALE(Z30, Z31, Z16P+112(SP), Z16Z+112(SP))             \
	MOVQ      a0+0(FP), SI                \
	MOVQ      a1+8(FP), DI                \
	MOVQ      a2+16(FP), AX               \
	MOVQ      a3+24(FP), DX               \
	Z16ACC(Z16, Z17, Z24, Z25, Z18, Z19, Z26, Z27, Z20, Z21, Z28, Z29, Z22, Z23, Z30, Z31)

// Z16START loads the arguments of addU4Q4I16Z and addU2Q4I16Z (their shared
// signature), fills the frame (Z16PRE) and leaves R9 at the first row again.
#define Z16START \
	MOVQ w0+32(FP), SI      \
	MOVQ w1+40(FP), DI      \
	MOVQ w2+48(FP), AX      \
	MOVQ w3+56(FP), DX      \
	MOVQ cp+64(FP), R9      \
	MOVQ stride+72(FP), R10 \
	MOVQ nb+80(FP), R11     \
	MOVQ gb+88(FP), CX      \
	Z16PRE                  \
	MOVQ cp+64(FP), R9

// func addU4Q4I16Z(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU4Q4I16Z(SB), $3328-96
	Z16START
	Z16ROWS(Z4BLOCK, z16c<>+4(SB))
	Z16OUT
	VZEROUPPER
	RET

// Z2CODES widens the codes of both groups of rows A and B (registers) to the pairs
// Z2PAIR multiplies: the codes of shift 2m in Zm (m < 4). Clobbers Z4, Z5.
#define Z2CODES(A, B) \
	VMOVQ     (A), X4               \
	VPINSRQ   $1, (A)(CX*1), X4, X4 \
	VMOVQ     (B), X5               \
	VPINSRQ   $1, (B)(CX*1), X5, X5 \
	VPMOVZXBD X4, Z4                \
	VPMOVZXBD X5, Z5                \
	VPSLLD    $16, Z5, Z5           \
	VPORD     Z5, Z4, Z4            \
	VPANDD    Z15, Z4, Z0           \
	VPSRLW    $2, Z4, Z1            \
	VPANDD    Z15, Z1, Z1           \
	VPSRLW    $4, Z4, Z2            \
	VPANDD    Z15, Z2, Z2           \
	VPSRLW    $6, Z4, Z3

// Z2PAIR adds the codes of both groups of rows A and B (8 bytes each per group, the
// second group's CX bytes after the first's) times each query's [π_A, π_B] into
// Z16..Z31, as int32: each row's two groups' bytes widened to dwords (the first
// group's in lanes 0–7), B's shifted into the high words, and the codes of shift 2m
// go to query q's accumulator Z16+4q+m, lane j (j < 8) column 4j+m of the first
// group and lane 8+j of the second. Query q's weights are the dword at off(R12) + 8q
// in lanes 0–7 and the one 32 bytes on in lanes 8–15 (K3). Z15 holds the 2-bit
// mask; clobbers Z0..Z9.
#define Z2PAIR(A, B, off) \
	Z2CODES(A, B)                            \
	Z2QUERY(off, Z6, Z16, Z17, Z18, Z19)     \
	Z2QUERY(off+8, Z7, Z20, Z21, Z22, Z23)   \
	Z2QUERY(off+16, Z8, Z24, Z25, Z26, Z27)  \
	Z2QUERY(off+24, Z9, Z28, Z29, Z30, Z31)

// Z2QUERY builds one query's weights in w (the first group's pair at off(R12), the
// second's 32 bytes on) and adds the four code vectors Z0..Z3 times them into
// a0..a3.
#define Z2QUERY(off, w, a0, a1, a2, a3) \
	VPBROADCASTD off(R12), w          \
	VPBROADCASTD off+32(R12), K3, w   \
	VPDPWSSD     w, Z0, a0            \
	VPDPWSSD     w, Z1, a1            \
	VPDPWSSD     w, Z2, a2            \
	VPDPWSSD     w, Z3, a3

// Z2BLOCK adds a block's two row pairs (rows R9, R13; then R9 moved to row 2 and R13
// to row 3) with their weights at R12.
#define Z2BLOCK \
	Z2PAIR(R9, R13, 0)        \
	LEAQ   (R13)(R10*1), R9   \
	LEAQ   (R9)(R10*1), R13   \
	Z2PAIR(R9, R13, 4)

// Z2COLS puts one query's sums a0..a3 (Z2PAIR's lanes) in column order: a0 and a1
// get the first group's columns 0–15 and 16–31, a2 and a3 the second's. Clobbers
// Z0..Z3.
#define Z2COLS(a0, a1, a2, a3) \
	VPUNPCKLDQ  a1, a0, Z0         \
	VPUNPCKHDQ  a1, a0, Z1         \
	VPUNPCKLDQ  a3, a2, Z2         \
	VPUNPCKHDQ  a3, a2, Z3         \
	VPUNPCKLQDQ Z2, Z0, a0         \
	VPUNPCKHQDQ Z2, Z0, a1         \
	VPUNPCKLQDQ Z3, Z1, a2         \
	VPUNPCKHQDQ Z3, Z1, a3         \
	VSHUFI32X4  $0x44, a1, a0, Z0  \
	VSHUFI32X4  $0xee, a1, a0, Z1  \
	VSHUFI32X4  $0x44, a3, a2, Z2  \
	VSHUFI32X4  $0xee, a3, a2, Z3  \
	VSHUFI32X4  $0x88, Z2, Z0, a0  \
	VSHUFI32X4  $0xdd, Z2, Z0, a1  \
	VSHUFI32X4  $0x88, Z3, Z1, a2  \
	VSHUFI32X4  $0xdd, Z3, Z1, a3

// Z2SCALE turns one query's sums (Z2COLS's order) into float(sum)·P + Z, P and Z the
// float32s at P0 and Z0m for the first group, P1 and Z1m for the second. Clobbers
// Z0..Z3.
#define Z2SCALE(a0, a1, a2, a3, P0, Z0m, P1, Z1m) \
	VBROADCASTSS P0, Z0                \
	VBROADCASTSS Z0m, Z1               \
	VBROADCASTSS P1, Z2                \
	VBROADCASTSS Z1m, Z3               \
	VCVTDQ2PS    a0, a0                \
	VCVTDQ2PS    a1, a1                \
	VCVTDQ2PS    a2, a2                \
	VCVTDQ2PS    a3, a3                \
	VMULPS       Z0, a0, a0            \
	VMULPS       Z0, a1, a1            \
	VMULPS       Z2, a2, a2            \
	VMULPS       Z2, a3, a3            \
	VADDPS       Z1, a0, a0            \
	VADDPS       Z1, a1, a1            \
	VADDPS       Z3, a2, a2            \
	VADDPS       Z3, a3, a3

// Z2QOUT puts query q's sums a0..a3 (Z2PAIR's lanes) in column order and scales
// them.
#define Z2QOUT(a0, a1, a2, a3, q) \
	Z2COLS(a0, a1, a2, a3)    \
	Z2SCALE(a0, a1, a2, a3, Z16P+16*q(SP), Z16Z+16*q(SP), Z16P+64+16*q(SP), Z16Z+64+16*q(SP))

// func addU2Q4I16Z(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU2Q4I16Z(SB), $3328-96
	Z16START
	MOVL  $0xff00, AX
	KMOVW AX, K3
	Z16ROWS(Z2BLOCK, z16c<>+16(SB))
	Z2QOUT(Z16, Z17, Z18, Z19, 0)
	Z2QOUT(Z20, Z21, Z22, Z23, 1)
	Z2QOUT(Z24, Z25, Z26, Z27, 2)
	Z2QOUT(Z28, Z29, Z30, Z31, 3)
	MOVQ  a0+0(FP), SI
	MOVQ  a1+8(FP), DI
	MOVQ  a2+16(FP), AX
	MOVQ  a3+24(FP), DX
	Z16ACC(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
	VZEROUPPER
	RET

// The one-query twins addU4Q1I16Z and addU2Q1I16Z: addU4Q1I16's and addU2Q1I16's
// frame and prologue (I16PRE, i16pre_amd64.h), then rows as the four-query kernels
// read them, one VPDPWSSD per 16 columns of a row pair (both groups' columns of
// 2-bit rows at once), the sums of a block's first pair in Z16..Z19 and of its
// second in Z20..Z23 (two chains), added at the end: integer sums, the twins' bit
// for bit, and so the same floats after.

// Z1U4PAIR adds the codes of rows A and B (both groups: AG and BG, gb bytes on) times
// their weight dwords at off(R12) (the first group's) and off+16(R12) into the even
// and odd columns' sums e0, o0 (the first group) and e1, o1.
#define Z1U4PAIR(A, B, AG, BG, off, e0, o0, e1, o1) \
	Z4CODES(A, B)                     \
	VPDPWSSD.BCST off(R12), Z1, e0    \
	VPDPWSSD.BCST off(R12), Z0, o0    \
	Z4CODES(AG, BG)                   \
	VPDPWSSD.BCST off+16(R12), Z1, e1 \
	VPDPWSSD.BCST off+16(R12), Z0, o1

// Z1U4BLOCK adds a block's two row pairs (rows R9, R13; then R9 moved to row 2 and
// R13 to row 3), their weights at R12 (I16PRE's: 32 bytes per pair).
#define Z1U4BLOCK \
	LEAQ (R9)(CX*1), AX                                                 \
	LEAQ (R13)(CX*1), BX                                                \
	Z1U4PAIR((R9), (R13), (AX), (BX), 0, Z16, Z17, Z18, Z19)            \
	LEAQ (R13)(R10*1), R9                                               \
	LEAQ (R9)(R10*1), R13                                               \
	LEAQ (R9)(CX*1), AX                                                 \
	LEAQ (R13)(CX*1), BX                                                \
	Z1U4PAIR((R9), (R13), (AX), (BX), 32, Z20, Z21, Z22, Z23)

// Z1U2PAIR adds the codes of both groups of rows A and B times their weights (the
// dword at off(R12) in lanes 0–7, the one 16 bytes on in lanes 8–15: K3) into a0..a3
// (Z2PAIR's lanes).
#define Z1U2PAIR(A, B, off, a0, a1, a2, a3) \
	Z2CODES(A, B)                    \
	VPBROADCASTD off(R12), Z6        \
	VPBROADCASTD off+16(R12), K3, Z6 \
	VPDPWSSD     Z6, Z0, a0          \
	VPDPWSSD     Z6, Z1, a1          \
	VPDPWSSD     Z6, Z2, a2          \
	VPDPWSSD     Z6, Z3, a3

#define Z1U2BLOCK \
	Z1U2PAIR(R9, R13, 0, Z16, Z17, Z18, Z19)  \
	LEAQ     (R13)(R10*1), R9                  \
	LEAQ     (R9)(R10*1), R13                  \
	Z1U2PAIR(R9, R13, 32, Z20, Z21, Z22, Z23)

// Z1ROWS runs BLOCK over the nb blocks of four rows (I16LOOP) with Z16..Z23 zeroed
// first and Z15 the code mask at MASK, and leaves the two chains' sums added in
// Z16..Z19.
#define Z1ROWS(BLOCK, MASK) Z1ROWSS(BLOCK, MASK, 64)

// Z1ROWSS is Z1ROWS with the blocks' weights STEP bytes apart.
#define Z1ROWSS(BLOCK, MASK, STEP) \
	Z16ZERO8                             \
	VPBROADCASTD MASK, Z15               \
	I16LOOP(I16PI, STEP, I16PF3, BLOCK, z1blk) \
	VPADDD       Z20, Z16, Z16           \
	VPADDD       Z21, Z17, Z17           \
	VPADDD       Z22, Z18, Z18           \
	VPADDD       Z23, Z19, Z19

// Z4END and Z2END scale the columns' integer sums Z16..Z19 of 4-bit and 2-bit rows
// (I16P, I16Z), add them to a (DI) and return.
#define Z4END \
	VMOVDQU64 z16perm<>+0(SB), Z13               \
	VMOVDQU64 z16perm<>+64(SB), Z14              \
	Z16SCALE(Z16, Z17, I16P(SP), I16Z(SP))       \
	Z16SCALE(Z18, Z19, I16P+16(SP), I16Z+16(SP)) \
	Z16ADD(DI, Z16, Z17, Z18, Z19)               \
	Z16STORE(DI, Z16, Z17, Z18, Z19)             \
	VZEROUPPER                                   \
	RET

#define Z2END \
	Z2COLS(Z16, Z17, Z18, Z19)                                                \
	Z2SCALE(Z16, Z17, Z18, Z19, I16P(SP), I16Z(SP), I16P+16(SP), I16Z+16(SP)) \
	Z16ADD(DI, Z16, Z17, Z18, Z19)                                            \
	Z16STORE(DI, Z16, Z17, Z18, Z19)                                          \
	VZEROUPPER                                                                \
	RET

// func addU4Q1I16Z(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU4Q1I16Z(SB), $1600-48
	I16ARGS
	I16PRE
	Z1ROWS(Z1U4BLOCK, z16c<>+4(SB))
	Z4END

// func addU2Q1I16Z(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU2Q1I16Z(SB), $1600-48
	I16ARGS
	I16PRE
	MOVL  $0xff00, AX
	KMOVW AX, K3
	Z1ROWS(Z1U2BLOCK, z16c<>+16(SB))
	Z2END

// addU2Q1I16ZC is addU2Q1I16Z for rows of one pair of groups that follow one another
// (24 bytes each), with AVX-512 VBMI and GFNI: a block's 96 bytes are read in two
// loads, and permutes pick out of them the rows' scales and zeros (P2SZC, word
// permutes) and each row pair's codes already widened and interleaved as Z2CODES
// leaves them (byte permutes, zero-masked), whose four 2-bit planes are one
// VGF2P8AFFINEQB each (a bit matrix taking bits 2m and 2m+1 of each byte to bits 0
// and 1) instead of a shift and an AND. The integer sums, the products and their
// roundings are addU2Q1I16Z's: the same sums bit for bit.
//
// z2cidx: the word indexes of P2SZC (rows r at words 12r: scales of the first group
// to words 0–3, of the second to 4–7, zeros to 8–11 and 12–15), then the byte
// indexes of rows 0 and 1 (from the block's first 64 bytes) and of rows 2 and 3 (from
// its 96): dword j of a pair is [code byte j of the first row, 0, of the second, 0]
// with the zero bytes masked (K4); code byte j is at 4 + j of a row (the first
// group's) or 8 + j (j ≥ 8: the second group's, after its scale and zero).
// z2gf: the four planes' bit matrices.
DATA z2cidx<>+0(SB)/8, $0x00240018000c0000
DATA z2cidx<>+8(SB)/8, $0x002a001e00120006
DATA z2cidx<>+16(SB)/8, $0x00250019000d0001
DATA z2cidx<>+24(SB)/8, $0x002b001f00130007
DATA z2cidx<>+32(SB)/8, $0x0000000000000000
DATA z2cidx<>+40(SB)/8, $0x0000000000000000
DATA z2cidx<>+48(SB)/8, $0x0000000000000000
DATA z2cidx<>+56(SB)/8, $0x0000000000000000
DATA z2cidx<>+64(SB)/8, $0x001d0005001c0004
DATA z2cidx<>+72(SB)/8, $0x001f0007001e0006
DATA z2cidx<>+80(SB)/8, $0x0021000900200008
DATA z2cidx<>+88(SB)/8, $0x0023000b0022000a
DATA z2cidx<>+96(SB)/8, $0x0029001100280010
DATA z2cidx<>+104(SB)/8, $0x002b0013002a0012
DATA z2cidx<>+112(SB)/8, $0x002d0015002c0014
DATA z2cidx<>+120(SB)/8, $0x002f0017002e0016
DATA z2cidx<>+128(SB)/8, $0x004d0035004c0034
DATA z2cidx<>+136(SB)/8, $0x004f0037004e0036
DATA z2cidx<>+144(SB)/8, $0x0051003900500038
DATA z2cidx<>+152(SB)/8, $0x0053003b0052003a
DATA z2cidx<>+160(SB)/8, $0x0059004100580040
DATA z2cidx<>+168(SB)/8, $0x005b0043005a0042
DATA z2cidx<>+176(SB)/8, $0x005d0045005c0044
DATA z2cidx<>+184(SB)/8, $0x005f0047005e0046
GLOBL z2cidx<>(SB), RODATA|NOPTR, $192
DATA z2gf<>+0(SB)/8, $0x0102000000000000
DATA z2gf<>+8(SB)/8, $0x0408000000000000
DATA z2gf<>+16(SB)/8, $0x1020000000000000
DATA z2gf<>+24(SB)/8, $0x4080000000000000
GLOBL z2gf<>(SB), RODATA|NOPTR, $32

// P2SZC is P2SZ for the block of four rows of one pair that follow one another at r0
// (24 bytes each; r1..r3 are not read): Y10 the scales, Y11 the zeros, in P2SZ's
// lanes, through one word permute (Z24: z2cidx). Clobbers Z8, Z9.
#define P2SZC(r0, r1, r2, r3) \
	VMOVDQU64     -4(r0), Z8        \
	VMOVDQU       60(r0), Y9        \
	VPERMT2W      Z9, Z24, Z8       \
	VCVTPH2PS     X8, Y10           \
	VEXTRACTI128  $1, Y8, X11       \
	VCVTPH2PS     X11, Y11

// Z2PLANESG leaves in Z0..Z3 the 2-bit planes of the codes in c (Z2CODES's output
// from its widened codes), one VGF2P8AFFINEQB each (z2gf).
#define Z2PLANESG(c) \
	VGF2P8AFFINEQB.BCST $0, z2gf<>+0(SB), c, Z0  \
	VGF2P8AFFINEQB.BCST $0, z2gf<>+8(SB), c, Z1  \
	VGF2P8AFFINEQB.BCST $0, z2gf<>+16(SB), c, Z2 \
	VGF2P8AFFINEQB.BCST $0, z2gf<>+24(SB), c, Z3

// Z1U2PAIRC adds the planes Z0..Z3 of a row pair times its weights (I16ROUNDC's
// dwords at off0(R12), the first group's, and off1(R12)) into a0..a3.
#define Z1U2PAIRC(off0, off1, a0, a1, a2, a3) \
	VPBROADCASTD off0(R12), Z6       \
	VPBROADCASTD off1(R12), K3, Z6   \
	VPDPWSSD     Z6, Z0, a0          \
	VPDPWSSD     Z6, Z1, a1          \
	VPDPWSSD     Z6, Z2, a2          \
	VPDPWSSD     Z6, Z3, a3

// Z1U2BLOCKC is Z1U2BLOCK for a block of rows that follow one another (R9 row 0's
// codes; Z25, Z26 the byte permutes, K4 the even bytes).
#define Z1U2BLOCKC \
	VMOVDQU64  -4(R9), Z4                       \
	VMOVDQU    60(R9), Y5                       \
	VPERMB.Z   Z4, Z25, K4, Z7                  \
	Z2PLANESG(Z7)                               \
	Z1U2PAIRC(0, 8, Z16, Z17, Z18, Z19)         \
	VPERMT2B.Z Z5, Z26, K4, Z4                  \
	Z2PLANESG(Z4)                               \
	Z1U2PAIRC(4, 12, Z20, Z21, Z22, Z23)        \
	LEAQ       (R9)(R10*2), R9                  \
	LEAQ       (R9)(R10*1), R13

// I16ROUNDC is I16ROUND with the roundings packed, 16 bytes per block (the dwords of
// rows 0–1 and 2–3 of the first group, then of the second: VPMOVSDW's order, no
// permute), two blocks per step.
#define I16ROUNDC \
	VINSERTF64X4 $1, Y10, Z10, Z10 \
	MOVQ         R11, DX           \
	MOVQ         SP, R8            \
	LEAQ         I16PI(SP), R12    \
	SHRQ         $1, DX            \
	JZ           rcone             \
rc2:                               \
	VMULPS       (R8), Z10, Z8     \
	VCVTPS2DQ    Z8, Z8            \
	VPMOVSDW     Z8, (R12)         \
	ADDQ         $64, R8           \
	ADDQ         $32, R12          \
	DECQ         DX                \
	JNZ          rc2               \
rcone:                             \
	TESTQ        $1, R11           \
	JZ           rcdone            \
	VMULPS       (R8), Y10, Y8     \
	VCVTPS2DQ    Y8, Y8            \
	VPMOVSDW     Y8, (R12)         \
rcdone:

// func addU2Q1I16ZC(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU2Q1I16ZC(SB), $1600-48
	I16ARGS
	VMOVDQU64 z2cidx<>+0(SB), Z24
	I16PASS1(P2SZC)
	I16ROUNDC
	MOVL      $0xff00, AX
	KMOVW     AX, K3
	VMOVDQU64 z2cidx<>+64(SB), Z25
	VMOVDQU64 z2cidx<>+128(SB), Z26
	MOVQ      $0x5555555555555555, AX
	KMOVQ     AX, K4
	Z1ROWSS(Z1U2BLOCKC, z16c<>+16(SB), 16)
	Z2END

// addU4Q1I16ZC is addU4Q1I16Z for rows of one pair of groups that follow one another
// (40 bytes each), with AVX-512 VBMI, as addU2Q1I16ZC is for 2-bit rows: a block's
// scales and zeros in one word permute of two loads (P2SZC4), each row pair's codes
// of a group widened and interleaved as Z4CODES leaves them by one zero-masked byte
// permute of the block's 160 bytes (three loads), the roundings packed (I16ROUNDC).
// The same sums bit for bit.
//
// z4cidx: P2SZC4's word indexes (rows 0–1 from the block's first 64 bytes, rows 2–3
// from the 64 at byte 80); then the byte indexes of rows 0–1's first and second
// group (from bytes 0–127), of rows 2–3's (from bytes 64–159): dword j of a pair is
// [code byte j of the first row, 0, of the second, 0], code byte j of group k at
// 4 + 20k + j of a row.
DATA z4cidx<>+0(SB)/8, $0x0034002000140000
DATA z4cidx<>+8(SB)/8, $0x003e002a001e000a
DATA z4cidx<>+16(SB)/8, $0x0035002100150001
DATA z4cidx<>+24(SB)/8, $0x003f002b001f000b
DATA z4cidx<>+32(SB)/8, $0x0000000000000000
DATA z4cidx<>+40(SB)/8, $0x0000000000000000
DATA z4cidx<>+48(SB)/8, $0x0000000000000000
DATA z4cidx<>+56(SB)/8, $0x0000000000000000
DATA z4cidx<>+64(SB)/8, $0x002d0005002c0004
DATA z4cidx<>+72(SB)/8, $0x002f0007002e0006
DATA z4cidx<>+80(SB)/8, $0x0031000900300008
DATA z4cidx<>+88(SB)/8, $0x0033000b0032000a
DATA z4cidx<>+96(SB)/8, $0x0035000d0034000c
DATA z4cidx<>+104(SB)/8, $0x0037000f0036000e
DATA z4cidx<>+112(SB)/8, $0x0039001100380010
DATA z4cidx<>+120(SB)/8, $0x003b0013003a0012
DATA z4cidx<>+128(SB)/8, $0x0041001900400018
DATA z4cidx<>+136(SB)/8, $0x0043001b0042001a
DATA z4cidx<>+144(SB)/8, $0x0045001d0044001c
DATA z4cidx<>+152(SB)/8, $0x0047001f0046001e
DATA z4cidx<>+160(SB)/8, $0x0049002100480020
DATA z4cidx<>+168(SB)/8, $0x004b0023004a0022
DATA z4cidx<>+176(SB)/8, $0x004d0025004c0024
DATA z4cidx<>+184(SB)/8, $0x004f0027004e0026
DATA z4cidx<>+192(SB)/8, $0x003d0015003c0014
DATA z4cidx<>+200(SB)/8, $0x003f0017003e0016
DATA z4cidx<>+208(SB)/8, $0x0041001900400018
DATA z4cidx<>+216(SB)/8, $0x0043001b0042001a
DATA z4cidx<>+224(SB)/8, $0x0045001d0044001c
DATA z4cidx<>+232(SB)/8, $0x0047001f0046001e
DATA z4cidx<>+240(SB)/8, $0x0049002100480020
DATA z4cidx<>+248(SB)/8, $0x004b0023004a0022
DATA z4cidx<>+256(SB)/8, $0x0051002900500028
DATA z4cidx<>+264(SB)/8, $0x0053002b0052002a
DATA z4cidx<>+272(SB)/8, $0x0055002d0054002c
DATA z4cidx<>+280(SB)/8, $0x0057002f0056002e
DATA z4cidx<>+288(SB)/8, $0x0059003100580030
DATA z4cidx<>+296(SB)/8, $0x005b0033005a0032
DATA z4cidx<>+304(SB)/8, $0x005d0035005c0034
DATA z4cidx<>+312(SB)/8, $0x005f0037005e0036
GLOBL z4cidx<>(SB), RODATA|NOPTR, $320

// P2SZC4 is P2SZC for the block of four 4-bit rows at r0 (40 bytes each). Z24:
// z4cidx. Clobbers Z8, Z9.
#define P2SZC4(r0, r1, r2, r3) \
	VMOVDQU64     -4(r0), Z8        \
	VMOVDQU64     76(r0), Z9        \
	VPERMT2W      Z9, Z24, Z8       \
	VCVTPH2PS     X8, Y10           \
	VEXTRACTI128  $1, Y8, X11       \
	VCVTPH2PS     X11, Y11

// Z4DPC adds the low nibbles (even columns) of the words in c times the weights at
// off(R12) into e and the high ones into o. Clobbers Z1, Z2.
#define Z4DPC(c, off, e, o) \
	VPANDD        Z15, c, Z1         \
	VPSRLW        $4, c, Z2          \
	VPDPWSSD.BCST off(R12), Z1, e    \
	VPDPWSSD.BCST off(R12), Z2, o

// Z1U4BLOCKC is Z1U4BLOCK for a block of rows that follow one another (R9 row 0's
// codes; Z25..Z28 the byte permutes, K4 the even bytes; the weights I16ROUNDC's).
#define Z1U4BLOCKC \
	VMOVDQU64  -4(R9), Z4                   \
	VMOVDQU64  60(R9), Z5                   \
	VMOVDQU    124(R9), Y7                  \
	VMOVDQA64  Z25, Z0                      \
	VPERMI2B.Z Z5, Z4, K4, Z0               \
	Z4DPC(Z0, 0, Z16, Z17)                  \
	VPERMT2B.Z Z5, Z26, K4, Z4              \
	Z4DPC(Z4, 8, Z18, Z19)                  \
	VMOVDQA64  Z27, Z0                      \
	VPERMI2B.Z Z7, Z5, K4, Z0               \
	Z4DPC(Z0, 4, Z20, Z21)                  \
	VPERMT2B.Z Z7, Z28, K4, Z5              \
	Z4DPC(Z5, 12, Z22, Z23)                 \
	LEAQ       (R9)(R10*2), R9              \
	LEAQ       (R9)(R10*1), R13

// func addU4Q1I16ZC(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU4Q1I16ZC(SB), $1600-48
	I16ARGS
	VMOVDQU64    z4cidx<>+0(SB), Z24
	I16PASS1(P2SZC4)
	I16ROUNDC
	VMOVDQU64    z4cidx<>+64(SB), Z25
	VMOVDQU64    z4cidx<>+128(SB), Z26
	VMOVDQU64    z4cidx<>+192(SB), Z27
	VMOVDQU64    z4cidx<>+256(SB), Z28
	MOVQ         $0x5555555555555555, AX
	KMOVQ        AX, K4
	Z1ROWSS(Z1U4BLOCKC, z16c<>+4(SB), 16)
	Z4END

// The four-query integer value sums of Int8 rows (addInt8Q4I16Z): one f16 scale per
// row and signed codes, so a row's products w·scale and their roundings serve all its
// columns, and no zero sums. Frame: the products, 64 bytes per block (lanes 4q..4q+3
// query q's rows 0–3) at 0; their roundings, 32 bytes per block (query q's words of
// rows 0–3 at 8q) at I8ZPI; the factors P (lane 4q query q's) at I8ZP.

#define I8ZPI 1024
#define I8ZP 1536

// I8ZPRE fills the frame from the nb blocks of four rows (R9 the first row's scale,
// R10 stride, R11 nb; SI, DI, AX, DX the four queries' weights), as Z16PRE for one
// group: per block the rows' scales (R9, R13, R12, BX) spread to the four lanes times
// the weights give the products; then per query m = max|p|, P = m/32767 plus Σp·0
// (Z6) and π = round(p·32767/m) (0 when m < 2^-112). Clobbers AX, BX, DX, SI, DI, R8,
// R9, R12..R14, K1, Z0..Z19.
#define I8ZPRE \
	MOVQ         R11, R14            \
	MOVQ         SP, R8              \
	VPBROADCASTD z16c<>+0(SB), Z17   \
	VPXORD       Z16, Z16, Z16       \
	VPXORD       Z6, Z6, Z6          \
	VPXORD       Z13, Z13, Z13       \
i8zblk:                              \
	LEAQ          (R9)(R10*1), R13    \
	LEAQ          (R13)(R10*1), R12   \
	LEAQ          (R12)(R10*1), BX    \
	PREFETCH4(R9, R13, R12, BX)       \
	VPXOR         X8, X8, X8          \
	VPINSRW       $0, (R9), X8, X8    \
	VPINSRW       $1, (R13), X8, X8   \
	VPINSRW       $2, (R12), X8, X8   \
	VPINSRW       $3, (BX), X8, X8    \
	VCVTPH2PS     X8, X8              \
	VSHUFF32X4    $0x00, Z8, Z8, Z0   \
	VMOVUPS       (SI), X12           \
	VINSERTF32X4  $1, (DI), Z12, Z12  \
	VINSERTF32X4  $2, (AX), Z12, Z12  \
	VINSERTF32X4  $3, (DX), Z12, Z12  \
	VMULPS        Z12, Z0, Z0         \
	VFMADD231PS   Z16, Z0, Z6         \
	VMOVUPS       Z0, (R8)            \
	VPANDD        Z17, Z0, Z18        \
	VMAXPS        Z18, Z13, Z13       \
	LEAQ          (BX)(R10*1), R9     \
	ADDQ          $16, SI             \
	ADDQ          $16, DI             \
	ADDQ          $16, AX             \
	ADDQ          $16, DX             \
	ADDQ          $64, R8             \
	DECQ          R14                 \
	JNZ           i8zblk              \
	ZFACTORS(Z13, Z6, I8ZP, Z2)       \
	MOVQ          R11, BX             \
	MOVQ          SP, R8              \
	LEAQ          I8ZPI(SP), R12      \
i8zround:                             \
	ZROUND(0, Z2, 0)                  \
	ADDQ          $64, R8             \
	ADDQ          $32, R12            \
	DECQ          BX                  \
	JNZ           i8zround

// I8ZPAIR adds the 64 codes at off (bytes past the scale) of rows A and B times
// each query's [π_A, π_B] (the dword at W(R12) + 8q) into Z16..Z31, as int32: each row's
// codes sign-extended to words, the two rows' words interleaved (VPUNPCK*WD) so that
// a dword holds a column's pair, the low unpack's lanes 4j..4j+3 columns
// 8j..8j+3 of 32 and the high one's 8j+4..8j+7; query q's sums of columns 0–31 go
// to Z16+2q (low) and Z17+2q, of 32–63 to Z24+2q and Z25+2q. Clobbers Z0..Z5.
#define I8ZPAIR(A, B, off, W) \
	VPMOVSXBW     off(A), Z0              \
	VPMOVSXBW     off(B), Z1              \
	VPUNPCKLWD    Z1, Z0, Z2              \
	VPUNPCKHWD    Z1, Z0, Z3              \
	VPMOVSXBW     off+32(A), Z0           \
	VPMOVSXBW     off+32(B), Z1           \
	VPUNPCKLWD    Z1, Z0, Z4              \
	VPUNPCKHWD    Z1, Z0, Z5              \
	I8ZQUERY(W, Z16, Z17, Z24, Z25)       \
	I8ZQUERY(W+8, Z18, Z19, Z26, Z27)     \
	I8ZQUERY(W+16, Z20, Z21, Z28, Z29)    \
	I8ZQUERY(W+24, Z22, Z23, Z30, Z31)

// I8ZQUERY adds one query's products of the code vectors Z2..Z5 with its [π_A, π_B]
// at W(R12) into a0..a3.
#define I8ZQUERY(W, a0, a1, a2, a3) \
	VPDPWSSD.BCST W(R12), Z2, a0 \
	VPDPWSSD.BCST W(R12), Z3, a1 \
	VPDPWSSD.BCST W(R12), Z4, a2 \
	VPDPWSSD.BCST W(R12), Z5, a3

// I8ZBLOCK adds a block's two row pairs (rows R9, R13; then R9 moved to row 2 and
// R13 to row 3) with their weights at R12.
#define I8ZBLOCK \
	I8ZPAIR(R9, R13, 0, 0)   \
	LEAQ (R13)(R10*1), R9    \
	LEAQ (R9)(R10*1), R13    \
	I8ZPAIR(R9, R13, 0, 4)

// I8ZSCALE turns query q's sums of 32 columns (lo and hi, I8ZPAIR's lanes) into
// float(sum)·P (lane 4q of the factors) in column order: columns 0–15 into lo,
// 16–31 into hi. Z13 and Z14 hold z16perm; clobbers Z0, Z2.
#define I8ZSCALE(lo, hi, q) \
	VBROADCASTSS I8ZP+16*q(SP), Z0 \
	VCVTDQ2PS    lo, lo            \
	VCVTDQ2PS    hi, hi            \
	VMULPS       Z0, lo, lo        \
	VMULPS       Z0, hi, hi        \
	VMOVAPS      lo, Z2            \
	VPERMT2PS    hi, Z13, lo       \
	VPERMT2PS    hi, Z14, Z2       \
	VMOVAPS      Z2, hi

// func addInt8Q4I16Z(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, nb, d int)
TEXT ·addInt8Q4I16Z(SB), $1600-96
	MOVQ w0+32(FP), SI
	MOVQ w1+40(FP), DI
	MOVQ w2+48(FP), AX
	MOVQ w3+56(FP), DX
	MOVQ rows+64(FP), R9
	MOVQ stride+72(FP), R10
	MOVQ nb+80(FP), R11
	I8ZPRE
	VMOVDQU64 z16perm<>+0(SB), Z13
	VMOVDQU64 z16perm<>+64(SB), Z14
	XORQ      CX, CX // byte offset of the 64 columns, past the scale

i8zcols:
	Z16ZERO
	MOVQ   rows+64(FP), R9
	LEAQ   2(R9)(CX*1), R9

	// While adding, ask for the next call's rows (I16LOOP, 5 lines per block): the pass
	// over the products reads only the rows' scales, too fast for its own prefetch to
	// stay ahead (q8 decode attention at 32k took 8–11% longer without).
	I16LOOP(I8ZPI, 32, I16PF5, I8ZBLOCK, i8zblk2)

	// float(sum)·P per query in column order, added to the 64 columns from CX/4 of
	// a0..a3 (Z16ACC).
	I8ZSCALE(Z16, Z17, 0)
	I8ZSCALE(Z24, Z25, 0)
	I8ZSCALE(Z18, Z19, 1)
	I8ZSCALE(Z26, Z27, 1)
	I8ZSCALE(Z20, Z21, 2)
	I8ZSCALE(Z28, Z29, 2)
	I8ZSCALE(Z22, Z23, 3)
	I8ZSCALE(Z30, Z31, 3)
	MOVQ a0+0(FP), SI
	MOVQ a1+8(FP), DI
	MOVQ a2+16(FP), AX
	MOVQ a3+24(FP), DX
	LEAQ (SI)(CX*4), SI
	LEAQ (DI)(CX*4), DI
	LEAQ (AX)(CX*4), AX
	LEAQ (DX)(CX*4), DX
	Z16ACC(Z16, Z17, Z24, Z25, Z18, Z19, Z26, Z27, Z20, Z21, Z28, Z29, Z22, Z23, Z30, Z31)
	ADDQ $64, CX
	CMPQ CX, d+88(FP)
	JB   i8zcols
	VZEROUPPER
	RET
