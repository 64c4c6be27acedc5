//go:build amd64

#include "textflag.h"
#include "zrows4_amd64.h"
#include "prefetch_amd64.h"
#include "r4frame_amd64.h"
#include "i16r4_amd64.h"
#include "cqz_amd64.h"

// dotInt8Q4I16Z and dotU4Q4ChanI16Z (declarations and contracts in
// int8_i16_amd64.go): the four-query int16 scores of Int8 rows and of 4-bit KIVI key
// blocks with ZMM registers and VPDPWSSD (AVX-512 VNNI), and the one-query twins
// (dotInt8R4I16Z, dotU4ChanI16Z); at the end, the preparation
// of four queries for a KIVI key block (chanQuery4I16Z, channelQuery4Z). Four rows at a time in two
// pairs, one row per 256-bit half: 16 codes of each row of a pair, widened to words,
// take one VPDPWSSD per query against the query's 16 matching words broadcast to both
// halves. Each half of a query's accumulator then holds eight partial sums of its
// row; one transposing reduction (ZREDUCE4, then a join of the two pairs) leaves lane
// r = row r's sums of the four queries.

// I16ZQUERY adds to a and b the products of the widened codes x (rows 0 and 1) and
// y (rows 2 and 3) with the query's 16 words at addr, broadcast to both halves (Z15).
#define I16ZQUERY(addr, x, y, a, b) \
	VBROADCASTI64X4 addr, Z15 \
	VPDPWSSD        Z15, x, a \
	VPDPWSSD        Z15, y, b

// I16ZARGS loads the arguments and constants: DI out, SI..R11 the four
// queries (q + r·qs), R8 the first row, R12 stride, R13 the blocks of four rows, R14
// d; Z20 the queries' D (the float32 after each one's d codes), [D0 D1 D2 D3] in
// every lane; Z17 zspread4, Z18 ztr4. CX scratch.
#define I16ZARGS \
	MOVQ        out+0(FP), DI                 \
	MOVQ        q+16(FP), SI                  \
	MOVQ        qs+24(FP), CX                 \
	MOVQ        rows+32(FP), R8               \
	MOVQ        stride+40(FP), R12            \
	MOVQ        n+48(FP), R13                 \
	SHRQ        $2, R13                       \
	MOVQ        d+56(FP), R14                 \
	LEAQ        (SI)(CX*1), R9                \
	LEAQ        (R9)(CX*1), R10               \
	LEAQ        (R10)(CX*1), R11              \
	I16ZQUAD(0, X7)                           \
	VSHUFF32X4  $0, Z7, Z7, Z20               \
	VMOVDQU32   zspread4<>(SB), Z17         \
	VMOVDQU32   ztr4<>(SB), Z18

// I16ZQUAD gathers into x the float32 at off after each query's d codes, lane r from
// query r.
#define I16ZQUAD(off, x) \
	VMOVSS      off(SI)(R14*2), x             \
	VINSERTPS   $0x10, off(R9)(R14*2), x, x   \
	VINSERTPS   $0x20, off(R10)(R14*2), x, x  \
	VINSERTPS   $0x30, off(R11)(R14*2), x, x

// I16ZBLOCK starts four rows at R8: R15, CX, DX rows 1–3 (the bytes ahead of the
// four prefetched), the accumulators Z0..Z7 zero, the code index AX zero.
#define I16ZBLOCK \
	ZROWS4                  \
	PREFETCH4(R8, R15, CX, DX) \
	VPXORD Z0, Z0, Z0       \
	VPXORD Z1, Z1, Z1       \
	VPXORD Z2, Z2, Z2       \
	VPXORD Z3, Z3, Z3       \
	VPXORD Z4, Z4, Z4       \
	VPXORD Z5, Z5, Z5       \
	VPXORD Z6, Z6, Z6       \
	VPXORD Z7, Z7, Z7       \
	XORQ   AX, AX

