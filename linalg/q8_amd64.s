//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"

// Q8_0 products in AVX2 + FMA + F16C assembly. A Q8_0 block is 34 bytes: a binary16
// scale, then 32 int8 codes. Per block the integer dot of the weight codes w and the
// activation codes x is VPMADDUBSW(|w|, x·sign(w)) (|w| ≤ 128, |x| ≤ 127: a pair sum is at
// most 32512, no saturation) then VPMADDWD with ones (8 int32 partial sums); the sums are
// converted to float32 and accumulated with one FMA by d_w·d_x, d_w widened by VCVTPH2PS.
// Every routine ends with VZEROUPPER (scalar Go float code follows).

// ROWBLOCK accumulates one block of the row at ptr into acc: x codes in Y4, d_x
// broadcast in Y5, ones in Y15; t1, t2, t3 are scratch.
#define ROWBLOCK(ptr, acc, t1, t2, t3) \
	VMOVDQU      2(ptr), t1 \
	VPSIGNB      t1, Y4, t2 \
	VPSIGNB      t1, t1, t1 \
	VPMADDUBSW   t2, t1, t1 \
	VPMADDWD     Y15, t1, t1 \
	VCVTDQ2PS    t1, t1 \
	VPBROADCASTW (ptr), X3 \
	VCVTPH2PS    X3, t3 \
	VMULPS       Y5, t3, t3 \
	VFMADD231PS  t3, t1, acc

// q8PrefetchAhead is how far ahead of the block being multiplied q8Dot1 asks for weight
// bytes (PREFETCHT0, one per two blocks): rows are multiplied in memory order, so this
// runs ahead into the following rows. Prefetching a line past the matrix is harmless.
// 4096 measured best of 1-16 KiB on the AMD Zen 3 this was tuned on (llama-134m decode,
// 5% less CPU time than prefetching whole rows from Go).
#define q8PrefetchAhead 4096

// func q8Dot1(w *byte, xq *int8, xd *float32, nb int) float32
// Σ_b d_w(b)·xd[b]·Σ_j w(b,j)·xq[32b+j] over the nb blocks of the row at w, two blocks per
// step in two accumulators.
TEXT ·q8Dot1(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), R8
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), BX
	MOVQ nb+24(FP), CX
	ONES16
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

d1loop2:
	CMPQ         CX, $2
	JB           d1tail
	PREFETCHT0   q8PrefetchAhead(R8)
	VMOVDQU      (DI), Y4
	VBROADCASTSS (BX), Y5
	ROWBLOCK(R8, Y0, Y6, Y7, Y8)
	VMOVDQU      32(DI), Y4
	VBROADCASTSS 4(BX), Y5
	LEAQ         34(R8), R9
	ROWBLOCK(R9, Y1, Y9, Y10, Y11)
	ADDQ         $68, R8
	ADDQ         $64, DI
	ADDQ         $8, BX
	SUBQ         $2, CX
	JMP          d1loop2

d1tail:
	TESTQ        CX, CX
	JE           d1done
	VMOVDQU      (DI), Y4
	VBROADCASTSS (BX), Y5
	ROWBLOCK(R8, Y0, Y6, Y7, Y8)

d1done:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+32(FP)
	RET

// BLOCK8 accumulates the block at woff(R8) times the activation codes at xoff(DI) into
// acc, scaled by the combined scale at soff(SP) (set by SCALES8); Y15 holds int16 ones.
// Y4, Y5 and Y6 are scratch.
#define BLOCK8(woff, xoff, soff, acc) \
	VMOVDQU      woff(R8), Y6 \
	VMOVDQU      xoff(DI), Y4 \
	VPSIGNB      Y6, Y4, Y4 \
	VPSIGNB      Y6, Y6, Y6 \
	VPMADDUBSW   Y4, Y6, Y6 \
	VPMADDWD     Y15, Y6, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VBROADCASTSS soff(SP), Y5 \
	VFMADD231PS  Y5, Y6, acc

