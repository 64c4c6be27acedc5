//go:build amd64

#include "textflag.h"
#include "chanquery_amd64.h"
#include "prefetch_amd64.h"
#include "r4frame_amd64.h"
#include "i16r4_amd64.h"

// Integer scores against int16 queries (int8_i16_amd64.go): of Int8 rows, and of the
// token rows of KIVI key blocks (4-bit and 8-bit Channel codes) with the query
// preparation they need.

// Channel rows (the token rows of a KIVI key block: d unsigned codes, no parameters)
// against an int16 query of the block's pre-scaled query q·scale: q holds d int16
// codes, then its float32 D, then the float32 zero term b. A row's score is
// D·Σ_c q̂_c·code_c + b; the sum is exact in int32 for the head sizes chanI16 allows.
// Each step widens 32 codes of a row (channels c..c+31) to words in the order of the
// query's codes, Y8 (the first 16) and Y9 (the next 16), from the code bytes at
// (r)(BX*1).

// WIDENU8 widens 32 8-bit codes.
#define WIDENU8(r) \
	VPMOVZXBW (r)(BX*1), Y8 \
	VPMOVZXBW 16(r)(BX*1), Y9

// WIDENU4 widens 32 4-bit codes (16 bytes, channel 2j in the low nibble of byte j)
// in the order of a query split by splitEvenOdd (per 16 channels, the even ones then
// the odd ones): the bytes widened to words, their low and high nibbles (channels 2j
// and 2j+1 at word j), then the low and high halves of each paired by lane. Y15: byte
// masks 0x0f; Y10 scratch.
#define WIDENU4(r) \
	VPMOVZXBW  (r)(BX*1), Y9 \
	VPSRLW     $4, Y9, Y10 \
	VPAND      Y15, Y9, Y9 \
	VPERM2I128 $0x20, Y10, Y9, Y8 \
	VPERM2I128 $0x31, Y10, Y9, Y9

// CHANACC adds the products of the query words Y12, Y13 with row r's widened codes
// to acc.
#define CHANACC(WIDEN, r, acc) \
	WIDEN(r) \
	VPMADDWD Y12, Y8, Y8 \
	VPMADDWD Y13, Y9, Y9 \
	VPADDD   Y8, acc, acc \
	VPADDD   Y9, acc, acc

// NIBMASK sets Y15 to the byte masks 0x0f. It uses AX.
#define NIBMASK \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X15 \
	VPBROADCASTD X15, Y15

// CHANR4(WIDEN, CSTEP) is the body of the one-query kernels (dotU4ChanI16,
// dotU8ChanI16): ng blocks of four rows, CSTEP code bytes per 32 channels.
#define CHANR4(WIDEN, CSTEP) \
	MOVQ out+0(FP), DI \
	MOVQ q+8(FP), SI \
	MOVQ rows+16(FP), R8 \
	MOVQ stride+24(FP), DX \
	MOVQ ng+32(FP), R13 \
	MOVQ d+40(FP), R14 \
	VBROADCASTSS (SI)(R14*2), X7 \
	VBROADCASTSS 4(SI)(R14*2), X6 \
	NIBMASK \
cblock: \
	LEAQ  (R8)(DX*1), R9 \
	LEAQ  (R9)(DX*1), R10 \
	LEAQ  (R10)(DX*1), R11 \
	PREFETCH4(R8, R9, R10, R11) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	XORQ  AX, AX \
	XORQ  BX, BX \
cloop: \
	VMOVDQU (SI)(AX*2), Y12 \
	VMOVDQU 32(SI)(AX*2), Y13 \
	CHANACC(WIDEN, R8, Y0) \
	CHANACC(WIDEN, R9, Y1) \
	CHANACC(WIDEN, R10, Y2) \
	CHANACC(WIDEN, R11, Y3) \
	ADDQ $32, AX \
	ADDQ CSTEP, BX \
	CMPQ AX, R14 \
	JB   cloop \
	SUMS4 \
	VMULPS  X7, X0, X0 \
	VADDPS  X6, X0, X0 \
	VMOVUPS X0, (DI) \
	ADDQ    $16, DI \
	LEAQ    (R8)(DX*4), R8 \
	DECQ    R13 \
	JNZ     cblock \
	VZEROUPPER \
	RET

// QACC adds the products of the widened codes Y8, Y9 with the query words at q to
// acc.
#define QACC(q, acc) \
	VPMADDWD (q)(AX*2), Y8, Y10 \
	VPMADDWD 32(q)(AX*2), Y9, Y11 \
	VPADDD   Y10, acc, acc \
	VPADDD   Y11, acc, acc

