//go:build amd64

#include "textflag.h"
#include "zrows4_amd64.h"
#include "prefetch_amd64.h"
#include "addq4_amd64.h"
#include "addq4z_amd64.h"
#include "addq1_amd64.h"

// dotE4M3Q4Z, dotE5M2Q4Z, dotF16Q4Z and dotBF16Q4Z (declarations and contracts in
// rows_fp8_amd64.go, rows_f16c_amd64.go and rows_bf16_amd64.go): the four-query scores
// of FP8, f16 and bf16 rows with ZMM registers (AVX-512 F and BW; no VL: the registers
// past Z15 only in 512-bit instructions); at the end, the four-query adds addE4M3Q4Z
// and addE5M2Q4Z (ADDQ4Z). Four rows at a time in two pairs, one row per 256-bit half:
// 16 values of each row of a pair are widened at once (FP8Z*, F16ZW, BF16ZW), values
// 0–7 of both rows into one register and 8–15 into another, and each query's matching 8
// values, broadcast to both halves, take one FMA per register. Each half of an
// accumulator then holds the 8 lanes of dot*Q4F16C's (dotF16Q4's) accumulators of its
// row (Y0..Y3 for values 0–7, Y4..Y7 for 8–15), with the same sums; FP8ZPAIR adds them
// in VHADDPS's order (FP8ZHADD), so the scores are the same bits.

// FP8ZE4M3 widens the 16 E4M3 codes AX.. of row r0 and of row r1 (the next) to
// float32: codes 0–7 of r0 in the low half of lo and those of r1 in its high half,
// codes 8–15 likewise in hi; as E4M3x16 does (value·2⁻⁸; Z22 the words 0xBFFF). The
// 16 bytes of r0 are loaded into every lane, those of r1 into lane 1. Z24..Z26
// scratch.
#define FP8ZE4M3(r0, r1, lo, hi) \
	VBROADCASTI32X4 (r0)(AX*1), Z24          \
	VINSERTI32X4    $1, (r1)(AX*1), Z24, Z24 \
	VPMOVSXBW   Y24, Z24                 \
	VPSLLW      $7, Z24, Z24             \
	VPANDD      Z22, Z24, Z24            \
	FP8ZHALVES(lo, hi)

// FP8ZE5M2 is FP8ZE4M3 for E5M2 codes, the high bytes of binary16 values (as E5M2x16).
#define FP8ZE5M2(r0, r1, lo, hi) \
	VBROADCASTI32X4 (r0)(AX*1), Z24          \
	VINSERTI32X4    $1, (r1)(AX*1), Z24, Z24 \
	VPMOVZXBW   Y24, Z24                 \
	VPSLLW      $8, Z24, Z24             \
	FP8ZHALVES(lo, hi)

// FP8ZHALVES widens the binary16 values in Z24 (lanes: row 0's codes 0–7, 8–15, row
// 1's) to float32: lanes 0 and 2 into lo, lanes 1 and 3 into hi.
#define FP8ZHALVES(lo, hi) \
	VSHUFI64X2 $0x88, Z24, Z24, Z25 \
	VSHUFI64X2 $0xdd, Z24, Z24, Z26 \
	VCVTPH2PS  Y25, lo              \
	VCVTPH2PS  Y26, hi

// F16ZW widens values AX..AX+15 of the f16 rows r0 and r1 (the next) to float32 in
// FP8ZE4M3's lanes: values 0–7 of r0 in the low half of lo and those of r1 in its high
// half, 8–15 likewise in hi. Z24, Z25 scratch.
#define F16ZW(r0, r1, lo, hi) \
	VBROADCASTI32X4 (r0)(AX*2), Z24            \
	VINSERTI32X4    $1, (r1)(AX*2), Z24, Z24   \
	VCVTPH2PS       Y24, lo                    \
	VBROADCASTI32X4 16(r0)(AX*2), Z25          \
	VINSERTI32X4    $1, 16(r1)(AX*2), Z25, Z25 \
	VCVTPH2PS       Y25, hi

