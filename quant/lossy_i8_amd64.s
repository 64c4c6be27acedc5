//go:build amd64

#include "textflag.h"
#include "p2gather_amd64.h"
#include "prefetch_amd64.h"
#include "zrows4_amd64.h"
#include "zi8codes_amd64.h"

// The integer score kernels of 4-bit and 2-bit Affine rows in groups of 32 and their
// query quantizer (declarations and contracts in lossy_i8_amd64.go): with an int8
// query, a group's 32 codes, unpacked to bytes (UNPACK4, UNPACK2), take one VPMADDUBSW
// per query (codes unsigned, query signed: |pair| ≤ 2·15·127, no saturation), against
// 4 converts and 4 FMAs in float; the sums of 4 rows (or 4 queries) are reduced
// together (I8SUMS4) and scaled once per group.

DATA nib8<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib8<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib8<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib8<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nib8<>(SB), RODATA|NOPTR, $32

DATA two8<>+0(SB)/8, $0x0303030303030303
DATA two8<>+8(SB)/8, $0x0303030303030303
DATA two8<>+16(SB)/8, $0x0303030303030303
DATA two8<>+24(SB)/8, $0x0303030303030303
GLOBL two8<>(SB), RODATA|NOPTR, $32

// UNPACK4 leaves in y the 32 4-bit codes of the 16 bytes at addr (x: y's low half),
// the even codes then the odd ones. Y1: byte masks 0x0f; X15 scratch.
#define UNPACK4(addr, x, y) \
	VMOVDQU     addr, x         \
	VPSRLW      $4, x, X15      \
	VINSERTI128 $1, X15, y, y   \
	VPAND       Y1, y, y

// UNPACK2 leaves in y the 32 2-bit codes of the 8 bytes at addr (x: y's low half),
// byte 8m+j of y code 4j+m. Y1: byte masks 0x03; X13..X15 scratch.
#define UNPACK2(addr, x, y) \
	VMOVQ       addr, x         \
	VPSRLW      $2, x, X15      \
	VPUNPCKLQDQ X15, x, X14     \
	VPSRLW      $4, x, X15      \
	VPSRLW      $6, x, X13      \
	VPUNPCKLQDQ X13, X15, X15   \
	VINSERTI128 $1, X15, Y14, y \
	VPAND       Y1, y, y

// I8SUMS4 leaves in X4 the four rows' integer sums, lane r the sum of the int16s of
// Y(4+r): three VPHADDW levels (sums of 8 products, at most 30480: no overflow), then
// VPMADDWD with ones (Y2) and the two halves added.
#define I8SUMS4 \
	VPHADDW      Y5, Y4, Y4 \
	VPHADDW      Y7, Y6, Y6 \
	VPHADDW      Y6, Y4, Y4 \
	VPMADDWD     Y2, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPADDD       X5, X4, X4

// I8ARGS loads the arguments: DI out, R15 the first row, DX stride, R13 the blocks of
// four rows, CX gb; Y2 int16 ones.
#define I8ARGS \
	MOVQ out+0(FP), DI     \
	MOVQ rows+16(FP), R15  \
	MOVQ stride+24(FP), DX \
	MOVQ ng+32(FP), R13    \
	MOVQ gb+64(FP), CX     \
	VPCMPEQW Y2, Y2, Y2    \
	VPSRLW   $15, Y2, Y2

// I8BLOCK starts four rows at R15: SI the query codes, R12 its group factors, R14 the
// groups, R8..R11 the rows' first codes, X0 zero.
#define I8BLOCK \
	MOVQ   q+8(FP), SI      \
	MOVQ   qf+40(FP), R12   \
	MOVQ   np+48(FP), R14   \
	MOVQ   R15, R8          \
	LEAQ   (R8)(DX*1), R9   \
	LEAQ   (R9)(DX*1), R10  \
	LEAQ   (R10)(DX*1), R11 \
	PREFETCH4(R8, R9, R10, R11) \
	VXORPS X0, X0, X0