// CHANQ4(WIDEN, CSTEP) is the body of the four-query kernels (dotU4Q4ChanI16,
// dotU8Q4ChanI16): row by row, the codes widened once for the four queries at SI,
// R9, R10, R11 (q + r·qs); lane r goes to out + r·ldb.
#define CHANQ4(WIDEN, CSTEP) \
	MOVQ out+0(FP), DI \
	MOVQ ldb+8(FP), R15 \
	MOVQ q+16(FP), SI \
	MOVQ qs+24(FP), CX \
	MOVQ rows+32(FP), R8 \
	MOVQ stride+40(FP), R12 \
	MOVQ n+48(FP), R13 \
	MOVQ d+56(FP), R14 \
	LEAQ (SI)(CX*1), R9 \
	LEAQ (R9)(CX*1), R10 \
	LEAQ (R10)(CX*1), R11 \
	LEAQ (R15)(R15*2), DX \
	VMOVSS    (SI)(R14*2), X7 \
	VINSERTPS $0x10, (R9)(R14*2), X7, X7 \
	VINSERTPS $0x20, (R10)(R14*2), X7, X7 \
	VINSERTPS $0x30, (R11)(R14*2), X7, X7 \
	VMOVSS    4(SI)(R14*2), X6 \
	VINSERTPS $0x10, 4(R9)(R14*2), X6, X6 \
	VINSERTPS $0x20, 4(R10)(R14*2), X6, X6 \
	VINSERTPS $0x30, 4(R11)(R14*2), X6, X6 \
	NIBMASK \
crow: \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	XORQ  AX, AX \
	XORQ  BX, BX \
cqloop: \
	WIDEN(R8) \
	QACC(SI, Y0) \
	QACC(R9, Y1) \
	QACC(R10, Y2) \
	QACC(R11, Y3) \
	ADDQ $32, AX \
	ADDQ CSTEP, BX \
	CMPQ AX, R14 \
	JB   cqloop \
	SUMS4 \
	VMULPS     X7, X0, X0 \
	VADDPS     X6, X0, X0 \
	VMOVSS     X0, (DI) \
	VEXTRACTPS $1, X0, (DI)(R15*1) \
	VEXTRACTPS $2, X0, (DI)(R15*2) \
	VEXTRACTPS $3, X0, (DI)(DX*1) \
	ADDQ $4, DI \
	ADDQ R12, R8 \
	DECQ R13 \
	JNZ  crow \
	VZEROUPPER \
	RET

// func dotInt8R4I16(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)
// The r4Kernel of Int8 rows (f16 scale, then d int8 codes, d a multiple of 16)
// against an int16 query: q holds d int16 codes, then the query's float32 scale D at
// q + 2d; out[4k+r] = s_r·D·Σ_c q̂_c·code_rc, the sum exact in int32 (VPMOVSXBW,
// VPMADDWD: each lane adds pairs q̂·code, |q̂| ≤ 32767, |code| ≤ 128).
TEXT ·dotInt8R4I16(SB), NOSPLIT, $0-72
	I16R4ARGS

jgroup:
	I16R4GROUP(jdone)

jloop:
	VMOVDQU   (SI)(AX*2), Y8
	VPMOVSXBW 2(R8)(AX*1), Y9
	VPMOVSXBW 2(BX)(AX*1), Y10
	VPMOVSXBW 2(CX)(AX*1), Y11
	VPMOVSXBW 2(DX)(AX*1), Y12
	VPMADDWD  Y8, Y9, Y9
	VPMADDWD  Y8, Y10, Y10
	VPMADDWD  Y8, Y11, Y11
	VPMADDWD  Y8, Y12, Y12
	VPADDD    Y9, Y0, Y0
	VPADDD    Y10, Y1, Y1
	VPADDD    Y11, Y2, Y2
	VPADDD    Y12, Y3, Y3
	ADDQ      $16, AX
	CMPQ      AX, R14
	JB        jloop

	SUMS4
	I16R4SCALE
	JMP jgroup

jdone:
	VZEROUPPER
	RET