// BF16ZW is F16ZW for bfloat16 rows: each value widened and shifted into the high
// half of a float32 (exact), as BF16W16 does.
#define BF16ZW(r0, r1, lo, hi) \
	VBROADCASTI32X4 (r0)(AX*2), Z24            \
	VINSERTI32X4    $1, (r1)(AX*2), Z24, Z24   \
	VPMOVZXWD       Y24, lo                    \
	VPSLLD          $16, lo, lo                \
	VBROADCASTI32X4 16(r0)(AX*2), Z25          \
	VINSERTI32X4    $1, 16(r1)(AX*2), Z25, Z25 \
	VPMOVZXWD       Y25, hi                    \
	VPSLLD          $16, hi, hi

// FP8ZQUERY adds to the accumulators of one query (a: rows 0–1, codes 0–7; b: rows
// 2–3; c, e: the same of codes 8–15) the products with its 16 values at Q + 4·AX.
#define FP8ZQUERY(Q, a, b, c, e) \
	VBROADCASTF64X4 (Q)(AX*4), Z20   \
	VBROADCASTF64X4 32(Q)(AX*4), Z21 \
	VFMADD231PS     Z20, Z16, a   \
	VFMADD231PS     Z20, Z18, b   \
	VFMADD231PS     Z21, Z17, c   \
	VFMADD231PS     Z21, Z19, e

// FP8ZHADD leaves in out what VHADDPS y, x, out leaves in each 128-bit lane: [x0+x1,
// x2+x3, y0+y1, y2+y3]. Z24, Z25 scratch.
#define FP8ZHADD(x, y, out) \
	VSHUFPS $0x88, y, x, Z24 \
	VSHUFPS $0xdd, y, x, Z25 \
	VADDPS  Z25, Z24, out

// FP8ZPAIR leaves in out the sums of one pair of rows with the four queries (the
// accumulators q0..q3 of codes 0–7 and h0..h3 of codes 8–15): per 128-bit lane,
// dot*Q4F16C's [q0 q1 q2 q3] after its two VHADDPS levels, of its low (lanes 0, 2)
// or high half (lanes 1, 3) of a row.
#define FP8ZPAIR(q0, q1, q2, q3, h0, h1, h2, h3, out) \
	VADDPS  h0, q0, q0       \
	VADDPS  h1, q1, q1       \
	VADDPS  h2, q2, q2       \
	VADDPS  h3, q3, q3       \
	FP8ZHADD(q0, q1, q0)     \
	FP8ZHADD(q2, q3, q2)     \
	FP8ZHADD(q0, q2, out)

// FP8ZQ4 is the body of dotE4M3Q4Z, dotE5M2Q4Z, dotF16Q4Z and dotBF16Q4Z: DI out, BX
// ldb, SI..R11 the four queries, R8 the first row's values, R12 stride, R13 the blocks
// of four rows, R14 d, Z23 mul. Per block (rows R8, R15, CX, DX; PF asks for their
// lines ahead): accumulators Z0..Z3 (rows 0–1, values 0–7 of each 16, queries 0–3),
// Z4..Z7 (rows 2–3), Z8..Z11 and Z12..Z15 (values 8–15); then each row's two halves
// added (the VEXTRACTF128 and VADDPS of dot*Q4F16C), the row's f16 scale (2 bytes
// before its codes; hdr ≠ 0) and mul applied, and the four queries' scores stored.
#define FP8ZQ4(CVT, PF) \
	LEAQ      (SI)(CX*1), R9                 \
	LEAQ      (R9)(CX*1), R10                \
	LEAQ      (R10)(CX*1), R11               \
	MOVL      $0xBFFFBFFF, AX                \
	VPBROADCASTD AX, Z22                     \
	VMOVDQU32 ztr4<>(SB), Z27                \
	VMOVDQU32 zspread4<>(SB), Z28            \
	SHRQ      $2, R13                        \