// SCALES8 stores the combined scales d_w(b)·xd[b] of the 8 blocks at R8 to sc-32(SP):
// the 8 binary16 weight scales, 34 bytes apart, are gathered by scalar loads into R12
// and R14, then widened by one VCVTPH2PS and multiplied by xd[0:8] (at BX) with one
// VMULPS. Per block that replaces a broadcast, a VCVTPH2PS and a VMULPS on the vector
// pipes the integer dot needs. The products are those ROWBLOCK forms. R13 and Y3 are
// scratch.
#define SCALES8 \
	MOVWQZX   0(R8), R12 \
	MOVWQZX   34(R8), R13 \
	SHLQ      $16, R13 \
	ORQ       R13, R12 \
	MOVWQZX   68(R8), R13 \
	SHLQ      $32, R13 \
	ORQ       R13, R12 \
	MOVWQZX   102(R8), R13 \
	SHLQ      $48, R13 \
	ORQ       R13, R12 \
	MOVWQZX   136(R8), R14 \
	MOVWQZX   170(R8), R13 \
	SHLQ      $16, R13 \
	ORQ       R13, R14 \
	MOVWQZX   204(R8), R13 \
	SHLQ      $32, R13 \
	ORQ       R13, R14 \
	MOVWQZX   238(R8), R13 \
	SHLQ      $48, R13 \
	ORQ       R13, R14 \
	VMOVQ     R12, X3 \
	VPINSRQ   $1, R14, X3, X3 \
	VCVTPH2PS X3, Y3 \
	VMULPS    (BX), Y3, Y3 \
	VMOVUPS   Y3, sc-32(SP)

// func q8DotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, nb int)
// out[r] = the q8Dot1 sum of the row at w+r·rowBytes, for r < rows: the rows one after
// the other in memory order (one sequential stream, prefetched ahead as in q8Dot1), without
// a call per row. Blocks go 8 at a time with their scales formed by SCALES8, the rest 2
// at a time as in q8Dot1; even blocks add into Y0 and odd ones into Y1 in the same order
// as q8Dot1, so the sums are bit-identical to it. 8 blocks at a time take 10% less time
// from cache than 2 at a time (llama-134m rows, AMD EPYC Zen 3: 23.5 → 26 GB/s for 768
// columns, 26.5 → 29.3 for 2048).
TEXT ·q8DotRows(SB), NOSPLIT, $32-56
	MOVQ out+0(FP), AX
	MOVQ w+8(FP), R10
	MOVQ rows+24(FP), R11
	ONES16

rrow:
	TESTQ R11, R11
	JE    rdone
	MOVQ  R10, R8
	MOVQ  xq+32(FP), DI
	MOVQ  xd+40(FP), BX
	MOVQ  nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

rloop8:
	CMPQ       CX, $8
	JB         rloop2
	PREFETCHT0 q8PrefetchAhead(R8)
	PREFETCHT0 (q8PrefetchAhead+64)(R8)
	PREFETCHT0 (q8PrefetchAhead+128)(R8)
	PREFETCHT0 (q8PrefetchAhead+192)(R8)
	PREFETCHT0 (q8PrefetchAhead+256)(R8)
	SCALES8
	BLOCK8(2, 0, sc-32, Y0)
	BLOCK8(36, 32, sc-28, Y1)
	BLOCK8(70, 64, sc-24, Y0)
	BLOCK8(104, 96, sc-20, Y1)
	BLOCK8(138, 128, sc-16, Y0)
	BLOCK8(172, 160, sc-12, Y1)
	BLOCK8(206, 192, sc-8, Y0)
	BLOCK8(240, 224, sc-4, Y1)
	ADDQ       $272, R8
	ADDQ       $256, DI
	ADDQ       $32, BX
	SUBQ       $8, CX
	JMP        rloop8

rloop2:
	CMPQ         CX, $2
	JB           rtail
	PREFETCHT0   q8PrefetchAhead(R8)
	VMOVDQU      (DI), Y4
	VBROADCASTSS (BX), Y5
	ROWBLOCK(R8, Y0, Y6, Y7, Y8)
	VMOVDQU      32(DI), Y4
	VBROADCASTSS 4(BX), Y5
	LEAQ         34(R8), R9
	ROWBLOCK(R9, Y1, Y9, Y10, Y11)
	ADDQ         $68, R8
	ADDQ         $64, DI
	ADDQ         $8, BX
	SUBQ         $2, CX
	JMP          rloop2

rtail:
	TESTQ        CX, CX
	JE           rsum
	VMOVDQU      (DI), Y4
	VBROADCASTSS (BX), Y5
	ROWBLOCK(R8, Y0, Y6, Y7, Y8)

rsum:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (AX)
	ADDQ         $4, AX
	ADDQ         rowBytes+16(FP), R10
	DECQ         R11
	JMP          rrow

rdone:
	VZEROUPPER
	RET