// I16QUANT(src, EXTRA) ends an int16 quantization: Y0 holds the lanes' max|q|, Y8
// their Σ q·0. The CX values at src are coded to int16 at DI (src may be DI: each
// value is read before its code is written over it), round(q·inv) to nearest even,
// then D = m/32767 goes to DI + 2·CX (m = max|q|, inv = 32767/m; for m below 2^-110
// the codes and D are 0; a NaN or infinite value makes D NaN), EXTRA runs, and the
// function returns. It uses R8, AX and X1..X5.
#define I16QUANT(src, EXTRA) \
	VEXTRACTF128 $1, Y0, X1 \
	VMAXPS       X1, X0, X0 \
	VPSHUFD      $0x4e, X0, X1 \
	VMAXPS       X1, X0, X0 \
	VPSHUFD      $0xb1, X0, X1 \
	VMAXPS       X1, X0, X0 \
	VEXTRACTF128 $1, Y8, X1 \
	VADDPS       X1, X8, X8 \
	VPSHUFD      $0x4e, X8, X1 \
	VADDPS       X1, X8, X8 \
	VPSHUFD      $0xb1, X8, X1 \
	VADDPS       X1, X8, X8 \
	MOVL         $0x08800000, R8 \
	VMOVD        R8, X1 \
	VUCOMISS     X1, X0 \
	JB           i16zero \
	MOVL         $0x46fffe00, R8 \
	VMOVD        R8, X1 \
	VDIVSS       X1, X0, X2 \
	VDIVSS       X0, X1, X3 \
	VADDSS       X8, X2, X2 \
	VBROADCASTSS X3, Y3 \
	XORQ         AX, AX \
i16code: \
	VMULPS    (src)(AX*4), Y3, Y4 \
	VMULPS    32(src)(AX*4), Y3, Y5 \
	VCVTPS2DQ Y4, Y4 \
	VCVTPS2DQ Y5, Y5 \
	VPACKSSDW Y5, Y4, Y4 \
	VPERMQ    $0xd8, Y4, Y4 \
	VMOVDQU   Y4, (DI)(AX*2) \
	ADDQ      $16, AX \
	CMPQ      AX, CX \
	JB        i16code \
	VMOVSS    X2, (DI)(CX*2) \
	EXTRA \
	VZEROUPPER \
	RET \
i16zero: \
	VPXOR   Y4, Y4, Y4 \
	XORQ    AX, AX \
i16clear: \
	VMOVDQU Y4, (DI)(AX*2) \
	ADDQ    $16, AX \
	CMPQ    AX, CX \
	JB      i16clear \
	VMOVSS  X8, (DI)(CX*2) \
	EXTRA \
	VZEROUPPER \
	RET

// NOEXTRA does nothing after D is stored.
#define NOEXTRA

// func quantQueryI16(dst, q unsafe.Pointer, d int)
// dst gets d int16 codes round(q·inv) (to nearest even, VCVTPS2DQ), then the float32
// D = m/32767 at dst + 2d, where m = max|q| and inv = 32767/m; for m below 2^-110 the
// codes and D are 0. A NaN or infinite value makes D NaN. d is a multiple of 16.
TEXT ·quantQueryI16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ d+16(FP), CX

	// m = max|q|: the sign bit cleared, then VMAXPS over the lanes; Y8 = Σ q·0: ±0,
	// or NaN where a value is NaN or infinite (VMAXPS drops NaNs; D takes it, so the
	// scores are NaN as the float kernels' would be).
	VPCMPEQD Y6, Y6, Y6
	VPSRLD   $1, Y6, Y6
	VXORPS   Y0, Y0, Y0
	VXORPS   Y8, Y8, Y8
	VXORPS   Y9, Y9, Y9
	XORQ     AX, AX

qmax:
	VANDPS      (SI)(AX*4), Y6, Y1
	VMAXPS      Y1, Y0, Y0
	VANDPS      32(SI)(AX*4), Y6, Y1
	VMAXPS      Y1, Y0, Y0
	VFMADD231PS (SI)(AX*4), Y9, Y8
	VFMADD231PS 32(SI)(AX*4), Y9, Y8
	ADDQ        $16, AX
	CMPQ        AX, CX
	JB          qmax

	I16QUANT(SI, NOEXTRA)