fblock:                                      \
	ZROWS4                                   \
	PF(R8, R15, CX, DX)                      \
	VPXORD Z0, Z0, Z0                        \
	VPXORD Z1, Z1, Z1                        \
	VPXORD Z2, Z2, Z2                        \
	VPXORD Z3, Z3, Z3                        \
	VPXORD Z4, Z4, Z4                        \
	VPXORD Z5, Z5, Z5                        \
	VPXORD Z6, Z6, Z6                        \
	VPXORD Z7, Z7, Z7                        \
	VPXORD Z8, Z8, Z8                        \
	VPXORD Z9, Z9, Z9                        \
	VPXORD Z10, Z10, Z10                     \
	VPXORD Z11, Z11, Z11                     \
	VPXORD Z12, Z12, Z12                     \
	VPXORD Z13, Z13, Z13                     \
	VPXORD Z14, Z14, Z14                     \
	VPXORD Z15, Z15, Z15                     \
	XORQ   AX, AX                            \
floop:                                       \
	CVT(R8, R15, Z16, Z17)                   \
	CVT(CX, DX, Z18, Z19)                    \
	FP8ZQUERY(SI, Z0, Z4, Z8, Z12)           \
	FP8ZQUERY(R9, Z1, Z5, Z9, Z13)           \
	FP8ZQUERY(R10, Z2, Z6, Z10, Z14)         \
	FP8ZQUERY(R11, Z3, Z7, Z11, Z15)         \
	ADDQ $16, AX                             \
	CMPQ AX, R14                             \
	JB   floop                               \
	FP8ZPAIR(Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11, Z16)     \
	FP8ZPAIR(Z4, Z5, Z6, Z7, Z12, Z13, Z14, Z15, Z17)   \
	VSHUFF32X4 $0x88, Z17, Z16, Z18          \
	VSHUFF32X4 $0xdd, Z17, Z16, Z19          \
	VADDPS     Z19, Z18, Z18                 \
	CMPQ       hdr+64(FP), $0                \
	JEQ        fmul                          \
	ZROWF16(-2, X0, Z0, Z28)                 \
	VMULPS     Z0, Z18, Z18                  \
fmul:                                        \
	VMULPS        Z23, Z18, Z18              \
	ZSTORE4(X18, Z18, Z27)                   \
	DECQ          R13                        \
	JNZ           fblock                     \
	VZEROUPPER

// FP8ZARGS loads FP8ZQ4's arguments (the kernels' shared signature).
#define FP8ZARGS \
	MOVQ         out+0(FP), DI      \
	MOVQ         ldb+8(FP), BX      \
	MOVQ         q+16(FP), SI       \
	MOVQ         qs+24(FP), CX      \
	MOVQ         src+32(FP), R8     \
	MOVQ         stride+40(FP), R12 \
	MOVQ         n+48(FP), R13      \
	MOVQ         d+56(FP), R14      \
	ADDQ         hdr+64(FP), R8     \
	VBROADCASTSS mul+72(FP), Z23

// func dotE4M3Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotE4M3Q4Z(SB), NOSPLIT, $0-76
	FP8ZARGS
	FP8ZQ4(FP8ZE4M3, PREFETCH4)
	RET

// func dotE5M2Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotE5M2Q4Z(SB), NOSPLIT, $0-76
	FP8ZARGS
	FP8ZQ4(FP8ZE5M2, PREFETCH4)
	RET

// func dotF16Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotF16Q4Z(SB), NOSPLIT, $0-76
	FP8ZARGS
	FP8ZQ4(F16ZW, PREFETCH4X2)
	RET

// func dotBF16Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotBF16Q4Z(SB), NOSPLIT, $0-76
	FP8ZARGS
	FP8ZQ4(BF16ZW, PREFETCH4X2)
	RET