// I8GROUP leaves the int16 pair sums of one group of 32 codes (unpacked by UNPACK)
// of four rows times the query in Y4..Y7 and steps SI to the next group's query.
#define I8GROUP(UNPACK) \
	UNPACK((R8), X4, Y4)   \
	UNPACK((R9), X5, Y5)   \
	UNPACK((R10), X6, Y6)  \
	UNPACK((R11), X7, Y7)  \
	VPMADDUBSW (SI), Y4, Y4 \
	VPMADDUBSW (SI), Y5, Y5 \
	VPMADDUBSW (SI), Y6, Y6 \
	VPMADDUBSW (SI), Y7, Y7 \
	ADDQ    $32, SI

// I8NEXT steps R8..R11 to the next group and R12 to its factors, and counts the
// group down.
#define I8NEXT \
	ADDQ CX, R8  \
	ADDQ CX, R9  \
	ADDQ CX, R10 \
	ADDQ CX, R11 \
	ADDQ $8, R12 \
	DECQ R14

// I8END stores X0 to out and steps to the next block of four rows.
#define I8END(block) \
	VMOVUPS X0, (DI)         \
	ADDQ    $16, DI          \
	LEAQ    (R15)(DX*4), R15 \
	DECQ    R13              \
	JNZ     block            \
	VZEROUPPER               \
	RET

// ROWSI8 is the body of the one-query kernels (dotU4RowsI8, dotU2RowsI8 with
// SCALE = ROWSCALE and TAIL = NOTAIL; dotU2ChanI8 with CHANSCALE and CHANTAIL): blocks of four rows, each group's integer sums, converted in X4, scaled
// into X0 by SCALE, then TAIL after the last group.
#define ROWSI8(UNPACK, SCALE, TAIL) \
	I8ARGS \
inlblock: \
	I8BLOCK \
inlgroup: \
	I8GROUP(UNPACK) \
	I8SUMS4 \
	VCVTDQ2PS    X4, X4 \
	SCALE \
	I8NEXT \
	JNZ          inlgroup \
	TAIL \
	I8END(inlblock)

// ROWSCALE scales Affine rows' group sums X4 by the rows' f16 scales (X8, gathered
// from the 4 bytes before each row's codes with the zeros, X10) and d_k, plus the
// zero terms.
#define ROWSCALE \
	VMOVD        -4(R8), X8 \
	VPINSRD      $1, -4(R9), X8, X8 \
	VPINSRD      $2, -4(R10), X8, X8 \
	VPINSRD      $3, -4(R11), X8, X8 \
	VCVTPH2PS    X8, Y8 \
	VEXTRACTF128 $1, Y8, X9 \
	VSHUFPS      $0xdd, X9, X8, X10 \
	VSHUFPS      $0x88, X9, X8, X8 \
	VBROADCASTSS (R12), X11 \
	VMULPS       X11, X8, X8 \
	VFMADD231PS  X8, X4, X0 \
	VBROADCASTSS 4(R12), X11 \
	VFMADD231PS  X11, X10, X0

// CHANSCALE scales Channel rows' group sums X4 by d_k alone (the channel scales are
// in the query).
#define CHANSCALE \
	VBROADCASTSS (R12), X11 \
	VFMADD231PS  X11, X4, X0

// NOTAIL adds nothing after the groups.
#define NOTAIL

// CHANTAIL adds b, the float32 after the np factor pairs (R12 has reached it).
#define CHANTAIL \
	VBROADCASTSS (R12), X11 \
	VADDPS       X11, X0, X0

// Q4I8 is the body of the four-query kernels (dotU4Q4I8, dotU2Q4I8 with SCALE =
// ROWSCALE4 and TAIL = NOTAIL; dotU2Q4ChanI8 with CHANSCALE4 and CHANTAIL4): row by row, each group's codes unpacked once (UNPACK) for the four
// queries (query r at SI + r·BX, BX = 32·np bytes), whose sums, converted in X4, SCALE
// adds to X0, then TAIL after the last group; lane r is stored to out + r·ldo for r <
// nq.
#define Q4I8(UNPACK, SCALE, TAIL) \
	Q4I8ARGS \
row: \
	Q4I8ROW \