// I16ZSUMS leaves in Z12 the four rows' integer sums of the four queries, lane r =
// row r's, converted to float32: the accumulators' lanes reduced (ZREDUCE4), then
// each row's two lanes added.
#define I16ZSUMS \
	ZREDUCE4(Z0, Z1, Z2, Z3, Z14) \
	ZREDUCE4(Z4, Z5, Z6, Z7, Z15) \
	VSHUFI64X2 $0x88, Z15, Z14, Z12 \
	VSHUFI64X2 $0xdd, Z15, Z14, Z13 \
	VPADDD     Z13, Z12, Z12        \
	VCVTDQ2PS  Z12, Z12

// I16ZSTORE transposes Z12 and stores lane q (query q's scores of the four rows) to
// DI + q·ldb, then steps to the next block of four rows (R8, DI; label block) or
// returns after the last. AX, BX scratch.
#define I16ZSTORE(block) \
	MOVQ          ldb+8(FP), BX       \
	ZSTORE4(X12, Z12, Z18)            \
	DECQ          R13                 \
	JNZ           block               \
	VZEROUPPER                        \
	RET

// func dotInt8Q4I16Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)
//
// Per block of four rows: the accumulators of rows 0–1 in Z0..Z3 and of rows 2–3 in
// Z4..Z7 (query r in the r-th of each), 16 codes of each row per step (after the
// row's f16 scale), then the sums scaled as dotInt8Q4I16 does (by the row's scale,
// then by the query's D: the same bits).
TEXT ·dotInt8Q4I16Z(SB), NOSPLIT, $0-64
	I16ZARGS

zblock:
	I16ZBLOCK

zloop:
	VMOVDQU     2(R8)(AX*1), X8
	VINSERTI128 $1, 2(R15)(AX*1), Y8, Y8
	VPMOVSXBW   Y8, Z8
	VMOVDQU     2(CX)(AX*1), X9
	VINSERTI128 $1, 2(DX)(AX*1), Y9, Y9
	VPMOVSXBW   Y9, Z9
	I16ZQUERY((SI)(AX*2), Z8, Z9, Z0, Z4)
	I16ZQUERY((R9)(AX*2), Z8, Z9, Z1, Z5)
	I16ZQUERY((R10)(AX*2), Z8, Z9, Z2, Z6)
	I16ZQUERY((R11)(AX*2), Z8, Z9, Z3, Z7)
	ADDQ $16, AX
	CMPQ AX, R14
	JB   zloop

	I16ZSUMS
	ZROWF16(0, X11, Z11, Z17)
	VMULPS    Z11, Z12, Z12
	VMULPS    Z20, Z12, Z12
	I16ZSTORE(zblock)

// I16ZNIBBLES leaves in lo and hi the words of channels c..c+15 and c+16..c+31 of two
// rows (the 16 code bytes at r0 and r1, channel 2j in the low nibble of byte j), in
// the order of a query split by splitEvenOdd (per 16 channels the even ones, then
// the odd ones), row r0 in the low halves: the bytes widened to words (lanes: r0's
// bytes 0–7, 8–15, r1's), their low and high nibbles (Z16 byte masks 0x0f; Z14
// scratch), whose lanes VPERMT2Q pairs (Z21, Z22).
#define I16ZNIBBLES(r0, r1, lo, hi) \
	VMOVDQU     r0, X14             \
	VINSERTI128 $1, r1, Y14, Y14    \
	VPMOVZXBW   Y14, hi             \
	VPSRLW      $4, hi, Z14         \
	VPANDD      Z16, hi, hi         \
	VPANDD      Z16, Z14, Z14       \
	VMOVDQA64   hi, lo              \
	VPERMT2Q    Z14, Z21, lo        \
	VPERMT2Q    Z14, Z22, hi

