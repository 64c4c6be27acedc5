//go:build amd64

#include "textflag.h"
#include "zrows4_amd64.h"
#include "prefetch_amd64.h"
#include "zi8codes_amd64.h"

// The four-query integer score kernels with ZMM registers and VPDPBUSD (AVX-512 VNNI):
// dotU4Q4I8P2Z, dotU4Q4I8Z, dotU2Q4I8Z and dotU2Q4ChanI8Z (declarations and contracts
// in lossy_i8_amd64.go). Four rows at a time, one row per 128-bit lane: a group's 32
// codes of each row fill two registers, 16 bytes per lane each (ZI8CODES4: the low
// and the high nibbles; ZI8CODES2: codes of shifts 0 and 2, then 4 and 6), each of
// which takes one VPDPBUSD per query against the query's 16 matching bytes broadcast
// to the four lanes. Lane r of query q's accumulator then holds four partial sums of
// row r; one transposing reduction (in ZI8SUMS) leaves lane r = row r's sums of the
// four queries, so that the scales need no permute per query and no horizontal adds
// (VPHADDW) are left. At the end, quantQuad2I8Z quantizes four queries for KIVI's
// 2-bit key blocks.

// zi8idx holds two VPERMPS index vectors: the f16 scales of four rows widened as
// [s0 z0 s1 z1 s2 z2 s3 z3] spread to each row's lane (s_r four times in lane r), and
// the same of the zeros.
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
GLOBL zi8idx<>(SB), RODATA|NOPTR, $128

// ZI8QUERY adds to Z the products of the codes Z3 and Z4 with one query's 16
// matching bytes of each, at lo and hi, broadcast to the four lanes.
#define ZI8QUERY(lo, hi, Z) \
	VBROADCASTI32X4 lo, Z12 \
	VPDPBUSD        Z12, Z3, Z \
	VBROADCASTI32X4 hi, Z13 \
	VPDPBUSD        Z13, Z4, Z

// ZI8SUMS leaves in Z14 the four rows' integer sums of one group (codes in Z3, Z4)
// with the four queries, converted to float32, lane r = row r's sums of queries 0–3:
// query r's bytes at qoff of SI, SI+BX, SI+2·BX and DX+2·BX (DX = SI+BX), those for
// Z4 hoff bytes after those for Z3. ZREDUCE4 reduces the four dwords of each lane of
// the accumulators Z8..Z11 (Z12, Z13 scratch).
#define ZI8SUMS(qoff, hoff) \
	VPXORD      Z8, Z8, Z8                              \
	VPXORD      Z9, Z9, Z9                              \
	VPXORD      Z10, Z10, Z10                           \
	VPXORD      Z11, Z11, Z11                           \
	ZI8QUERY(qoff(SI), qoff+hoff(SI), Z8)               \
	ZI8QUERY(qoff(SI)(BX*1), qoff+hoff(SI)(BX*1), Z9)   \
	ZI8QUERY(qoff(SI)(BX*2), qoff+hoff(SI)(BX*2), Z10)  \
	ZI8QUERY(qoff(DX)(BX*2), qoff+hoff(DX)(BX*2), Z11)  \
	ZREDUCE4(Z8, Z9, Z10, Z11, Z14)                     \
	VCVTDQ2PS   Z14, Z14

// ZI8AFFINE scales the sums Z14 of one group of Affine rows into F: the rows' f16
// scales and zeros, the 4 bytes at off of R8..R11, spread to their lanes (Z16, Z17),
// times the four queries' d_k at dq and d_k·Σq̂ at eq (broadcast to the four lanes),
// in the order of the YMM kernels: F += sum·(s·d), then F += z·e.
#define ZI8AFFINE(off, dq, eq, F) \
	VMOVD           off(R8), X5          \
	VPINSRD         $1, off(R9), X5, X5  \
	VPINSRD         $2, off(R10), X5, X5 \
	VPINSRD         $3, off(R11), X5, X5 \
	VCVTPH2PS       X5, Y5               \
	VPERMPS         Z5, Z16, Z6          \
	VPERMPS         Z5, Z17, Z7          \
	VBROADCASTF32X4 dq, Z15              \
	VMULPS          Z15, Z6, Z6          \
	VFMADD231PS     Z6, Z14, F           \
	VBROADCASTF32X4 eq, Z15              \
	VFMADD231PS     Z15, Z7, F

// ZI8CHAN scales the sums Z14 of one group of Channel token rows into Z0 by the four
// queries' d_k at R12: Z0 += sum·d, as CHANSCALE4.
#define ZI8CHAN \
	VBROADCASTF32X4 (R12), Z15 \
	VFMADD231PS     Z15, Z14, Z0