// TOKEN computes the 8 int32 partial sums of one token's block (codes at off(DI)) against
// the weight block in Y6 (codes) and Y7 (their absolute values), into dst.
#define TOKEN(off, dst) \
	VMOVDQU    off(DI), dst \
	VPSIGNB    Y6, dst, dst \
	VPMADDUBSW dst, Y7, dst \
	VPMADDWD   Y15, dst, dst

// TOK4BLOCK accumulates one weight block at SI against the 4 tokens' codes at DI and
// scales at BX into acc (lanes t and 4+t: token t), then steps SI, DI and BX to the next
// block.
#define TOK4BLOCK(acc) \
	VMOVDQU      2(SI), Y6 \
	VPSIGNB      Y6, Y6, Y7 \
	TOKEN(0, Y8) \
	TOKEN(32, Y9) \
	TOKEN(64, Y10) \
	TOKEN(96, Y11) \
	VPHADDD      Y9, Y8, Y8 \
	VPHADDD      Y11, Y10, Y10 \
	VPHADDD      Y10, Y8, Y8 \
	VCVTDQ2PS    Y8, Y8 \
	VPBROADCASTW (SI), X12 \
	VCVTPH2PS    X12, Y12 \
	VMULPS       (BX), Y12, Y12 \
	VFMADD231PS  Y12, Y8, acc \
	ADDQ         $34, SI \
	ADDQ         $128, DI \
	ADDQ         $32, BX

// func q8Dot4TokN(out *float32, rows int, w *byte, xi *int8, xs *float32, nb, groups int)
// The dots of one row against groups consecutive 4-token groups, interleaved as
// interleave4 writes them (group g's block b: 4×32 codes at xi[128·nb·g+128b:], scales
// at xs[8·nb·g+8b+t] and xs[8·nb·g+8b+4+t]), token 4g+t's result stored at
// out[(4g+t)·rows]: the row stays in L1 while the tokens stream past it, without a call
// per group. Each weight block is loaded and its sign split off once for the 4 tokens,
// whose partial sums are folded by VPHADDD into one vector (lanes t and 4+t: token t),
// converted once and scaled by one FMA.
TEXT ·q8Dot4TokN(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), AX
	MOVQ rows+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R12
	MOVQ xi+24(FP), DI
	MOVQ xs+32(FP), BX
	MOVQ groups+48(FP), R11
	ONES16