// i16znib holds the VPERMT2Q indexes of I16ZNIBBLES: the low and high nibbles of
// lanes 0 and 2, then of lanes 1 and 3.
DATA i16znib<>+0(SB)/8, $0
DATA i16znib<>+8(SB)/8, $1
DATA i16znib<>+16(SB)/8, $8
DATA i16znib<>+24(SB)/8, $9
DATA i16znib<>+32(SB)/8, $4
DATA i16znib<>+40(SB)/8, $5
DATA i16znib<>+48(SB)/8, $12
DATA i16znib<>+56(SB)/8, $13
DATA i16znib<>+64(SB)/8, $2
DATA i16znib<>+72(SB)/8, $3
DATA i16znib<>+80(SB)/8, $10
DATA i16znib<>+88(SB)/8, $11
DATA i16znib<>+96(SB)/8, $6
DATA i16znib<>+104(SB)/8, $7
DATA i16znib<>+112(SB)/8, $14
DATA i16znib<>+120(SB)/8, $15
GLOBL i16znib<>(SB), RODATA|NOPTR, $128

// func dotU4Q4ChanI16Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)
//
// dotInt8Q4I16Z's blocks for the token rows of a 4-bit KIVI key block: 32 channels of
// each row per step (16 code bytes, BX from 0), then the sums scaled as dotU4Q4ChanI16 does
// (times the query's D, plus its b: the same bits).
TEXT ·dotU4Q4ChanI16Z(SB), NOSPLIT, $0-64
	I16ZARGS
	I16ZQUAD(4, X6)
	VSHUFF32X4   $0, Z6, Z6, Z19
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VMOVDQU64    i16znib<>(SB), Z21
	VMOVDQU64    i16znib<>+64(SB), Z22

cblock:
	I16ZBLOCK
	XORQ BX, BX

cloop:
	I16ZNIBBLES((R8)(BX*1), (R15)(BX*1), Z8, Z9)
	I16ZNIBBLES((CX)(BX*1), (DX)(BX*1), Z10, Z11)
	I16ZQUERY((SI)(AX*2), Z8, Z10, Z0, Z4)
	I16ZQUERY(32(SI)(AX*2), Z9, Z11, Z0, Z4)
	I16ZQUERY((R9)(AX*2), Z8, Z10, Z1, Z5)
	I16ZQUERY(32(R9)(AX*2), Z9, Z11, Z1, Z5)
	I16ZQUERY((R10)(AX*2), Z8, Z10, Z2, Z6)
	I16ZQUERY(32(R10)(AX*2), Z9, Z11, Z2, Z6)
	I16ZQUERY((R11)(AX*2), Z8, Z10, Z3, Z7)
	I16ZQUERY(32(R11)(AX*2), Z9, Z11, Z3, Z7)
	ADDQ $32, AX
	ADDQ $16, BX
	CMPQ AX, R14
	JB   cloop

	I16ZSUMS
	VMULPS Z20, Z12, Z12
	VADDPS Z19, Z12, Z12
	I16ZSTORE(cblock)

// func dotInt8R4I16Z(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)
//
// dotInt8R4I16 with ZMM registers and VPDPWSSD for d a multiple of 32: per group of
// four rows, 32 codes of each per step into its own accumulator (Z0..Z3), whose two
// halves are added, then reduced and scaled as dotInt8R4I16 does: the sums are exact
// integers, so the scores are the same bits.
TEXT ·dotInt8R4I16Z(SB), NOSPLIT, $0-72
	I16R4ARGS

j1group:
	I16R4GROUP(j1done)

j1loop:
	VMOVDQU64 (SI)(AX*2), Z8
	VPMOVSXBW 2(R8)(AX*1), Z9
	VPMOVSXBW 2(BX)(AX*1), Z10
	VPMOVSXBW 2(CX)(AX*1), Z11
	VPMOVSXBW 2(DX)(AX*1), Z12
	VPDPWSSD  Z8, Z9, Z0
	VPDPWSSD  Z8, Z10, Z1
	VPDPWSSD  Z8, Z11, Z2
	VPDPWSSD  Z8, Z12, Z3
	ADDQ      $32, AX
	CMPQ      AX, R14
	JB        j1loop

	VEXTRACTI64X4 $1, Z0, Y4
	VEXTRACTI64X4 $1, Z1, Y5
	VEXTRACTI64X4 $1, Z2, Y6
	VEXTRACTI64X4 $1, Z3, Y9 // not Y7: X7 holds D
	VPADDD        Y4, Y0, Y0
	VPADDD        Y5, Y1, Y1
	VPADDD        Y6, Y2, Y2
	VPADDD        Y9, Y3, Y3
	SUMS4
	I16R4SCALE
	JMP           j1group