// ZI8CHANTAIL adds the four queries' b (at R12, past the groups' factors), as
// CHANTAIL4.
#define ZI8CHANTAIL \
	VBROADCASTF32X4 (R12), Z15 \
	VADDPS          Z15, Z0, Z0

// ZI8NOTAIL adds nothing after the groups.
#define ZI8NOTAIL

// ZI8NEXT steps the four row pointers by CX (gb), to the next group.
#define ZI8NEXT \
	ADDQ CX, R8  \
	ADDQ CX, R9  \
	ADDQ CX, R10 \
	ADDQ CX, R11

// ZI8ARGS loads the constants and arguments: Z1 the code mask, Z16..Z18 the VPERMPS
// indexes, DI out, R15 the first row, R13 the blocks of four rows, BX 32·np (the bytes
// of one query's codes), CX gb.
#define ZI8ARGS(mask) \
	VPBROADCASTD mask, Z1                 \
	VMOVDQU32    zi8idx<>(SB), Z16        \
	VMOVDQU32    zi8idx<>+64(SB), Z17     \
	VMOVDQU32    ztr4<>(SB), Z18          \
	MOVQ         out+0(FP), DI            \
	MOVQ         rows+32(FP), R15         \
	MOVQ         n+48(FP), R13            \
	SHRQ         $2, R13                  \
	MOVQ         np+64(FP), BX            \
	SHLQ         $5, BX                   \
	MOVQ         gb+72(FP), CX

// ZI8BLOCK starts four rows at R15: SI and DX = SI+BX the queries' codes, R12 their
// factors, R14 np, R8..R11 the rows (their bytes ahead prefetched), Z0 and Z2
// zero. AX scratch.
#define ZI8BLOCK \
	MOVQ   q+24(FP), SI      \
	LEAQ   (SI)(BX*1), DX    \
	MOVQ   qf+56(FP), R12    \
	MOVQ   np+64(FP), R14    \
	MOVQ   stride+40(FP), AX \
	MOVQ   R15, R8           \
	LEAQ   (R8)(AX*1), R9    \
	LEAQ   (R9)(AX*1), R10   \
	LEAQ   (R10)(AX*1), R11  \
	PREFETCH4(R8, R9, R10, R11) \
	VPXORD Z0, Z0, Z0        \
	VPXORD Z2, Z2, Z2

// ZI8STORE transposes Z0 (lane r: row r's scores of the four queries) and stores lane
// q (query q's scores of the four rows) to DI + q·ldo for q < nq, then steps to the
// next block of four rows (R15, DI; label block) or returns after the last. AX
// scratch.
#define ZI8STORE(block) \
	VPERMPS       Z0, Z18, Z0       \
	MOVQ          DI, AX            \
	VMOVUPS       X0, (AX)          \
	CMPQ          nq+16(FP), $1     \
	JEQ           zstored           \
	ADDQ          ldo+8(FP), AX     \
	VEXTRACTF32X4 $1, Z0, (AX)      \
	CMPQ          nq+16(FP), $2     \
	JEQ           zstored           \
	ADDQ          ldo+8(FP), AX     \
	VEXTRACTF32X4 $2, Z0, (AX)      \
	CMPQ          nq+16(FP), $3     \
	JEQ           zstored           \
	ADDQ          ldo+8(FP), AX     \
	VEXTRACTF32X4 $3, Z0, (AX)      \
zstored:                            \
	ADDQ          $16, DI           \
	MOVQ          stride+40(FP), AX \
	LEAQ          (R15)(AX*4), R15  \
	DECQ          R13               \
	JNZ           block             \
	VZEROUPPER                      \
	RET

// ZI8PLAIN is the body of the kernels whose queries and factors are in group order
// (dotU4Q4I8Z, dotU2Q4I8Z, dotU2Q4ChanI8Z): per block of four rows and group, the
// codes (CODES), the sums with the four queries (their bytes for Z3, then those for
// Z4), SCALE into Z0, then TAIL after the last group.
#define ZI8PLAIN(CODES, SCALE, TAIL) \
zblock:                \
	ZI8BLOCK           \
zgroup:                \
	CODES(0)           \
	ZI8SUMS(0, 16)     \
	SCALE              \
	ZI8NEXT            \
	ADDQ $32, SI       \
	ADDQ $32, DX       \
	ADDQ $32, R12      \
	DECQ R14           \
	JNZ  zgroup        \
	TAIL               \
	ZI8STORE(zblock)

// ZI8AFFINEK scales one group of Affine rows with the factors in group order (d_k of
// the four queries, then their d_k·Σq̂).
#define ZI8AFFINEK ZI8AFFINE(-4, (R12), 16(R12), Z0)