q4group: \
	UNPACK((R8), X3, Y3) \
	VPMADDUBSW   (SI), Y3, Y4 \
	VPMADDUBSW   (SI)(BX*1), Y3, Y5 \
	VPMADDUBSW   (R9), Y3, Y6 \
	VPMADDUBSW   (R9)(BX*1), Y3, Y7 \
	I8SUMS4 \
	VCVTDQ2PS    X4, X4 \
	SCALE \
	ADDQ         gb+72(FP), R8 \
	ADDQ         $32, SI \
	ADDQ         $32, R9 \
	ADDQ         $32, R12 \
	DECQ         R14 \
	JNZ          q4group \
	TAIL \
	Q4I8STORE

// Q4I8ARGS loads the four-query kernels' arguments: DI out, DX ldo, R15 the first
// row, R13 n, BX 32·np (the bytes of one query's codes); Y2 int16 ones.
#define Q4I8ARGS \
	MOVQ     out+0(FP), DI \
	MOVQ     ldo+8(FP), DX \
	MOVQ     rows+32(FP), R15 \
	MOVQ     n+48(FP), R13 \
	MOVQ     np+64(FP), BX \
	SHLQ     $5, BX \
	VPCMPEQW Y2, Y2, Y2 \
	VPSRLW   $15, Y2, Y2

// Q4I8ROW starts a row at R15: SI queries 0 and 1 (SI + BX), R9 queries 2 and 3,
// R12 the group factors, R14 np, R8 the row's first codes, Y0 zero.
#define Q4I8ROW \
	MOVQ   q+24(FP), SI \
	LEAQ   (SI)(BX*2), R9 \
	MOVQ   qf+56(FP), R12 \
	MOVQ   np+64(FP), R14 \
	MOVQ   R15, R8 \
	VXORPS Y0, Y0, Y0

// Q4I8STORE stores lane r of X0 (query r's score of the row) to DI + r·ldo (DX) for
// r < nq (CX, AX scratch), then steps to the next row (R15, DI; label row), or
// returns after the last.
#define Q4I8STORE \
	MOVQ      nq+16(FP), CX \
	MOVQ      DI, AX \
	VMOVSS    X0, (AX) \
	CMPQ      CX, $1 \
	JE        q4next \
	ADDQ      DX, AX \
	VEXTRACTPS $1, X0, (AX) \
	CMPQ      CX, $2 \
	JE        q4next \
	ADDQ      DX, AX \
	VEXTRACTPS $2, X0, (AX) \
	CMPQ      CX, $3 \
	JE        q4next \
	ADDQ      DX, AX \
	VEXTRACTPS $3, X0, (AX) \
q4next: \
	ADDQ $4, DI \
	ADDQ stride+40(FP), R15 \
	DECQ R13 \
	JNZ  row \
	VZEROUPPER \
	RET

// ROWSCALE4 scales Affine rows' sums X4 of the four queries by the row's f16 scale
// and the queries' d_k (R12), plus the zero terms (16(R12)).
#define ROWSCALE4 \
	VPBROADCASTW -4(R8), X8 \
	VCVTPH2PS    X8, X8 \
	VMULPS       (R12), X8, X8 \
	VFMADD231PS  X8, X4, X0 \
	VPBROADCASTW -2(R8), X9 \
	VCVTPH2PS    X9, X9 \
	VFMADD231PS  16(R12), X9, X0

// CHANSCALE4 scales Channel rows' sums X4 of the four queries by their d_k.
#define CHANSCALE4 VFMADD231PS (R12), X4, X0

// CHANTAIL4 adds the four queries' b, the float32s after the np factor groups.
#define CHANTAIL4 VADDPS (R12), X0, X0

// func dotU4RowsI8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU4RowsI8(SB), NOSPLIT, $0-72
	VMOVDQU nib8<>(SB), Y1
	ROWSI8(UNPACK4, ROWSCALE, NOTAIL)

// func dotU2RowsI8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2RowsI8(SB), NOSPLIT, $0-72
	VMOVDQU two8<>(SB), Y1
	ROWSI8(UNPACK2, ROWSCALE, NOTAIL)