j1done:
	VZEROUPPER
	RET

// func dotU4ChanI16Z(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)
//
// dotU4ChanI16 (one query) with dotU4Q4ChanI16Z's rows: per block of four rows, the
// sums of rows 0–1 in Z0 and of rows 2–3 in Z2 (a row per 256-bit half), reduced as
// dotU4ChanI16 reduces its four (SUMS4), then scaled as it does (times D, plus b: the same
// bits). DX stride, BX the code bytes' offset, AX the channel.
TEXT ·dotU4ChanI16Z(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), DI
	MOVQ         q+8(FP), SI
	MOVQ         rows+16(FP), R8
	MOVQ         stride+24(FP), DX
	MOVQ         ng+32(FP), R13
	MOVQ         d+40(FP), R14
	VBROADCASTSS (SI)(R14*2), X7
	VBROADCASTSS 4(SI)(R14*2), X6
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VMOVDQU64    i16znib<>(SB), Z21
	VMOVDQU64    i16znib<>+64(SB), Z22

c1block:
	LEAQ   (R8)(DX*1), R9
	LEAQ   (R9)(DX*1), R10
	LEAQ   (R10)(DX*1), R11
	PREFETCH4(R8, R9, R10, R11)
	VPXORD Z0, Z0, Z0
	VPXORD Z2, Z2, Z2
	XORQ   AX, AX
	XORQ   BX, BX

c1loop:
	I16ZNIBBLES((R8)(BX*1), (R9)(BX*1), Z8, Z9)
	I16ZNIBBLES((R10)(BX*1), (R11)(BX*1), Z10, Z11)
	I16ZQUERY((SI)(AX*2), Z8, Z10, Z0, Z2)
	I16ZQUERY(32(SI)(AX*2), Z9, Z11, Z0, Z2)
	ADDQ $32, AX
	ADDQ $16, BX
	CMPQ AX, R14
	JB   c1loop

	VEXTRACTI64X4 $1, Z0, Y1
	VEXTRACTI64X4 $1, Z2, Y3
	SUMS4
	VMULPS        X7, X0, X0
	VADDPS        X6, X0, X0
	VMOVUPS       X0, (DI)
	ADDQ          $16, DI
	LEAQ          (R8)(DX*4), R8
	DECQ          R13
	JNZ           c1block
	VZEROUPPER
	RET

// cqzperm: the VPERMPS indexes of the 4-bit split (per 16 channels the even ones,
// then the odd ones) and of no split.
DATA cqzperm<>+0(SB)/8, $0x0000000200000000
DATA cqzperm<>+8(SB)/8, $0x0000000600000004
DATA cqzperm<>+16(SB)/8, $0x0000000a00000008
DATA cqzperm<>+24(SB)/8, $0x0000000e0000000c
DATA cqzperm<>+32(SB)/8, $0x0000000300000001
DATA cqzperm<>+40(SB)/8, $0x0000000700000005
DATA cqzperm<>+48(SB)/8, $0x0000000b00000009
DATA cqzperm<>+56(SB)/8, $0x0000000f0000000d
DATA cqzperm<>+64(SB)/8, $0x0000000100000000
DATA cqzperm<>+72(SB)/8, $0x0000000300000002
DATA cqzperm<>+80(SB)/8, $0x0000000500000004
DATA cqzperm<>+88(SB)/8, $0x0000000700000006
DATA cqzperm<>+96(SB)/8, $0x0000000900000008
DATA cqzperm<>+104(SB)/8, $0x0000000b0000000a
DATA cqzperm<>+112(SB)/8, $0x0000000d0000000c
DATA cqzperm<>+120(SB)/8, $0x0000000f0000000e
GLOBL cqzperm<>(SB), RODATA|NOPTR, $128