// func dotU4Q4I8P2Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
//
// Per block of four rows and pair of groups k, k+1 (the queries and factors in pair
// order, as dotU4Q4I8P2 reads them): group k into Z0, group k+1 into Z2, the two
// added when the row block ends (the two lanes of dotU4Q4I8P2).
TEXT ·dotU4Q4I8P2Z(SB), NOSPLIT, $0-80
	ZI8ARGS(zi8nib<>(SB))

zp2block:
	ZI8BLOCK
	SHRQ $1, R14 // pairs of groups

zp2pair:
	ZI8CODES4(0)
	ZI8SUMS(0, 32)
	ZI8AFFINE(-4, (R12), 32(R12), Z0)
	ZI8NEXT
	ZI8CODES4(0)
	ZI8SUMS(16, 32)
	ZI8AFFINE(-4, 16(R12), 48(R12), Z2)
	ZI8NEXT
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, R12
	DECQ R14
	JNZ  zp2pair

	VADDPS Z2, Z0, Z0
	ZI8STORE(zp2block)

// func dotU4Q4I8Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
TEXT ·dotU4Q4I8Z(SB), NOSPLIT, $0-80
	ZI8ARGS(zi8nib<>(SB))
	ZI8PLAIN(ZI8CODES4, ZI8AFFINEK, ZI8NOTAIL)

// ZI8ARGS2 is ZI8ARGS for the 2-bit kernels: the 2-bit mask, and zi8sh2's spread and
// shifts in Z19..Z21 (ZI8CODES2).
#define ZI8ARGS2 \
	ZI8ARGS(zi8two<>(SB))              \
	VMOVDQU64 zi8sh2<>(SB), Z19        \
	VMOVDQU64 zi8sh2<>+64(SB), Z20     \
	VMOVDQU64 zi8sh2<>+128(SB), Z21

// func dotU2Q4I8Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
TEXT ·dotU2Q4I8Z(SB), NOSPLIT, $0-80
	ZI8ARGS2
	ZI8PLAIN(ZI8CODES2, ZI8AFFINEK, ZI8NOTAIL)

// func dotU2Q4ChanI8Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
TEXT ·dotU2Q4ChanI8Z(SB), NOSPLIT, $0-80
	ZI8ARGS2
	ZI8PLAIN(ZI8CODES2, ZI8CHAN, ZI8CHANTAIL)

// qq8perm: the VPERMT2PS indexes that put a group's 32 values (two vectors) in the
// order the 2-bit kernels unpack codes (i8Pos: code 4j+m at 8m+j), positions 0–15
// and then 16–31.
DATA qq8perm<>+0(SB)/8, $0x0000000400000000
DATA qq8perm<>+8(SB)/8, $0x0000000c00000008
DATA qq8perm<>+16(SB)/8, $0x0000001400000010
DATA qq8perm<>+24(SB)/8, $0x0000001c00000018
DATA qq8perm<>+32(SB)/8, $0x0000000500000001
DATA qq8perm<>+40(SB)/8, $0x0000000d00000009
DATA qq8perm<>+48(SB)/8, $0x0000001500000011
DATA qq8perm<>+56(SB)/8, $0x0000001d00000019
DATA qq8perm<>+64(SB)/8, $0x0000000600000002
DATA qq8perm<>+72(SB)/8, $0x0000000e0000000a
DATA qq8perm<>+80(SB)/8, $0x0000001600000012
DATA qq8perm<>+88(SB)/8, $0x0000001e0000001a
DATA qq8perm<>+96(SB)/8, $0x0000000700000003
DATA qq8perm<>+104(SB)/8, $0x0000000f0000000b
DATA qq8perm<>+112(SB)/8, $0x0000001700000013
DATA qq8perm<>+120(SB)/8, $0x0000001f0000001b
GLOBL qq8perm<>(SB), RODATA|NOPTR, $128

// qq8c: the |x| mask, 127 and 2^-120 (below it a group is taken as zero).
DATA qq8c<>+0(SB)/4, $0x7fffffff
DATA qq8c<>+4(SB)/4, $127.0
DATA qq8c<>+8(SB)/4, $0x03800000
GLOBL qq8c<>(SB), RODATA|NOPTR, $12

// QQ8RED leaves in every 128-bit lane of out the OP (VMAXPS, VADDPS, VPADDD) of the 16
// lanes of each of q0..q3, [q0 q1 q2 q3]: each 128-bit lane's (ZREDUCEOP), then the
// four lanes'. Clobbers Z12, Z13.
#define QQ8RED(OP, q0, q1, q2, q3, out) \
	ZREDUCEOP(OP, q0, q1, q2, q3, out)  \
	VSHUFF32X4 $0x4e, out, out, Z12     \
	OP         Z12, out, out            \
	VSHUFF32X4 $0xb1, out, out, Z12     \
	OP         Z12, out, out