// func dotU2ChanI8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2ChanI8(SB), NOSPLIT, $0-72
	VMOVDQU two8<>(SB), Y1
	ROWSI8(UNPACK2, CHANSCALE, CHANTAIL)

// ROWSI8Z is ROWSI8 with ZMM registers and VPDPBUSD (AVX-512 VNNI), for the one-query
// twins dotU2RowsI8Z and dotU2ChanI8Z: per group, CODES reads the four rows' codes
// into Z3 and Z4 (a row per 128-bit lane, UNPACK2's order: zi8codes_amd64.h), one
// VPDPBUSD each against the query's matching 16 bytes broadcast to the four lanes
// sums them into Z8, and each lane's four dwords added are its row's integer sum,
// I8SUMS4's exactly (the products summed in int32, no saturating stage); then SCALE
// and TAIL as in ROWSI8, the same float operations: the same scores bit for bit.
// Z18 ztr4 (its first four indexes gather each lane's first dword).
#define ROWSI8Z(CODES, SCALE, TAIL) \
	I8ARGS \
	VMOVDQU32 ztr4<>(SB), Z18 \
zinlblock: \
	I8BLOCK \
zinlgroup: \
	CODES(0) \
	VPXORD          Z8, Z8, Z8 \
	VBROADCASTI32X4 (SI), Z12 \
	VPDPBUSD        Z12, Z3, Z8 \
	VBROADCASTI32X4 16(SI), Z13 \
	VPDPBUSD        Z13, Z4, Z8 \
	ADDQ            $32, SI \
	VPSHUFD         $0x4e, Z8, Z9 \
	VPADDD          Z9, Z8, Z8 \
	VPSHUFD         $0xb1, Z8, Z9 \
	VPADDD          Z9, Z8, Z8 \
	VPERMD          Z8, Z18, Z4 \
	VCVTDQ2PS       X4, X4 \
	SCALE \
	I8NEXT \
	JNZ             zinlgroup \
	TAIL \
	I8END(zinlblock)

// ZI8TWO loads ZI8CODES2's constants: Z1 the 2-bit masks, Z19..Z21 zi8sh2.
#define ZI8TWO \
	VPBROADCASTD zi8two<>(SB), Z1  \
	VMOVDQU64    zi8sh2<>(SB), Z19 \
	VMOVDQU64    zi8sh2<>+64(SB), Z20 \
	VMOVDQU64    zi8sh2<>+128(SB), Z21

// func dotU2RowsI8Z(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2RowsI8Z(SB), NOSPLIT, $0-72
	ZI8TWO
	ROWSI8Z(ZI8CODES2, ROWSCALE, NOTAIL)

// func dotU2ChanI8Z(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2ChanI8Z(SB), NOSPLIT, $0-72
	ZI8TWO
	ROWSI8Z(ZI8CODES2, CHANSCALE, CHANTAIL)

DATA absf<>+0(SB)/4, $0x7fffffff
GLOBL absf<>(SB), RODATA|NOPTR, $4

DATA f127<>+0(SB)/4, $127.0
GLOBL f127<>(SB), RODATA|NOPTR, $4

DATA tiny<>+0(SB)/4, $0x03800000 // 2^-120
GLOBL tiny<>(SB), RODATA|NOPTR, $4

// Dword order of VPACKSSDW then VPACKSSWB of four vectors a, b, c, d (in-lane
// packs: a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7) back to a b c d.
DATA packord<>+0(SB)/8, $0x0000000400000000
DATA packord<>+8(SB)/8, $0x0000000500000001
DATA packord<>+16(SB)/8, $0x0000000600000002
DATA packord<>+24(SB)/8, $0x0000000700000003
GLOBL packord<>(SB), RODATA|NOPTR, $32

// The code order of 4-bit rows (UNPACK4): in each 16 bytes the even bytes then the
// odd ones (VPSHUFB), then the halves' even and odd runs in order (VPERMD).
DATA shuf4<>+0(SB)/8, $0x0e0c0a0806040200
DATA shuf4<>+8(SB)/8, $0x0f0d0b0907050301
DATA shuf4<>+16(SB)/8, $0x0e0c0a0806040200
DATA shuf4<>+24(SB)/8, $0x0f0d0b0907050301
GLOBL shuf4<>(SB), RODATA|NOPTR, $32