// CQZQUERY prepares 16 channels of one query (its values at Q+AX, the channels'
// scales in Z2 and zeros in Y0, Y1), as CQHALF twice and chanQueryI16F16C's loop:
// q·scale to D+AX (split by Z28), b += q·zero per half (b, as CQHALF's Y7), the
// largest |q·scale| into m and Σ q·scale·0 into f. Clobbers Z3, Z4.
#define CQZQUERY(Q, D, b, m, f) \
	VMULPS      (Q)(AX*1), Z2, Z3    \
	VFMADD231PS (Q)(AX*1), Y0, b     \
	VFMADD231PS 32(Q)(AX*1), Y1, b   \
	VPANDD      Z24, Z3, Z4          \
	VMAXPS      Z4, m, m             \
	VFMADD231PS Z3, Z25, f           \
	VPERMPS     Z3, Z28, Z3          \
	VMOVUPS     Z3, (D)(AX*1)

// CQZSCALE is CQZQUERY without the quantization's parts (the largest |q·scale|, Σ
// q·scale·0, the split): q·scale to D+AX and b += q·zero, for channelQuery4Z.
#define CQZSCALE(Q, D, b, m, f) \
	VMULPS      (Q)(AX*1), Z2, Z3    \
	VFMADD231PS (Q)(AX*1), Y0, b     \
	VFMADD231PS 32(Q)(AX*1), Y1, b   \
	VMOVUPS     Z3, (D)(AX*1)

// CQZFINAL turns one query's q·scale values at D into int16 codes, D and b, as
// I16QUANT with CQB (CX d): b from its lanes in Yb (Xb its low half), the largest
// |q·scale| from the lanes of m and Σ q·scale·0 from those of f. Labels zero, clear,
// code and done are the expansion's own. Clobbers AX, BX, X0..X5, Z4, Z5.
#define CQZFINAL(D, Yb, Xb, m, f, zero, clear, code, done) \
	CQZB(Yb, Xb)                         \
	VEXTRACTF64X4 $1, m, Y0              \
	VEXTRACTF64X4 $0, m, Y2              \
	VMAXPS        Y2, Y0, Y0             \
	VEXTRACTF64X4 $1, f, Y1              \
	VEXTRACTF64X4 $0, f, Y2              \
	VADDPS        Y2, Y1, Y1             \
	VEXTRACTF128  $1, Y0, X2             \
	VMAXPS        X2, X0, X0             \
	VPSHUFD       $0x4e, X0, X2          \
	VMAXPS        X2, X0, X0             \
	VPSHUFD       $0xb1, X0, X2          \
	VMAXPS        X2, X0, X0             \
	VEXTRACTF128  $1, Y1, X2             \
	VADDPS        X2, X1, X1             \
	VPSHUFD       $0x4e, X1, X2          \
	VADDPS        X2, X1, X1             \
	VPSHUFD       $0xb1, X1, X2          \
	VADDPS        X2, X1, X1             \
	MOVL          $0x08800000, BX        \
	VMOVD         BX, X2                 \
	VUCOMISS      X2, X0                 \
	JB            zero                   \
	MOVL          $0x46fffe00, BX        \
	VMOVD         BX, X2                 \
	VDIVSS        X2, X0, X3             \
	VDIVSS        X0, X2, X4             \
	VADDSS        X1, X3, X3             \
	VBROADCASTSS  X4, Z4                 \
	XORQ          AX, AX                 \
code:                                    \
	VMULPS        (D)(AX*4), Z4, Z5      \
	VCVTPS2DQ     Z5, Z5                 \
	VPMOVSDW      Z5, Y5                 \
	VMOVDQU       Y5, (D)(AX*2)          \
	ADDQ          $16, AX                \
	CMPQ          AX, CX                 \
	JB            code                   \
	VMOVSS        X3, (D)(CX*2)          \
	JMP           done                   \