// E4M3ROW64 and E5M2ROW64 load row i's 64 codes at R8 as float32 into Z16..Z19 for
// ADDQ4Z, the values E4M3x16 and E5M2x16 give (Z24: the words 0xBFFF). Z25, Z26
// scratch.
#define E4M3ROW64 \
	E4M3W32((R8), Z16, Z17); \
	E4M3W32(32(R8), Z18, Z19)

#define E5M2ROW64 \
	E5M2W32((R8), Z16, Z17); \
	E5M2W32(32(R8), Z18, Z19)

// E4M3MASK puts the words 0xBFFF in Z24 for E4M3ROW64.
#define E4M3MASK \
	MOVL         $0xBFFFBFFF, AX; \
	VPBROADCASTD AX, Z24

// E4M3W32 and E5M2W32 widen the 32 codes at m: the first 16 into lo, the next into hi.
#define E4M3W32(m, lo, hi) \
	VPMOVSXBW     m, Z25; \
	VPSLLW        $7, Z25, Z25; \
	VPANDD        Z24, Z25, Z25; \
	W32HALVES(lo, hi)

#define E5M2W32(m, lo, hi) \
	VPMOVZXBW     m, Z25; \
	VPSLLW        $8, Z25, Z25; \
	W32HALVES(lo, hi)

// W32HALVES widens the 32 binary16 values in Z25 to float32, lo and hi.
#define W32HALVES(lo, hi) \
	VCVTPH2PS     Y25, lo; \
	VEXTRACTI64X4 $1, Z25, Y26; \
	VCVTPH2PS     Y26, hi

// func addE4M3Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addE4M3Q4Z(SB), NOSPLIT, $0-56
	Q4ARGS
	E4M3MASK
	ADDQ4Z(E4M3ROW64)
	RET

// func addE5M2Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
TEXT ·addE5M2Q4Z(SB), NOSPLIT, $0-56
	Q4ARGS
	ADDQ4Z(E5M2ROW64)
	RET

// W1ROW and W1TENSOR are WROW and WTENSOR into Z20, ADDQ1Z's W.
#define W1ROW WROW(0, (R8)(R9*1), X8, Z20)
#define W1TENSOR WTENSOR(0, (R8)(R9*1), X8, Z20)

// func addE4M3Q1x64Z(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
// The one-query FP8 adds over 64 columns in ZMM registers (ADDQ1Z), the same sums as
// their YMM twins add*Q1x64F16C and add*Q1x64TF16C bit for bit; contracts in
// rows_fp8_amd64.go.
TEXT ·addE4M3Q1x64Z(SB), NOSPLIT, $0-52
	Q1ARGS
	E4M3MASK
	ADDQ1Z(W1ROW, E4M3ROW64)
	RET

// func addE4M3Q1x64TZ(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE4M3Q1x64TZ(SB), NOSPLIT, $0-52
	Q1ARGS
	E4M3MASK
	ADDQ1Z(W1TENSOR, E4M3ROW64)
	RET

// func addE5M2Q1x64Z(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE5M2Q1x64Z(SB), NOSPLIT, $0-52
	Q1ARGS
	ADDQ1Z(W1ROW, E5M2ROW64)
	RET

// func addE5M2Q1x64TZ(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
TEXT ·addE5M2Q1x64TZ(SB), NOSPLIT, $0-52
	Q1ARGS
	ADDQ1Z(W1TENSOR, E5M2ROW64)
	RET

// The one-query E4M3 adds with the codes widened straight to float32 (E4M3D16 of
// rows_fp8_amd64.s: value·2⁻¹²⁰) and each row's weight, as W1ROW and W1TENSOR make it,
// times 2¹¹² (X12) to match: every product is addE4M3Q1x64Z's (x·2¹¹²)·(v·2⁻¹²⁰) =
// x·(v·2⁻⁸) exactly, unless x·2¹¹² overflowed, which leaves a sum that is not finite.
// So the sums are stored, and the kernel reports true, only when all 64 are finite
// (ADDQ1ZDEND); otherwise acc is left as it was (the caller then runs addE4M3Q1x64Z,
// which also gives the sums that are rightly not finite).