DATA perm4<>+0(SB)/8, $0x0000000100000000
DATA perm4<>+8(SB)/8, $0x0000000500000004
DATA perm4<>+16(SB)/8, $0x0000000300000002
DATA perm4<>+24(SB)/8, $0x0000000700000006
GLOBL perm4<>(SB), RODATA|NOPTR, $32

// The code order of 2-bit rows (UNPACK2, byte 8m+j code 4j+m): in each 16 bytes the
// bytes 4j+m by m then j (VPSHUFB), then the halves' dwords m in order (VPERMD, the
// order of packord).
DATA shuf2<>+0(SB)/8, $0x0d0905010c080400
DATA shuf2<>+8(SB)/8, $0x0f0b07030e0a0602
DATA shuf2<>+16(SB)/8, $0x0d0905010c080400
DATA shuf2<>+24(SB)/8, $0x0f0b07030e0a0602
GLOBL shuf2<>(SB), RODATA|NOPTR, $32

// func quantQueryI8(q8, qf, q unsafe.Pointer, np, gs, bits int, fstep, zoff uintptr)
TEXT ·quantQueryI8(SB), NOSPLIT, $0-64
	MOVQ q8+0(FP), DI
	MOVQ qf+8(FP), R8
	MOVQ q+16(FP), SI
	MOVQ np+24(FP), CX
	MOVQ gs+32(FP), BX
	MOVQ fstep+48(FP), R11
	MOVQ zoff+56(FP), R10
	SHRQ $5, BX // 32-value chunks per group
	VBROADCASTSS absf<>(SB), Y15
	VMOVDQU      packord<>(SB), Y14
	VMOVDQU      shuf4<>(SB), Y13
	VMOVDQU      perm4<>(SB), Y11
	CMPQ         bits+40(FP), $4
	JE           qstart
	VMOVDQU      shuf2<>(SB), Y13
	VMOVDQU      packord<>(SB), Y11

qstart:
	VXORPS Y9, Y9, Y9

qgroup:
	// m = max|q| over the group, and Y8 = Σ q·0: ±0, or NaN where a value is NaN
	// or infinite (VMAXPS drops NaNs; d_k takes it, so the group's scores are NaN
	// as the float kernels' would be).
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	MOVQ   SI, R9
	MOVQ   BX, DX

qmax:
	VANDPS      (R9), Y15, Y1
	VMAXPS      Y1, Y0, Y0
	VANDPS      32(R9), Y15, Y1
	VMAXPS      Y1, Y0, Y0
	VANDPS      64(R9), Y15, Y1
	VMAXPS      Y1, Y0, Y0
	VANDPS      96(R9), Y15, Y1
	VMAXPS      Y1, Y0, Y0
	VFMADD231PS (R9), Y9, Y8
	VFMADD231PS 32(R9), Y9, Y8
	VFMADD231PS 64(R9), Y9, Y8
	VFMADD231PS 96(R9), Y9, Y8
	ADDQ        $128, R9
	DECQ        DX
	JNZ         qmax
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VEXTRACTF128 $1, Y8, X1
	VADDPS       X1, X8, X8
	VPERMILPS    $0x4e, X8, X1
	VADDPS       X1, X8, X8
	VPERMILPS    $0xb1, X8, X1
	VADDPS       X1, X8, X8
	// d = m/127, inv = 127/m; both 0 below 2^-120 (where 127/m could overflow)
	VXORPS       X2, X2, X2
	VXORPS       X3, X3, X3
	VUCOMISS     tiny<>(SB), X0
	JB           qzero
	VMOVSS       f127<>(SB), X1
	VDIVSS       X1, X0, X2
	VDIVSS       X0, X1, X3

qzero:
	VADDSS       X8, X2, X2 // d + Σq·0: NaN for a NaN or infinite value
	VMOVSS       X2, (R8)
	VBROADCASTSS X3, Y3
	VPXOR        Y12, Y12, Y12 // Σq̂