zero:                                    \
	VPXOR         Y5, Y5, Y5             \
	XORQ          AX, AX                 \
clear:                                   \
	VMOVDQU       Y5, (D)(AX*2)          \
	ADDQ          $16, AX                \
	CMPQ          AX, CX                 \
	JB            clear                  \
	VMOVSS        X1, (D)(CX*2)          \
done:                                    \
	VMOVSS        Xb, 4(D)(CX*2)

// CQZBODY runs QUERY (CQZQUERY or CQZSCALE) over the d channels (CX) of the block at
// DX for the four queries from SI (4d bytes apart) into their slots from DI (as far
// apart), with the split index in Z28: each query's b in the lanes of Y8..Y11 and,
// with CQZQUERY, its largest |q·scale| in those of Z16..Z19 and Σ q·scale·0 in those
// of Z20..Z23; leaves the queries' slots in DI, R8, R10 and R14. label is the
// expansion's own. Clobbers AX, BX, DX, R11..R13, Z0..Z4, Z24..Z27.
#define CQZBODY(QUERY, label) \
	LEAQ         (CX*4), BX            \
	LEAQ         (SI)(BX*1), R11       \
	LEAQ         (R11)(BX*1), R12      \
	LEAQ         (R12)(BX*1), R13      \
	LEAQ         (DI)(BX*1), R8        \
	LEAQ         (R8)(BX*1), R10       \
	LEAQ         (R10)(BX*1), R14      \
	VMOVDQU32    cqzidx<>(SB), Z26     \
	VMOVDQU32    cqzidx<>+64(SB), Z27  \
	VPBROADCASTD cqzabs<>(SB), Z24     \
	VPXORD       Z25, Z25, Z25         \
	VXORPS       Y8, Y8, Y8            \
	VXORPS       Y9, Y9, Y9            \
	VXORPS       Y10, Y10, Y10         \
	VXORPS       Y11, Y11, Y11         \
	Z16ZERO8                           \
	XORQ         AX, AX                \
label:                                 \
	CQZWIDEN(0)                        \
	QUERY(SI, DI, Y8, Z16, Z20)        \
	QUERY(R11, R8, Y9, Z17, Z21)       \
	QUERY(R12, R10, Y10, Z18, Z22)     \
	QUERY(R13, R14, Y11, Z19, Z23)     \
	ADDQ          $64, DX              \
	ADDQ          $64, AX              \
	CMPQ          AX, BX               \
	JB            label

// func chanQuery4I16Z(dst, q, block unsafe.Pointer, d, split int)
// chanQueryI16F16C of four queries (query j's values at q + 4dj, its slot at dst +
// 4dj) with ZMM registers (haveVNNI512): each 16 channels' scales and zeros widened
// once for the four, each query's codes, D and b those chanQueryI16F16C gives it, bit
// for bit. d is a multiple of 16.
TEXT ·chanQuery4I16Z(SB), NOSPLIT, $0-40
	MOVQ      dst+0(FP), DI
	MOVQ      q+8(FP), SI
	MOVQ      block+16(FP), DX
	MOVQ      d+24(FP), CX
	VMOVDQU32 cqzperm<>(SB), Z28
	CMPQ      split+32(FP), $0
	JNE       cqzsplit
	VMOVDQU32 cqzperm<>+64(SB), Z28

cqzsplit:
	CQZBODY(CQZQUERY, cqzloop)
	CQZFINAL(DI, Y8, X8, Z16, Z20, cqzz0, cqzl0, cqzc0, cqzd0)
	CQZFINAL(R8, Y9, X9, Z17, Z21, cqzz1, cqzl1, cqzc1, cqzd1)
	CQZFINAL(R10, Y10, X10, Z18, Z22, cqzz2, cqzl2, cqzc2, cqzd2)
	CQZFINAL(R14, Y11, X11, Z19, Z23, cqzz3, cqzl3, cqzc3, cqzd3)
	VZEROUPPER
	RET