// E4M3DROW64 loads row i's 64 codes at R8 as float32 value·2⁻¹²⁰ into Z16..Z19 (Z24:
// the dwords 0x87F00000).
#define E4M3DROW64 \
	VPMOVSXBD (R8), Z16; \
	VPMOVSXBD 16(R8), Z17; \
	VPMOVSXBD 32(R8), Z18; \
	VPMOVSXBD 48(R8), Z19; \
	VPSLLD    $20, Z16, Z16; \
	VPSLLD    $20, Z17, Z17; \
	VPSLLD    $20, Z18, Z18; \
	VPSLLD    $20, Z19, Z19; \
	VPANDD    Z24, Z16, Z16; \
	VPANDD    Z24, Z17, Z17; \
	VPANDD    Z24, Z18, Z18; \
	VPANDD    Z24, Z19, Z19

// W1ROWD and W1TENSORD are W1ROW and W1TENSOR times 2¹¹² (X12).
#define W1ROWD \
	MOVWLZX      (R8)(R9*1), AX; \
	VMOVD        AX, X8; \
	VCVTPH2PS    X8, X8; \
	VMULSS       (SI), X8, X8; \
	VMULSS       X13, X8, X8; \
	VMULSS       X12, X8, X8; \
	VBROADCASTSS X8, Z20

#define W1TENSORD \
	VMULSS       (SI), X13, X8; \
	VMULSS       X12, X8, X8; \
	VBROADCASTSS X8, Z20

// E4M3DCONSTS sets Z24 for E4M3DROW64 and X12 = 2¹¹².
#define E4M3DCONSTS \
	MOVL         $0x87F00000, AX; \
	VPBROADCASTD AX, Z24; \
	MOVL         $0x77800000, AX; \
	VMOVD        AX, X12

// ADDQ1ZDEND stores the sums and sets AX to 1 if the lanes of Z0+Z1+Z2+Z3 are all
// finite (t − t is not NaN), and so every sum; otherwise it sets AX to 0, acc
// untouched (also, rarely, where finite sums add up past the float32 range).
#define ADDQ1ZDEND \
	VADDPS     Z1, Z0, Z5; \
	VADDPS     Z3, Z2, Z6; \
	VADDPS     Z6, Z5, Z5; \
	VSUBPS     Z5, Z5, Z5; \
	VCMPPS     $3, Z5, Z5, K1; \
	KORTESTW   K1, K1; \
	JNZ        zdfail; \
	ADDQ1ZSTORE; \
	MOVL       $1, AX; \
	JMP        zdret; \
zdfail: \
	VZEROUPPER; \
	XORL       AX, AX; \
zdret:

// ADDQ1ZD(W) is the body of addE4M3Q1x64ZD (W1ROWD) and addE4M3Q1x64TZD (W1TENSORD),
// up to storing AX as the result.
#define ADDQ1ZD(W) \
	Q1ARGS; \
	E4M3DCONSTS; \
	ADDQ1ZLOOP(W, E4M3DROW64); \
	ADDQ1ZDEND

// func addE4M3Q1x64ZD(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool
TEXT ·addE4M3Q1x64ZD(SB), NOSPLIT, $0-57
	ADDQ1ZD(W1ROWD)
	MOVB AX, ret+56(FP)
	RET

// func addE4M3Q1x64TZD(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool
TEXT ·addE4M3Q1x64TZD(SB), NOSPLIT, $0-57
	ADDQ1ZD(W1TENSORD)
	MOVB AX, ret+56(FP)
	RET

// The four-query E4M3 scores with the codes widened straight to float32 (dotE4M3Q4ZD,
// contract in rows_fp8_amd64.go): FP8ZQ4 with FP8ZE4M3D for FP8ZE4M3, over the four
// queries times 2¹¹² (scaleQuery112).