qchunk:
	VMULPS     (SI), Y3, Y4
	VMULPS     32(SI), Y3, Y5
	VMULPS     64(SI), Y3, Y6
	VMULPS     96(SI), Y3, Y7
	VCVTPS2DQ  Y4, Y4
	VCVTPS2DQ  Y5, Y5
	VCVTPS2DQ  Y6, Y6
	VCVTPS2DQ  Y7, Y7
	VPADDD     Y4, Y12, Y12
	VPADDD     Y5, Y12, Y12
	VPADDD     Y6, Y12, Y12
	VPADDD     Y7, Y12, Y12
	VPACKSSDW  Y5, Y4, Y4
	VPACKSSDW  Y7, Y6, Y6
	VPACKSSWB  Y6, Y4, Y4
	VPERMD     Y4, Y14, Y4
	VPSHUFB    Y13, Y4, Y4
	VPERMD     Y4, Y11, Y4
	VMOVDQU    Y4, (DI)
	ADDQ       $128, SI
	ADDQ       $32, DI
	DECQ       BX
	JNZ        qchunk
	MOVQ       gs+32(FP), BX
	SHRQ       $5, BX
	VEXTRACTI128 $1, Y12, X1
	VPADDD     X1, X12, X12
	VPSHUFD    $0x4e, X12, X1
	VPADDD     X1, X12, X12
	VPSHUFD    $0xb1, X12, X1
	VPADDD     X1, X12, X12
	VCVTDQ2PS  X12, X12
	VMULSS     X2, X12, X12
	VMOVSS     X12, (R8)(R10*1)
	ADDQ       R11, R8
	DECQ       CX
	JNZ        qgroup
	VZEROUPPER
	RET

// func dotU4Q4I8(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
TEXT ·dotU4Q4I8(SB), NOSPLIT, $0-80
	VMOVDQU nib8<>(SB), Y1
	Q4I8(UNPACK4, ROWSCALE4, NOTAIL)

// func dotU2Q4I8(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
TEXT ·dotU2Q4I8(SB), NOSPLIT, $0-80
	VMOVDQU two8<>(SB), Y1
	Q4I8(UNPACK2, ROWSCALE4, NOTAIL)

// func dotU2Q4ChanI8(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
TEXT ·dotU2Q4ChanI8(SB), NOSPLIT, $0-80
	VMOVDQU two8<>(SB), Y1
	Q4I8(UNPACK2, CHANSCALE4, CHANTAIL4)

// P2ROW leaves in Y the int16 sums of four products each of one row's codes of a pair
// of groups (16 code bytes at R, the next group's at R + CX) times the query pair in
// Y12 (the groups' even-code halves) and Y13 (odd): low lane the first group, high
// lane the second (|sum| ≤ 4·15·127). Y1: byte masks 0x0f; Y14 scratch.
#define P2ROW(R, Y, X) \
	VMOVDQU     (R), X              \
	VINSERTI128 $1, (R)(CX*1), Y, Y \
	VPSRLW      $4, Y, Y14          \
	VPAND       Y1, Y, Y            \
	VPAND       Y1, Y14, Y14        \
	VPMADDUBSW  Y12, Y, Y           \
	VPMADDUBSW  Y13, Y14, Y14       \
	VPADDW      Y14, Y, Y

// func dotU4RowsI8P2(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
//
// Per block of four rows and pair of groups: P2ROW for each row, two VPHADDW levels
// (sums of 16 products, ≤ 30480) and VPMADDWD with ones give Y4 = the rows' integer
// sums, rows 0–3 of the first group then of the second; the rows' scales and zeros,
// gathered in the same order (P2SZ), scale them, with the pair's factors from qf; the
// two lanes are added at the end. I8BLOCK's VXORPS X0 clears all of Y0.
TEXT ·dotU4RowsI8P2(SB), NOSPLIT, $0-72
	VMOVDQU nib8<>(SB), Y1
	I8ARGS

p2block:
	I8BLOCK
	SHRQ $1, R14 // pairs of groups