// func channelQuery4Z(qs, b, q, block unsafe.Pointer, d int)
// channelQueryF16C of four queries with ZMM registers (haveVNNI512): query r's d
// values at q + 4dr, its pre-scaled values q·scale to qs + 4dr and its b to b + 4r;
// each channel's scale and zero widened once for the four, every value and b
// channelQueryF16C's, bit for bit (CQZBODY with CQZSCALE). d is a multiple of 16.
TEXT ·channelQuery4Z(SB), NOSPLIT, $0-40
	MOVQ      qs+0(FP), DI
	MOVQ      q+16(FP), SI
	MOVQ      block+24(FP), DX
	MOVQ      d+32(FP), CX
	CQZBODY(CQZSCALE, cq4loop)
	MOVQ      b+8(FP), R9
	CQZB(Y8, X8)
	CQZB(Y9, X9)
	CQZB(Y10, X10)
	CQZB(Y11, X11)
	VMOVSS    X8, (R9)
	VMOVSS    X9, 4(R9)
	VMOVSS    X10, 8(R9)
	VMOVSS    X11, 12(R9)
	VZEROUPPER
	RET

// r8perm: the VPERMD index of dotInt8R8I16Z's eight sums, row l's at dword 4l and
// row 4 + l's at 4l + 1 (l < 4), into row order.
DATA r8perm<>+0(SB)/8, $0x0000000400000000
DATA r8perm<>+8(SB)/8, $0x0000000c00000008
DATA r8perm<>+16(SB)/8, $0x0000000500000001
DATA r8perm<>+24(SB)/8, $0x0000000d00000009
GLOBL r8perm<>(SB), RODATA|NOPTR, $32