// func dotInt8Q4I16(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)
// Four int16 queries (codes then D, as for dotInt8R4I16) at q + r·qs against the n
// Int8 rows at src + i·stride: out[i + r·ldb/4] = s_i·D_r·Σ_c q̂_rc·code_ic. Each row's
// codes are widened once for the four queries.
TEXT ·dotInt8Q4I16(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldb+8(FP), BX
	MOVQ q+16(FP), SI
	MOVQ qs+24(FP), CX
	MOVQ src+32(FP), R8
	MOVQ stride+40(FP), R12
	MOVQ n+48(FP), R13
	MOVQ d+56(FP), R14
	LEAQ (SI)(CX*1), R9
	LEAQ (R9)(CX*1), R10
	LEAQ (R10)(CX*1), R11
	LEAQ (BX)(BX*2), DX // 3·ldb

	// The four queries' D, lane r from query r.
	VMOVSS   (SI)(R14*2), X7
	VINSERTPS $0x10, (R9)(R14*2), X7, X7
	VINSERTPS $0x20, (R10)(R14*2), X7, X7
	VINSERTPS $0x30, (R11)(R14*2), X7, X7

krow:
	TESTQ R13, R13
	JZ    kdone
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  AX, AX

kloop:
	VPMOVSXBW 2(R8)(AX*1), Y8
	VPMADDWD  (SI)(AX*2), Y8, Y9
	VPMADDWD  (R9)(AX*2), Y8, Y10
	VPMADDWD  (R10)(AX*2), Y8, Y11
	VPMADDWD  (R11)(AX*2), Y8, Y12
	VPADDD    Y9, Y0, Y0
	VPADDD    Y10, Y1, Y1
	VPADDD    Y11, Y2, Y2
	VPADDD    Y12, Y3, Y3
	ADDQ      $16, AX
	CMPQ      AX, R14
	JB        kloop

	SUMS4
	MOVWLZX      (R8), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, X1
	VMULPS       X1, X0, X0
	VMULPS       X7, X0, X0
	VMOVSS       X0, (DI)
	VEXTRACTPS   $1, X0, (DI)(BX*1)
	VEXTRACTPS   $2, X0, (DI)(BX*2)
	VEXTRACTPS   $3, X0, (DI)(DX*1)
	ADDQ         $4, DI
	ADDQ         R12, R8
	DECQ         R13
	JMP          krow

kdone:
	VZEROUPPER
	RET

// func dotU4ChanI16(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)
TEXT ·dotU4ChanI16(SB), NOSPLIT, $0-48
	CHANR4(WIDENU4, $16)

// func dotU8ChanI16(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)
TEXT ·dotU8ChanI16(SB), NOSPLIT, $0-48
	CHANR4(WIDENU8, $32)

// func dotU4Q4ChanI16(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)
TEXT ·dotU4Q4ChanI16(SB), NOSPLIT, $0-64
	CHANQ4(WIDENU4, $16)

// func dotU8Q4ChanI16(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)
TEXT ·dotU8Q4ChanI16(SB), NOSPLIT, $0-64
	CHANQ4(WIDENU8, $32)

// CQB stores b (X7) after D.
#define CQB VMOVSS X7, 4(DI)(CX*2)

// func chanQueryI16F16C(dst, q, block unsafe.Pointer, d, split int)
// channelQueryF16C, splitEvenOdd (split ≠ 0) and quantQueryI16 of one query in one
// call, for the int16 Channel kernels: dst gets the d int16 codes of q·scale (per 16
// channels the even ones, then the odd ones, when split), then D, then the zero term
// b = Σ q·zero, every value as those three compute it (b summed in the same order).
// The pre-scaled values pass through dst as float32s (4d bytes). d is a multiple of 16.
TEXT ·chanQueryI16F16C(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ block+16(FP), DX
	MOVQ d+24(FP), CX
	MOVQ split+32(FP), R9

	VPCMPEQD Y6, Y6, Y6
	VPSRLD   $1, Y6, Y6 // |x| mask
	VXORPS   Y7, Y7, Y7 // Σ q·zero
	VXORPS   Y8, Y8, Y8 // Σ q'·0
	VXORPS   Y9, Y9, Y9 // zero
	VXORPS   Y10, Y10, Y10 // max|q'|
	XORQ     AX, AX

cq:
	CQHALF(0, 0, Y12)
	CQHALF(32, 32, Y13)
	VANDPS      Y6, Y12, Y0
	VMAXPS      Y0, Y10, Y10
	VANDPS      Y6, Y13, Y0
	VMAXPS      Y0, Y10, Y10
	VFMADD231PS Y12, Y9, Y8
	VFMADD231PS Y13, Y9, Y8
	TESTQ       R9, R9
	JZ          cqstore
	VSHUFPS     $0x88, Y13, Y12, Y0
	VSHUFPS     $0xdd, Y13, Y12, Y1
	VPERMPD     $0xd8, Y0, Y12 // the even channels
	VPERMPD     $0xd8, Y1, Y13 // the odd ones

cqstore:
	VMOVUPS Y12, (DI)(AX*4)
	VMOVUPS Y13, 32(DI)(AX*4)
	ADDQ    $64, DX
	ADDQ    $16, AX
	CMPQ    AX, CX
	JB      cq

	// b, reduced as channelQueryF16C does; then the codes in place.
	VEXTRACTF128 $1, Y7, X1
	VADDPS       X1, X7, X7
	VHADDPS      X7, X7, X7
	VHADDPS      X7, X7, X7
	VMOVAPS      Y10, Y0
	I16QUANT(DI, CQB)