// QQ8MAX reads one query's 32 values of the group at Q: the largest magnitude of each
// lane pair into m and their products with 0 added into f.
#define QQ8MAX(Q, m, f) \
	VPANDD      (Q), Z16, Z14    \
	VPANDD      64(Q), Z16, m    \
	VMAXPS      Z14, m, m        \
	VFMADD231PS (Q), Z17, f      \
	VFMADD231PS 64(Q), Z17, f

// QQ8CODES writes one query's 32 int8 codes of the group at Q (round(q·inv), inv
// lane r of Z11, spread by VSHUFPS imm) to C in the kernels' order, and their int32
// sum per lane into s. Clobbers Z8, Z9, Z12, Z13.
#define QQ8CODES(Q, imm, C, s) \
	VSHUFPS   imm, Z11, Z11, Z12 \
	VMULPS    (Q), Z12, Z8       \
	VMULPS    64(Q), Z12, Z13    \
	VMOVAPS   Z8, Z9             \
	VPERMT2PS Z13, Z18, Z8       \
	VPERMT2PS Z13, Z19, Z9       \
	VCVTPS2DQ Z8, Z8             \
	VCVTPS2DQ Z9, Z9             \
	VPADDD    Z9, Z8, s          \
	VPMOVSDB  Z8, X12            \
	VPMOVSDB  Z9, X13            \
	VMOVDQU   X12, (C)           \
	VMOVDQU   X13, 16(C)

// func quantQuad2I8Z(q8, qf, qs unsafe.Pointer, d int)
// quantQueryI8 of four queries for 2-bit rows, groups of 32 (query r's d values at
// qs + 4dr, its codes to q8 + dr, group k's d_k to qf + 32k + 4r and d_k·Σq̂ 16
// bytes on) with ZMM registers: the four queries' groups side by side, each value,
// code and factor quantQueryI8's, bit for bit (the codes where d_k is not NaN).
TEXT ·quantQuad2I8Z(SB), NOSPLIT, $0-32
	MOVQ         q8+0(FP), DI
	MOVQ         qf+8(FP), R8
	MOVQ         qs+16(FP), SI
	MOVQ         d+24(FP), CX
	LEAQ         (CX*4), BX
	LEAQ         (SI)(BX*1), R9
	LEAQ         (R9)(BX*1), R10
	LEAQ         (R10)(BX*1), R11
	LEAQ         (DI)(CX*1), R12
	LEAQ         (R12)(CX*1), R13
	LEAQ         (R13)(CX*1), R14
	SHRQ         $5, CX
	VPBROADCASTD qq8c<>+0(SB), Z16
	VPXORD       Z17, Z17, Z17
	VMOVDQU32    qq8perm<>(SB), Z18
	VMOVDQU32    qq8perm<>+64(SB), Z19
	VBROADCASTSS qq8c<>+4(SB), Z20
	VBROADCASTSS qq8c<>+8(SB), Z21

qq8group:
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	QQ8MAX(SI, Z0, Z4)
	QQ8MAX(R9, Z1, Z5)
	QQ8MAX(R10, Z2, Z6)
	QQ8MAX(R11, Z3, Z7)
	QQ8RED(VMAXPS, Z0, Z1, Z2, Z3, Z8)
	QQ8RED(VADDPS, Z4, Z5, Z6, Z7, Z9)
	// d = m/127 + Σq·0 and inv = 127/m; 0 (then d = Σq·0) below 2^-120 or for a NaN m.
	VCMPPS    $0x1d, Z21, Z8, K1
	VDIVPS    Z20, Z8, Z10
	VDIVPS    Z8, Z20, Z11
	VMOVAPS.Z Z10, K1, Z10
	VMOVAPS.Z Z11, K1, Z11
	VADDPS    Z9, Z10, Z10
	VMOVUPS   X10, (R8)
	QQ8CODES(SI, $0x00, DI, Z0)
	QQ8CODES(R9, $0x55, R12, Z1)
	QQ8CODES(R10, $0xaa, R13, Z2)
	QQ8CODES(R11, $0xff, R14, Z3)
	QQ8RED(VPADDD, Z0, Z1, Z2, Z3, Z8)
	VCVTDQ2PS Z8, Z8
	VMULPS    Z10, Z8, Z8
	VMOVUPS   X8, 16(R8)
	ADDQ      $128, SI
	ADDQ      $128, R9
	ADDQ      $128, R10
	ADDQ      $128, R11
	ADDQ      $32, DI
	ADDQ      $32, R12
	ADDQ      $32, R13
	ADDQ      $32, R14
	ADDQ      $32, R8
	DECQ      CX
	JNZ       qq8group
	VZEROUPPER
	RET