// func dotInt8R8I16Z(out, q, src unsafe.Pointer, stride uintptr, nu int, d uintptr)
//
// dotInt8R4I16Z eight rows at a time (rows at src + i·stride, units of eight; d a
// multiple of 32): 32 codes of each row per step into its own accumulator (Z0..Z7),
// then one transposing reduction of the eight (two 256-bit lane shuffles, then two
// 128-bit ones, then VSHUFPS within lanes) instead of a reduction per four rows, and
// the eight rows' scales gathered into one register: about 10 instructions per row of
// 64 values against 16. The sums are exact integers and are then scaled as
// dotInt8R4I16 scales them (times the row's scale, then D), so the scores are the same
// bits. R15 the unit's rows at the step's codes; row k at R15 + k·S through R12 = S,
// R9 = 3S, R10 = 5S, R11 = 7S.
TEXT ·dotInt8R8I16Z(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         q+8(FP), SI
	MOVQ         src+16(FP), R8
	MOVQ         stride+24(FP), R12
	MOVQ         nu+32(FP), R13
	MOVQ         d+40(FP), R14
	MOVQ         ahead+48(FP), BX
	VBROADCASTSS (SI)(R14*2), Y7 // D
	LEAQ         (R12)(R12*2), R9
	LEAQ         (R12)(R12*4), R10
	LEAQ         (R9)(R12*4), R11
	VMOVDQU      r8perm<>(SB), Y15
	TESTQ        R13, R13
	JZ           r8done

r8unit:
	LEAQ       (R8)(BX*1), CX
	PREFETCHT0 (CX)
	PREFETCHT0 (CX)(R12*1)
	PREFETCHT0 (CX)(R12*2)
	PREFETCHT0 (CX)(R9*1)
	PREFETCHT0 (CX)(R12*4)
	PREFETCHT0 (CX)(R10*1)
	PREFETCHT0 (CX)(R9*2)
	PREFETCHT0 (CX)(R11*1)
	VPXORD     Z0, Z0, Z0
	VPXORD     Z1, Z1, Z1
	VPXORD     Z2, Z2, Z2
	VPXORD     Z3, Z3, Z3
	VPXORD     Z4, Z4, Z4
	VPXORD     Z5, Z5, Z5
	VPXORD     Z6, Z6, Z6
	VPXORD     Z16, Z16, Z16
	MOVQ       R8, R15
	XORQ       AX, AX

r8step:
	VMOVDQU64 (SI)(AX*2), Z8
	VPMOVSXBW 2(R15), Z9
	VPMOVSXBW 2(R15)(R12*1), Z10
	VPMOVSXBW 2(R15)(R12*2), Z11
	VPMOVSXBW 2(R15)(R9*1), Z12
	VPDPWSSD  Z8, Z9, Z0
	VPDPWSSD  Z8, Z10, Z1
	VPDPWSSD  Z8, Z11, Z2
	VPDPWSSD  Z8, Z12, Z3
	VPMOVSXBW 2(R15)(R12*4), Z9
	VPMOVSXBW 2(R15)(R10*1), Z10
	VPMOVSXBW 2(R15)(R9*2), Z11
	VPMOVSXBW 2(R15)(R11*1), Z12
	VPDPWSSD  Z8, Z9, Z4
	VPDPWSSD  Z8, Z10, Z5
	VPDPWSSD  Z8, Z11, Z6
	VPDPWSSD  Z8, Z12, Z16
	ADDQ      $32, AX
	ADDQ      $32, R15
	CMPQ      AX, R14
	JB        r8step

	// Rows 2m, 2m+1 → one register, each row's 16 dwords folded to 8.
	VSHUFI64X2 $0x44, Z1, Z0, Z8
	VSHUFI64X2 $0xee, Z1, Z0, Z9
	VPADDD     Z9, Z8, Z8
	VSHUFI64X2 $0x44, Z3, Z2, Z10
	VSHUFI64X2 $0xee, Z3, Z2, Z11
	VPADDD     Z11, Z10, Z10
	VSHUFI64X2 $0x44, Z5, Z4, Z12
	VSHUFI64X2 $0xee, Z5, Z4, Z13
	VPADDD     Z13, Z12, Z12
	VSHUFI64X2 $0x44, Z16, Z6, Z14
	VSHUFI64X2 $0xee, Z16, Z6, Z13
	VPADDD     Z13, Z14, Z14
	// Rows 0–3 (4–7) → one register, row l's 4 dwords in 128-bit lane l.
	VSHUFI64X2 $0x88, Z10, Z8, Z0
	VSHUFI64X2 $0xdd, Z10, Z8, Z1
	VPADDD     Z1, Z0, Z0
	VSHUFI64X2 $0x88, Z14, Z12, Z2
	VSHUFI64X2 $0xdd, Z14, Z12, Z3
	VPADDD     Z3, Z2, Z2
	// Per lane l: row l's sum at dword 0, row 4 + l's at dword 1.
	VSHUFPS    $0x88, Z2, Z0, Z8
	VSHUFPS    $0xdd, Z2, Z0, Z9
	VPADDD     Z9, Z8, Z8
	VSHUFPS    $0x88, Z8, Z8, Z9
	VSHUFPS    $0xdd, Z8, Z8, Z10
	VPADDD     Z10, Z9, Z9
	VPERMD     Z9, Z15, Z9
	VCVTDQ2PS  Y9, Y9

	VPXOR     X1, X1, X1
	VPINSRW   $0, (R8), X1, X1
	VPINSRW   $1, (R8)(R12*1), X1, X1
	VPINSRW   $2, (R8)(R12*2), X1, X1
	VPINSRW   $3, (R8)(R9*1), X1, X1
	VPINSRW   $4, (R8)(R12*4), X1, X1
	VPINSRW   $5, (R8)(R10*1), X1, X1
	VPINSRW   $6, (R8)(R9*2), X1, X1
	VPINSRW   $7, (R8)(R11*1), X1, X1
	VCVTPH2PS X1, Y1
	VMULPS    Y1, Y9, Y9
	VMULPS    Y7, Y9, Y9
	VMOVUPS   Y9, (DI)
	ADDQ      $32, DI
	LEAQ      (R8)(R12*8), R8
	DECQ      R13
	JNZ       r8unit

r8done:
	VZEROUPPER
	RET