ngroup:
	TESTQ  R11, R11
	JE     ndone
	MOVQ   w+16(FP), SI
	MOVQ   nb+40(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

nloop:
	CMPQ CX, $2
	JB   ntail
	TOK4BLOCK(Y0)
	TOK4BLOCK(Y1)
	SUBQ $2, CX
	JMP  nloop

ntail:
	TESTQ CX, CX
	JE    nsum
	TOK4BLOCK(Y0)

nsum:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVSS       X0, (AX)
	VEXTRACTPS   $1, X0, (AX)(DX*1)
	VEXTRACTPS   $2, X0, (AX)(DX*2)
	VEXTRACTPS   $3, X0, (AX)(R12*1)
	LEAQ         (AX)(DX*4), AX
	DECQ         R11
	JMP          ngroup

ndone:
	VZEROUPPER
	RET

// The 4-row × 8-token tile product (q8Tile): weights widened to int16 by q8Widen, 8 tokens'
// int16 codes packed by pack8 so that one vector holds a pair of codes of each token. Per
// pair of columns one VPMADDWD per row multiplies the row's two codes, broadcast, by the 8
// tokens' pair and adds into the row's int32 lanes (one lane per token): no sign split and
// no horizontal sums, which the one-row kernels above spend most of their time on. Each
// block's int32 sums are converted once and scaled by one FMA per row.

// TSTEP0 and TSTEP: column pair j of the block at SI (rows at SI, SI+R8, SI+2·R8, SI+R9)
// against the tokens' pair at DI; TSTEP0 starts the block's sums in Y0-Y3.
#define TSTEP0(j) \
	VMOVDQU      (32*j)(DI), Y8 \
	VPBROADCASTD (4*j)(SI), Y9 \
	VPMADDWD     Y9, Y8, Y0 \
	VPBROADCASTD (4*j)(SI)(R8*1), Y10 \
	VPMADDWD     Y10, Y8, Y1 \
	VPBROADCASTD (4*j)(SI)(R8*2), Y11 \
	VPMADDWD     Y11, Y8, Y2 \
	VPBROADCASTD (4*j)(SI)(R9*1), Y12 \
	VPMADDWD     Y12, Y8, Y3

#define TSTEP(j) \
	VMOVDQU      (32*j)(DI), Y8 \
	VPBROADCASTD (4*j)(SI), Y9 \
	VPMADDWD     Y9, Y8, Y9 \
	VPADDD       Y9, Y0, Y0 \
	VPBROADCASTD (4*j)(SI)(R8*1), Y10 \
	VPMADDWD     Y10, Y8, Y10 \
	VPADDD       Y10, Y1, Y1 \
	VPBROADCASTD (4*j)(SI)(R8*2), Y11 \
	VPMADDWD     Y11, Y8, Y11 \
	VPADDD       Y11, Y2, Y2 \
	VPBROADCASTD (4*j)(SI)(R9*1), Y12 \
	VPMADDWD     Y12, Y8, Y12 \
	VPADDD       Y12, Y3, Y3

// TMIN subtracts the row's block minimum at off(R13) times the tokens' scaled code sums in
// Y14 from facc (Q4_K).
#define TMIN(facc, off) \
	VBROADCASTSS off(R13), Y9 \
	VFNMADD231PS Y14, Y9, facc

// TSCALE adds the block's int32 sums acc, scaled by the row's weight scale at off(BX) times
// the tokens' scales in Y13, to facc.
#define TSCALE(acc, facc, off) \
	VCVTDQ2PS    acc, acc \
	VBROADCASTSS off(BX), Y9 \
	VMULPS       Y13, Y9, Y9 \
	VFMADD231PS  Y9, acc, facc

// func q8Tile(out *float32, rows int, w16 *int16, dw, dm *float32, xg *int16, xdg, xsg *float32, nb, groups int)
// For each of groups 8-token groups (group g: codes at xg+512·nb·g bytes, scales at
// xdg[8·nb·g:]): the 4 rows of nb blocks of int16 codes at w16 (row stride 64·nb bytes),
// block scales at dw[4b+i], against the 8 tokens; row i of token 8g+t stored at
// out[(8g+t)·rows+i]. When dm is not nil, dm[4b+i]·xsg[8·(nb·g+b)+t] is subtracted too.
// The sums stay in registers (Y4-Y7: row i, lane t) until the group is done, then are
// transposed so that each token's 4 rows are stored as one 16-byte vector.
TEXT ·q8Tile(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), AX
	MOVQ rows+8(FP), DX
	SHLQ $2, DX
	MOVQ nb+64(FP), R8
	SHLQ $6, R8
	LEAQ (R8)(R8*2), R9
	MOVQ xg+40(FP), DI
	MOVQ xdg+48(FP), R10
	MOVQ xsg+56(FP), R14
	MOVQ groups+72(FP), R11

tgroup:
	TESTQ  R11, R11
	JE     tdone
	MOVQ   w16+16(FP), SI
	MOVQ   dw+24(FP), BX
	MOVQ   dm+32(FP), R13
	MOVQ   nb+64(FP), CX
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

tblock:
	TSTEP0(0)
	TSTEP(1)
	TSTEP(2)
	TSTEP(3)
	TSTEP(4)
	TSTEP(5)
	TSTEP(6)
	TSTEP(7)
	TSTEP(8)
	TSTEP(9)
	TSTEP(10)
	TSTEP(11)
	TSTEP(12)
	TSTEP(13)
	TSTEP(14)
	TSTEP(15)
	VMOVUPS (R10), Y13
	TSCALE(Y0, Y4, 0)
	TSCALE(Y1, Y5, 4)
	TSCALE(Y2, Y6, 8)
	TSCALE(Y3, Y7, 12)
	TESTQ   R13, R13
	JE      tnext
	VMOVUPS (R14), Y14
	TMIN(Y4, 0)
	TMIN(Y5, 4)
	TMIN(Y6, 8)
	TMIN(Y7, 12)
	ADDQ    $16, R13
	ADDQ    $32, R14

tnext:
	ADDQ    $64, SI
	ADDQ    $512, DI
	ADDQ    $16, BX
	ADDQ    $32, R10
	DECQ    CX
	JNE     tblock

	// Rows × tokens to tokens × rows: Y8-Y11 hold tokens 0-3 (low halves) and 4-7.
	VUNPCKLPS    Y5, Y4, Y0
	VUNPCKHPS    Y5, Y4, Y1
	VUNPCKLPS    Y7, Y6, Y2
	VUNPCKHPS    Y7, Y6, Y3
	VUNPCKLPD    Y2, Y0, Y8
	VUNPCKHPD    Y2, Y0, Y9
	VUNPCKLPD    Y3, Y1, Y10
	VUNPCKHPD    Y3, Y1, Y11
	MOVQ         AX, R12
	VMOVUPS      X8, (R12)
	ADDQ         DX, R12
	VMOVUPS      X9, (R12)
	ADDQ         DX, R12
	VMOVUPS      X10, (R12)
	ADDQ         DX, R12
	VMOVUPS      X11, (R12)
	ADDQ         DX, R12
	VEXTRACTF128 $1, Y8, (R12)
	ADDQ         DX, R12
	VEXTRACTF128 $1, Y9, (R12)
	ADDQ         DX, R12
	VEXTRACTF128 $1, Y10, (R12)
	ADDQ         DX, R12
	VEXTRACTF128 $1, Y11, (R12)
	LEAQ         (AX)(DX*8), AX
	DECQ         R11
	JMP          tgroup

tdone:
	VZEROUPPER
	RET

// func q8Widen(dst *int16, dw *float32, w *byte, rowBytes, rows, nb int, f16 *float32)
// For each of rows Q8_0 rows i at w+i·rowBytes: dst[32·nb·i+32b+j] = int16(code j of
// block b) (VPMOVSXBW), and dw[4b+i] = f16[scale bits of block b] (the f16Table lookup).
TEXT ·q8Widen(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ dw+8(FP), BX
	MOVQ w+16(FP), R9
	MOVQ rows+32(FP), R10
	MOVQ f16+48(FP), R11

wrow:
	TESTQ R10, R10
	JE    wdone
	MOVQ  R9, SI
	MOVQ  BX, R12
	MOVQ  nb+40(FP), CX

wloop:
	TESTQ     CX, CX
	JE        wnext
	VPMOVSXBW 2(SI), Y0
	VPMOVSXBW 18(SI), Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	MOVWLZX   (SI), AX
	MOVL      (R11)(AX*4), DX
	MOVL      DX, (R12)
	ADDQ      $34, SI
	ADDQ      $64, DI
	ADDQ      $16, R12
	DECQ      CX
	JMP       wloop

wnext:
	ADDQ rowBytes+24(FP), R9
	ADDQ $4, BX
	DECQ R10
	JMP  wrow

wdone:
	VZEROUPPER
	RET

// func q4Widen(dst *int16, w *byte, nb int)
// dst[32b+j] = int16(code j of the Q4_0 block b at w) − 8, for b < nb: the 16 code bytes'
// low nibbles are values 0-15, their high nibbles values 16-31.
TEXT ·q4Widen(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         nb+16(FP), CX
	MOVL         $0x0f0f0f0f, AX
	MOVD         AX, X14
	VPBROADCASTD X14, X14
	MOVL         $0x08080808, AX
	MOVD         AX, X15
	VPBROADCASTD X15, X15

q4wloop:
	TESTQ     CX, CX
	JE        q4wdone
	VMOVDQU   2(SI), X0
	VPSRLW    $4, X0, X1
	VPAND     X14, X0, X0
	VPAND     X14, X1, X1
	VPSUBB    X15, X0, X0
	VPSUBB    X15, X1, X1
	VPMOVSXBW X0, Y0
	VPMOVSXBW X1, Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $18, SI
	ADDQ      $64, DI
	DECQ      CX
	JMP       q4wloop

q4wdone:
	VZEROUPPER
	RET

// func q4KWiden(dst *int16, qs *byte, sc *[8]int16)
// The 256 codes of one Q4_K super-block (qs: 4 groups of 32 bytes, sub-block 2g in the
// low nibbles of group g, 2g+1 in the high) times their sub-block scales sc, as int16:
// dst[32j+l] = sc[j]·code l of sub-block j (VPMULLW: |sc·code| ≤ 63·15).
TEXT ·q4KWiden(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         qs+8(FP), SI
	MOVQ         sc+16(FP), BX
	MOVL         $0x0f0f0f0f, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15
	MOVQ         $4, CX

q4kwloop:
	VMOVDQU      (SI), Y0
	VPSRLW       $4, Y0, Y1
	VPAND        Y15, Y0, Y0
	VPAND        Y15, Y1, Y1
	VPBROADCASTW (BX), Y5
	VPBROADCASTW 2(BX), Y6
	VPMOVZXBW    X0, Y2
	VEXTRACTI128 $1, Y0, X0
	VPMOVZXBW    X0, Y3
	VPMULLW      Y5, Y2, Y2
	VPMULLW      Y5, Y3, Y3
	VMOVDQU      Y2, (DI)
	VMOVDQU      Y3, 32(DI)
	VPMOVZXBW    X1, Y2
	VEXTRACTI128 $1, Y1, X1
	VPMOVZXBW    X1, Y3
	VPMULLW      Y6, Y2, Y2
	VPMULLW      Y6, Y3, Y3
	VMOVDQU      Y2, 64(DI)
	VMOVDQU      Y3, 96(DI)
	ADDQ         $32, SI
	ADDQ         $4, BX
	ADDQ         $128, DI
	DECQ         CX
	JNE          q4kwloop
	VZEROUPPER
	RET

// TRANSPOSE8 transposes the 8×8 int32 matrix in Y0-Y7 (row t: token t's code pairs
// 0-7 of a half block) and stores column j (pair j of tokens 0-7) at off+32j(DI).
#define TRANSPOSE8(off) \
	VPUNPCKLDQ  Y1, Y0, Y8 \
	VPUNPCKHDQ  Y1, Y0, Y9 \
	VPUNPCKLDQ  Y3, Y2, Y10 \
	VPUNPCKHDQ  Y3, Y2, Y11 \
	VPUNPCKLDQ  Y5, Y4, Y12 \
	VPUNPCKHDQ  Y5, Y4, Y13 \
	VPUNPCKLDQ  Y7, Y6, Y14 \
	VPUNPCKHDQ  Y7, Y6, Y15 \
	VPUNPCKLQDQ Y10, Y8, Y0 \
	VPUNPCKHQDQ Y10, Y8, Y1 \
	VPUNPCKLQDQ Y11, Y9, Y2 \
	VPUNPCKHQDQ Y11, Y9, Y3 \
	VPUNPCKLQDQ Y14, Y12, Y4 \
	VPUNPCKHQDQ Y14, Y12, Y5 \
	VPUNPCKLQDQ Y15, Y13, Y6 \
	VPUNPCKHQDQ Y15, Y13, Y7 \
	VPERM2I128  $0x20, Y4, Y0, Y8 \
	VPERM2I128  $0x20, Y5, Y1, Y9 \
	VPERM2I128  $0x20, Y6, Y2, Y10 \
	VPERM2I128  $0x20, Y7, Y3, Y11 \
	VPERM2I128  $0x31, Y4, Y0, Y12 \
	VPERM2I128  $0x31, Y5, Y1, Y13 \
	VPERM2I128  $0x31, Y6, Y2, Y14 \
	VPERM2I128  $0x31, Y7, Y3, Y15 \
	VMOVDQU     Y8, (off)(DI) \
	VMOVDQU     Y9, (off+32)(DI) \
	VMOVDQU     Y10, (off+64)(DI) \
	VMOVDQU     Y11, (off+96)(DI) \
	VMOVDQU     Y12, (off+128)(DI) \
	VMOVDQU     Y13, (off+160)(DI) \
	VMOVDQU     Y14, (off+192)(DI) \
	VMOVDQU     Y15, (off+224)(DI)

// LOAD8(off) widens bytes off..off+15 of each of the 8 tokens' codes (token t at
// SI+t·cols) into Y0-Y7.
#define LOAD8(off) \
	VPMOVSXBW off(SI), Y0 \
	VPMOVSXBW off(SI)(R8*1), Y1 \
	VPMOVSXBW off(SI)(R8*2), Y2 \
	VPMOVSXBW off(SI)(R9*1), Y3 \
	VPMOVSXBW off(SI)(R8*4), Y4 \
	VPMOVSXBW off(SI)(R10*1), Y5 \
	VPMOVSXBW off(SI)(R9*2), Y6 \
	VPMOVSXBW off(SI)(R11*1), Y7

// func q8Pack8(xg *int16, xq *int8, cols, nb int)
// The codes of pack8 for 8 whole tokens (token t's nb blocks at xq+t·cols): per block,
// two 8×8 transposes of int16 code pairs.
TEXT ·q8Pack8(SB), NOSPLIT, $0-32
	MOVQ xg+0(FP), DI
	MOVQ xq+8(FP), SI
	MOVQ cols+16(FP), R8
	MOVQ nb+24(FP), CX
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11

p8loop:
	TESTQ CX, CX
	JE    p8done
	LOAD8(0)
	TRANSPOSE8(0)
	LOAD8(16)
	TRANSPOSE8(256)
	ADDQ  $32, SI
	ADDQ  $512, DI
	DECQ  CX
	JMP   p8loop

p8done:
	VZEROUPPER
	RET