// e4didx: the byte indexes of FP8ZE4M3D's lo permute: byte 3 of dword j is code j of
// the first row (bytes 0–15 of the table) for j < 8 and code j − 8 of the second
// (bytes 16–31) for j ≥ 8; the hi permute's are these plus 8.
DATA e4didx<>+0(SB)/8, $0x0100000000000000
DATA e4didx<>+8(SB)/8, $0x0300000002000000
DATA e4didx<>+16(SB)/8, $0x0500000004000000
DATA e4didx<>+24(SB)/8, $0x0700000006000000
DATA e4didx<>+32(SB)/8, $0x1100000010000000
DATA e4didx<>+40(SB)/8, $0x1300000012000000
DATA e4didx<>+48(SB)/8, $0x1500000014000000
DATA e4didx<>+56(SB)/8, $0x1700000016000000
GLOBL e4didx<>(SB), RODATA|NOPTR, $64

// FP8ZE4M3D is FP8ZE4M3 for dotE4M3Q4ZD: the 16 codes AX.. of rows r0 and r1 as
// float32 value·2⁻¹²⁰ in FP8ZE4M3's lanes (lo: codes 0–7 of r0, then of r1; hi: 8–15).
// Each code goes to the top byte of a dword (VPERMB zero-masked by K1, indexes Z30 and
// Z31); shifted right by 4 with its sign, its exponent and mantissa land in the
// float32 exponent (bits 26..23) and mantissa (bits 22..20), its sign in bit 31 and
// copies of it in bits 30..27, which Z29 (0x87F00000) clears: E4M3D16's values.
#define FP8ZE4M3D(r0, r1, lo, hi) \
	VMOVDQU32    (r0)(AX*1), X24          \
	VINSERTI32X4 $1, (r1)(AX*1), Z24, Z24 \
	VPERMB.Z     Z24, Z30, K1, lo         \
	VPERMB.Z     Z24, Z31, K1, hi         \
	VPSRAD       $4, lo, lo               \
	VPSRAD       $4, hi, hi               \
	VPANDD       Z29, lo, lo              \
	VPANDD       Z29, hi, hi

// func dotE4M3Q4ZD(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)
TEXT ·dotE4M3Q4ZD(SB), NOSPLIT, $0-76
	FP8ZARGS
	MOVL         $0x87F00000, AX
	VPBROADCASTD AX, Z29
	VMOVDQU64    e4didx<>(SB), Z30
	MOVQ         $0x0808080808080808, AX
	VPBROADCASTQ AX, Z31
	VPADDB       Z31, Z30, Z31
	MOVQ         $0x8888888888888888, AX
	KMOVQ        AX, K1
	FP8ZQ4(FP8ZE4M3D, PREFETCH4)
	RET

// func scaleQuery112(dst, q unsafe.Pointer, n int) bool
//
// Per 16 values: |q| against 2¹⁶ (VCMPPS GE_OQ: infinities count, NaN does not),
// marked in K2; q·2¹¹² stored.
TEXT ·scaleQuery112(SB), NOSPLIT, $0-25
	MOVQ         dst+0(FP), DI
	MOVQ         q+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         $0x77800000, AX // 2¹¹²
	VPBROADCASTD AX, Z16
	MOVL         $0x47800000, AX // 2¹⁶
	VPBROADCASTD AX, Z17
	MOVL         $0x7FFFFFFF, AX
	VPBROADCASTD AX, Z18
	KXORW        K2, K2, K2
	XORQ         AX, AX
sq:
	VMOVUPS (SI)(AX*4), Z19
	VPANDD  Z18, Z19, Z20
	VCMPPS  $0x1d, Z17, Z20, K1
	KORW    K1, K2, K2
	VMULPS  Z16, Z19, Z19
	VMOVUPS Z19, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, CX
	JB      sq
	KORTESTW K2, K2
	SETEQ    ret+24(FP)
	VZEROUPPER
	RET