p2pair:
	VMOVDQU      (SI), X12
	VINSERTI128  $1, 32(SI), Y12, Y12
	VMOVDQU      16(SI), X13
	VINSERTI128  $1, 48(SI), Y13, Y13
	P2ROW(R8, Y4, X4)
	P2ROW(R9, Y5, X5)
	P2ROW(R10, Y6, X6)
	P2ROW(R11, Y7, X7)
	VPHADDW      Y5, Y4, Y4
	VPHADDW      Y7, Y6, Y6
	VPHADDW      Y6, Y4, Y4
	VPMADDWD     Y2, Y4, Y4
	VCVTDQ2PS    Y4, Y4
	P2SZ(R8, R9, R10, R11)
	VMULPS       (R12), Y10, Y10
	VFMADD231PS  Y10, Y4, Y0
	VFMADD231PS  32(R12), Y11, Y0
	LEAQ         (R8)(CX*2), R8
	LEAQ         (R9)(CX*2), R9
	LEAQ         (R10)(CX*2), R10
	LEAQ         (R11)(CX*2), R11
	ADDQ         $64, SI
	ADDQ         $64, R12
	DECQ         R14
	JNZ          p2pair

	VEXTRACTF128 $1, Y0, X3
	VADDPS       X3, X0, X0
	I8END(p2block)


// Q4P2QUERY leaves in Y the int16 sums of four products each of a row's codes of a
// pair of groups (Y3 the even codes, Y14 the odd: low lane the first group, high lane
// the second) times one query's pair at addr (its 32 even-code bytes, then the 32
// odd), T scratch.
#define Q4P2QUERY(addr, odd, Y, T) \
	VPMADDUBSW addr, Y3, Y   \
	VPMADDUBSW odd, Y14, T   \
	VPADDW     T, Y, Y

// func dotU4Q4I8P2(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)
//
// Per row and pair of groups: one load and unpack of both groups' codes (Y3, Y14)
// for the four queries (Q4P2QUERY), two VPHADDW levels (sums of 16 products,
// ≤ 30480) and VPMADDWD with ones give Y4 = the four queries' integer sums of the
// first group, then of the second; the row's two scales and zeros, widened at once
// and spread by VPERMPS, scale them with the pair's factors from qf. The two lanes
// are added at the end of the row.
TEXT ·dotU4Q4I8P2(SB), NOSPLIT, $0-80
	VMOVDQU  nib8<>(SB), Y1
	VMOVDQU  p2perm<>(SB), Y12
	VMOVDQU  p2perm<>+32(SB), Y13
	Q4I8ARGS

row:
	Q4I8ROW
	SHRQ $1, R14 // pairs of groups
	MOVQ gb+72(FP), CX

pair:
	VMOVDQU     (R8), X3
	VINSERTI128 $1, (R8)(CX*1), Y3, Y3
	VPSRLW      $4, Y3, Y14
	VPAND       Y1, Y3, Y3
	VPAND       Y1, Y14, Y14
	Q4P2QUERY((SI), 32(SI), Y4, Y8)
	Q4P2QUERY((SI)(BX*1), 32(SI)(BX*1), Y5, Y9)
	Q4P2QUERY((R9), 32(R9), Y6, Y10)
	Q4P2QUERY((R9)(BX*1), 32(R9)(BX*1), Y7, Y11)
	VPHADDW     Y5, Y4, Y4
	VPHADDW     Y7, Y6, Y6
	VPHADDW     Y6, Y4, Y4
	VPMADDWD    Y2, Y4, Y4
	VCVTDQ2PS   Y4, Y4
	VMOVD       -4(R8), X8
	VPINSRD     $1, -4(R8)(CX*1), X8, X8
	VCVTPH2PS   X8, X8
	VPERMPS     Y8, Y12, Y9
	VPERMPS     Y8, Y13, Y10
	VMULPS      (R12), Y9, Y9
	VFMADD231PS Y9, Y4, Y0
	VFMADD231PS 32(R12), Y10, Y0
	LEAQ        (R8)(CX*2), R8
	ADDQ        $64, SI
	ADDQ        $64, R9
	ADDQ        $64, R12
	DECQ        R14
	JNZ         pair

	VEXTRACTF128 $1, Y0, X3
	VADDPS       X3, X0, X0
	Q4I8STORE
