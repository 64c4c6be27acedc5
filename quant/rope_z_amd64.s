//go:build amd64

#include "textflag.h"
#include "prefetch_amd64.h"

// The integer pair kernel of pre-RoPE keys with ZMM registers (AVX-512 BW, VBMI and
// VNNI): the integers of dotRoPEInt1 (rope_amd64.s), 64 channels per register, in the
// chunk layouts of rope.go (ropeIntChunk: per 64 channels ŵ1, ŵ2, Ẑ1, Ẑ2 and the
// steps per lane; RoPE.pairsZ: per 64 channels 32 cosines, then 32 sines).

// ZLOADM and ZLOADP leave in Z0 the bytes of a row's chunk of codes at M permuted by
// Z28: ZLOADM reads the K1 code bytes alone (masked), ZLOADP 64 bytes (where they
// are readable).
#define ZLOADM(M) \
	VMOVDQU8.Z M, K1, Z0; \
	VPERMB     Z0, Z28, Z0
#define ZLOADP(M) VPERMB M, Z28, Z0

// ZFMA and ZCVT finish a row's chunk, its int32 lanes in Z1: ZFMA adds them into
// ACC times their group's step (Z20), ZCVT (one chunk, d = 64) leaves them in ACC,
// the steps applied after the lanes are added.
#define ZFMA(ACC) \
	VCVTDQ2PS   Z1, Z1; \
	VFMADD231PS Z20, Z1, ACC
#define ZCVT(ACC) VCVTDQ2PS Z1, ACC

// ZROW scores one row's chunk of 64 channels into its accumulator ACC: the codes
// (ZLOADM or ZLOADP at M; bits per code fixed by the unpack tables) are spread one
// per byte, channel order, by a byte permute (Z28) that gives each qword the bytes
// holding its eight codes, a multishift (Z29) that moves code i of the qword to byte
// i, and a mask (Z30); VPMADDUBSW against ŵ1 and ŵ2 gives the pair sums A and B
// (words, pair order), Ẑ1 and Ẑ2 are added, VPMADDWD and VPDPWSSD meet them with the
// row's cosines (T) and sines (T64) — int32 lane l holding pairs 2l and 2l+1,
// channels 4l..4l+3, of group l/8 — and FIN takes the lanes.
#define ZROW(LOAD, FIN, M, T, T64, ACC) \
	LOAD(M);                     \
	VPMULTISHIFTQB Z0, Z29, Z0;  \
	VPANDQ         Z30, Z0, Z0;  \
	VPMADDUBSW     Z16, Z0, Z1;  \
	VPMADDUBSW     Z17, Z0, Z2;  \
	VPADDW         Z18, Z1, Z1;  \
	VPADDW         Z19, Z2, Z2;  \
	VPMADDWD       T, Z1, Z1;    \
	VPDPWSSD       T64, Z2, Z1;  \
	FIN(ACC)

// ZROWS8 runs ZROW over the chunk of each of the eight rows of a batch into Z8..Z15:
// the first four rows from SI (R11 and R12 the code bytes of one and three rows)
// with their tables from BX (R13, R14 likewise), the next four from AX and DX.
#define ZROWS8(LOAD, FIN) \
	ZROW(LOAD, FIN, (SI), (BX), 64(BX), Z8);                       \
	ZROW(LOAD, FIN, (SI)(R11*1), (BX)(R13*1), 64(BX)(R13*1), Z9);  \
	ZROW(LOAD, FIN, (SI)(R11*2), (BX)(R13*2), 64(BX)(R13*2), Z10); \
	ZROW(LOAD, FIN, (SI)(R12*1), (BX)(R14*1), 64(BX)(R14*1), Z11); \
	ZROW(LOAD, FIN, (AX), (DX), 64(DX), Z12);                      \
	ZROW(LOAD, FIN, (AX)(R11*1), (DX)(R13*1), 64(DX)(R13*1), Z13); \
	ZROW(LOAD, FIN, (AX)(R11*2), (DX)(R13*2), 64(DX)(R13*2), Z14); \
	ZROW(LOAD, FIN, (AX)(R12*1), (DX)(R14*1), 64(DX)(R14*1), Z15)

// ZPAIR(A, B, S) leaves in S the lane sums of the accumulators of two rows, A's in
// 128-bit lanes 0–1, B's in 2–3: lane i + lane i+8 (clobbers Z21).
#define ZPAIR(A, B, S) \
	VSHUFF32X4 $0x44, B, A, S;   \
	VSHUFF32X4 $0xee, B, A, Z21; \
	VADDPS     Z21, S, S

// ZQUAD(S, U, Q) leaves in Q, from two ZPAIR results, 128-bit lane k = row k of the
// four: its elements i + (i+4), i < 4 (clobbers Z21).
#define ZQUAD(S, U, Q) \
	VSHUFF32X4 $0x88, U, S, Q;   \
	VSHUFF32X4 $0xdd, U, S, Z21; \
	VADDPS     Z21, Q, Q

// ZREDF adds each of the eight rows' lanes (Z8..Z15, the steps applied) in one
// tree, ((l + l+8) + (l+4 + l+12)) for l < 4, then (0 + 2) + (1 + 3), and stores the
// eight scores at DI (Z27: their lanes).
#define ZREDF \
	ZPAIR(Z8, Z9, Z22)               \
	ZPAIR(Z10, Z11, Z23)             \
	ZPAIR(Z12, Z13, Z24)             \
	ZPAIR(Z14, Z15, Z25)             \
	ZQUAD(Z22, Z23, Z8)              \
	ZQUAD(Z24, Z25, Z9)              \
	VSHUFPS   $0x44, Z9, Z8, Z10     \
	VSHUFPS   $0xee, Z9, Z8, Z11     \
	VADDPS    Z11, Z10, Z10          \
	VPERMILPS $0xb1, Z10, Z11        \
	VADDPS    Z11, Z10, Z10          \
	VPERMPS   Z10, Z27, Z10          \
	VMOVUPS   Y10, (DI)

// ZGRP(A, B, S) leaves in S the sums of two rows' lanes within their groups, 128-bit
// lanes [A's group 0, A's group 1, B's 0, B's 1]: lane i + lane i+4 (clobbers Z21).
#define ZGRP(A, B, S) \
	VSHUFF32X4 $0x88, B, A, S;   \
	VSHUFF32X4 $0xdd, B, A, Z21; \
	VADDPS     Z21, S, S

// ZRED64 (one chunk) adds each of the eight rows' lanes (Z8..Z15, int32 lanes
// converted) per group in one tree, e_i = l_i + l_{i+4} over the group's lanes,
// then (e0 + e2) + (e1 + e3), multiplies the sums by their steps (Z26, per lane of
// the sums) and adds the row's two, first group first; the eight scores go to DI
// (Z27: their lanes). Lane 4k + m of the sums: row 2m + k/2, group k mod 2.
#define ZRED64 \
	ZGRP(Z8, Z9, Z22)              \
	ZGRP(Z10, Z11, Z23)            \
	ZGRP(Z12, Z13, Z24)            \
	ZGRP(Z14, Z15, Z25)            \
	VSHUFPS    $0x44, Z23, Z22, Z8 \
	VSHUFPS    $0xee, Z23, Z22, Z9 \
	VADDPS     Z9, Z8, Z8          \
	VSHUFPS    $0x44, Z25, Z24, Z10 \
	VSHUFPS    $0xee, Z25, Z24, Z11 \
	VADDPS     Z11, Z10, Z10       \
	VSHUFPS    $0x88, Z10, Z8, Z11 \
	VSHUFPS    $0xdd, Z10, Z8, Z12 \
	VADDPS     Z12, Z11, Z11       \
	VMULPS     Z26, Z11, Z11       \
	VSHUFF32X4 $0xb1, Z11, Z11, Z12 \
	VADDPS     Z12, Z11, Z11       \
	VPERMPS    Z11, Z27, Z11       \
	VMOVUPS    Y11, (DI)

// ZBODY is dotRoPEIntZ's loop for one way of loading codes (LOAD), of finishing a
// chunk (FIN) and of adding a row's lanes (RED): eight rows at a time (R11 and R12
// the code bytes of one and three rows, R13 and R14 the table bytes), per chunk of
// 64 channels (the scratch at CX, up to R10) the chunk's weights into Z16..Z20 and
// ZROW for each row.
#define ZBODY(LOAD, FIN, RED, batchL, chunkL) \
batchL:                                                          \
	LEAQ       (SI)(R11*4), AX;                                  \
	PREFETCHT0 PFDIST(SI);                                       \
	PREFETCHT0 PFDIST(SI)(R11*1);                                \
	PREFETCHT0 PFDIST(SI)(R11*2);                                \
	PREFETCHT0 PFDIST(SI)(R12*1);                                \
	PREFETCHT0 PFDIST(AX);                                       \
	PREFETCHT0 PFDIST(AX)(R11*1);                                \
	PREFETCHT0 PFDIST(AX)(R11*2);                                \
	PREFETCHT0 PFDIST(AX)(R12*1);                                \
	VPXORD     Z8, Z8, Z8;                                       \
	VPXORD     Z9, Z9, Z9;                                       \
	VPXORD     Z10, Z10, Z10;                                    \
	VPXORD     Z11, Z11, Z11;                                    \
	VPXORD     Z12, Z12, Z12;                                    \
	VPXORD     Z13, Z13, Z13;                                    \
	VPXORD     Z14, Z14, Z14;                                    \
	VPXORD     Z15, Z15, Z15;                                    \
	MOVQ       R9, CX;                                           \
chunkL:                                                          \
	VMOVDQU64  (CX), Z16;                                        \
	VMOVDQU64  64(CX), Z17;                                      \
	VMOVDQU64  128(CX), Z18;                                     \
	VMOVDQU64  192(CX), Z19;                                     \
	VMOVDQU64  256(CX), Z20;                                     \
	LEAQ       (SI)(R11*4), AX;                                  \
	LEAQ       (BX)(R13*4), DX;                                  \
	ZROWS8(LOAD, FIN);                                           \
	ADDQ       unp+48(FP), SI;                                   \
	ADDQ       $128, BX;                                         \
	ADDQ       $320, CX;                                         \
	CMPQ       CX, R10;                                          \
	JB         chunkL;                                           \
	LEAQ       (SI)(R12*2), SI;                                  \
	ADDQ       R11, SI;                                          \
	LEAQ       (BX)(R14*2), BX;                                  \
	ADDQ       R13, BX;                                          \
	RED;                                                         \
	ADDQ       $32, DI;                                          \
	SUBQ       $8, R8;                                           \
	JNZ        batchL;                                           \
	VZEROUPPER;                                                  \
	RET

// ZBODY64 is ZBODY for one chunk (d = 64, FIN ZCVT, RED ZRED64): the weights loaded
// once, the accumulators written, not added to, and the eight rows' lines asked for
// as a run (8·rb ≤ 256 bytes: four lines).
#define ZBODY64(LOAD, batchL) \
	VMOVDQU64  (R9), Z16;                                        \
	VMOVDQU64  64(R9), Z17;                                      \
	VMOVDQU64  128(R9), Z18;                                     \
	VMOVDQU64  192(R9), Z19;                                     \
batchL:                                                          \
	LEAQ       (SI)(R11*4), AX;                                  \
	LEAQ       (BX)(R13*4), DX;                                  \
	PREFETCHT0 PFDIST(SI);                                       \
	PREFETCHT0 PFDIST+64(SI);                                    \
	PREFETCHT0 PFDIST+128(SI);                                   \
	PREFETCHT0 PFDIST+192(SI);                                   \
	ZROWS8(LOAD, ZCVT);                                          \
	LEAQ       (AX)(R11*4), SI;                                  \
	LEAQ       (DX)(R13*4), BX;                                  \
	ZRED64;                                                      \
	ADDQ       $32, DI;                                          \
	SUBQ       $8, R8;                                           \
	JNZ        batchL;                                           \
	VZEROUPPER;                                                  \
	RET

// func dotRoPEIntZ(out *float32, codes *byte, w *float32, tab *int16, n, d int, unp *byte, past bool)
// out[i] for the n code rows at codes (n a positive multiple of 8; d a multiple of 64;
// the code width that of the unpack tables at unp: ropeZUnpack), w the block's
// scratch in ropeIntChunk's layout, row i's table at tab + i·d words (RoPE.pairsZ).
// With past, 64 bytes from each chunk's first code byte are readable (else only the
// codes are read). Eight rows at a time; a row's lanes are added in one tree (ZREDF,
// or ZRED64 for d = 64), whatever the rows beside it. The integers are ropeIntGoZ's;
// the float sums differ only in order (for d = 64 they are ropeIntGoZ's, bit for bit).
TEXT ·dotRoPEIntZ(SB), NOSPLIT, $0-57
	MOVQ         out+0(FP), DI
	MOVQ         codes+8(FP), SI
	MOVQ         w+16(FP), R9
	MOVQ         tab+24(FP), BX
	MOVQ         n+32(FP), R8
	MOVQ         d+40(FP), R10
	MOVQ         unp+48(FP), CX
	VMOVDQU64    (CX), Z28
	VMOVDQU64    64(CX), Z29
	VPBROADCASTB 128(CX), Z30
	MOVBQZX      129(CX), AX   // code bytes per chunk: 8·bits
	MOVQ         $1, DX
	SHLXQ        AX, DX, DX
	DECQ         DX
	KMOVQ        DX, K1
	MOVQ         AX, unp+48(FP) // kept for the chunk loop
	MOVQ         R10, R11
	IMULQ        AX, R11
	SHRQ         $6, R11        // a row's code bytes: d·bits/8
	LEAQ         (R11)(R11*2), R12
	LEAQ         (R10*2), R13   // a row's table bytes: 2d
	LEAQ         (R13)(R13*2), R14
	MOVBQZX      past+56(FP), DX
	CMPQ         R10, $64
	JNE          zchunks
	VMOVDQU64    z64steps<>(SB), Z26
	VPERMPS      256(R9), Z26, Z26
	VMOVDQU64    z64gather<>(SB), Z27
	TESTQ        DX, DX
	JNZ          z64past
	ZBODY64(ZLOADM, z64mbatch)

z64past:
	ZBODY64(ZLOADP, z64pbatch)

zchunks:
	SHRQ      $6, R10
	IMULQ     $320, R10
	ADDQ      R9, R10
	VMOVDQU64 zgather<>(SB), Z27
	TESTQ     DX, DX
	JNZ       zcpast
	ZBODY(ZLOADM, ZFMA, ZREDF, zcmbatch, zcmchunk)

zcpast:
	ZBODY(ZLOADP, ZFMA, ZREDF, zcpbatch, zcpchunk)

// zgather: the eight scores' lanes after ZREDF, rows 0–7.
DATA zgather<>+0(SB)/8, $0x0000000400000000
DATA zgather<>+8(SB)/8, $0x0000000c00000008
DATA zgather<>+16(SB)/8, $0x0000000600000002
DATA zgather<>+24(SB)/8, $0x0000000e0000000a
DATA zgather<>+32(SB)/8, $0
DATA zgather<>+40(SB)/8, $0
DATA zgather<>+48(SB)/8, $0
DATA zgather<>+56(SB)/8, $0
GLOBL zgather<>(SB), RODATA|NOPTR, $64

// z64gather: the eight scores' lanes after ZRED64; z64steps: the lanes of the steps
// (the scratch's lanes 0–7 first group, 8–15 second) ZRED64's sums take.
DATA z64gather<>+0(SB)/8, $0x0000000800000000
DATA z64gather<>+8(SB)/8, $0x0000000900000001
DATA z64gather<>+16(SB)/8, $0x0000000a00000002
DATA z64gather<>+24(SB)/8, $0x0000000b00000003
DATA z64gather<>+32(SB)/8, $0
DATA z64gather<>+40(SB)/8, $0
DATA z64gather<>+48(SB)/8, $0
DATA z64gather<>+56(SB)/8, $0
GLOBL z64gather<>(SB), RODATA|NOPTR, $64

DATA z64steps<>+0(SB)/8, $0
DATA z64steps<>+8(SB)/8, $0
DATA z64steps<>+16(SB)/8, $0x0000000800000008
DATA z64steps<>+24(SB)/8, $0x0000000800000008
DATA z64steps<>+32(SB)/8, $0
DATA z64steps<>+40(SB)/8, $0
DATA z64steps<>+48(SB)/8, $0x0000000800000008
DATA z64steps<>+56(SB)/8, $0x0000000800000008
GLOBL z64steps<>(SB), RODATA|NOPTR, $64

// ZHDR(off, S, L, YS, YL) widens the f16 scales and zeros of 16 channels (dwords
// scale | zero<<16 at off(BX)) into S and L.
#define ZHDR(off, S, L, YS, YL) \
	VMOVDQU64 off(BX), S; \
	VPSRLD    $16, S, L;  \
	VPMOVDW   S, YS;      \
	VPMOVDW   L, YL;      \
	VCVTPH2PS YS, S;      \
	VCVTPH2PS YL, L

// ZPAIRS(A, B, Z, T) writes to Z the sums of the pairs of A's and B's 32 lanes (lane
// 2j + lane 2j+1, pair j), evens Z29 and odds Z28 (clobbers T).
#define ZPAIRS(A, B, Z, T) \
	VMOVAPS   Z29, Z; \
	VPERMI2PS B, A, Z; \
	VMOVAPS   Z28, T; \
	VPERMI2PS B, A, T; \
	VADDPS    T, Z, Z

// ZMAG(A, B, C, E, M, S, T, U) writes to M the lanewise max and to S the sum of the
// magnitudes of A, B, C and E (clobbers T, U).
#define ZMAG(A, B, C, E, M, S, T, U) \
	VANDPS Z30, A, T; \
	VANDPS Z30, B, U; \
	VMAXPS U, T, M;   \
	VADDPS U, T, S;   \
	VANDPS Z30, C, T; \
	VANDPS Z30, E, U; \
	VMAXPS T, M, M;   \
	VADDPS T, S, S;   \
	VMAXPS U, M, M;   \
	VADDPS U, S, S

// ZHALVES(OP, A, B, R, T) reduces A and B (two groups' 16 lanes each) with OP
// (VMAXPS or VADDPS) so that every lane of R's 256-bit half g holds group g's result
// (clobbers T).
#define ZHALVES(OP, A, B, R, T) \
	VSHUFF32X4 $0x44, B, A, R; \
	VSHUFF32X4 $0xee, B, A, T; \
	OP         T, R, R;        \
	VSHUFF32X4 $0xb1, R, R, T; \
	OP         T, R, R;        \
	VPERMILPS  $0x4e, R, T;    \
	OP         T, R, R;        \
	VPERMILPS  $0xb1, R, T;    \
	OP         T, R, R

// ZW8(W, INV, off) stores the int8 roundings of W·INV (16 values) at off(DI).
#define ZW8(W, INV, off) \
	VMULPS    INV, W, W; \
	VCVTPS2DQ W, W;      \
	VPMOVSDB  W, off(DI)

// func ropeIntPrepZ(w *float32, q, sp *float32, hdr *byte, d int, zmax float32) bool
// ropeIntPrep of the query q rotated back by sp (2·d floats: RoPE.backSpread, as
// rotateRowsGo rotates), the block's scales and zeros read from its f16 header at
// hdr, written in ropeIntChunk's layout to w (ropeIntPrepZGo's bytes, bit for bit),
// for d a multiple of 64; false, the scratch undefined, where ropeIntPrep refuses the
// block (zmax: ropeZMax of the code width). A chunk's two groups go side by side:
// their maxima reduced in the two halves of one register, 127/max and max/127/2¹⁴
// one division each for both.
TEXT ·ropeIntPrepZ(SB), NOSPLIT, $0-49
	MOVQ         w+0(FP), DI
	MOVQ         q+8(FP), SI
	MOVQ         sp+16(FP), R8
	MOVQ         hdr+24(FP), BX
	MOVQ         d+32(FP), CX
	LEAQ         (R8)(CX*4), R9
	SHRQ         $6, CX
	VBROADCASTSS zmax+40(FP), Z25
	VPBROADCASTQ zsignodd<>(SB), Z31
	VPBROADCASTD zabs<>(SB), Z30
	VMOVDQU64    zeven<>(SB), Z29
	VMOVDQU64    zodd<>(SB), Z28
	VBROADCASTSS zc127<>(SB), Z27
	VBROADCASTSS zq14inv<>(SB), Z26
	VBROADCASTSS zinf<>(SB), Z24

zprep:
	// q rotated back: Z0..Z3 (channels 0–15, …, 48–63 of the chunk).
	VMOVUPS   (SI), Z0
	VMOVUPS   64(SI), Z1
	VMOVUPS   128(SI), Z2
	VMOVUPS   192(SI), Z3
	VPERMILPS $0xb1, Z0, Z4
	VPERMILPS $0xb1, Z1, Z5
	VPERMILPS $0xb1, Z2, Z6
	VPERMILPS $0xb1, Z3, Z7
	VMULPS    (R8), Z0, Z0
	VMULPS    64(R8), Z1, Z1
	VMULPS    128(R8), Z2, Z2
	VMULPS    192(R8), Z3, Z3
	VMULPS    (R9), Z4, Z4
	VMULPS    64(R9), Z5, Z5
	VMULPS    128(R9), Z6, Z6
	VMULPS    192(R9), Z7, Z7
	VADDPS    Z4, Z0, Z0
	VADDPS    Z5, Z1, Z1
	VADDPS    Z6, Z2, Z2
	VADDPS    Z7, Z3, Z3

	// Scales Z8..Z11, zeros Z12..Z15; the partners signed as w2 takes them, Z4..Z7.
	ZHDR(0, Z8, Z12, Y8, Y12)
	ZHDR(64, Z9, Z13, Y9, Y13)
	ZHDR(128, Z10, Z14, Y10, Y14)
	ZHDR(192, Z11, Z15, Y11, Y15)
	VPERMILPS $0xb1, Z0, Z4
	VPERMILPS $0xb1, Z1, Z5
	VPERMILPS $0xb1, Z2, Z6
	VPERMILPS $0xb1, Z3, Z7
	VXORPS    Z31, Z4, Z4
	VXORPS    Z31, Z5, Z5
	VXORPS    Z31, Z6, Z6
	VXORPS    Z31, Z7, Z7

	// w1 = q·s (Z16..Z19), w2 = q'·s (Z20..Z23); the zero products q'·lo (Z4..Z7)
	// and q·lo (Z12..Z15), their pair sums z1 (groups 0, 1: Z0, Z1) and z2 (Z2, Z3).
	VMULPS  Z8, Z0, Z16
	VMULPS  Z9, Z1, Z17
	VMULPS  Z10, Z2, Z18
	VMULPS  Z11, Z3, Z19
	VMULPS  Z8, Z4, Z20
	VMULPS  Z9, Z5, Z21
	VMULPS  Z10, Z6, Z22
	VMULPS  Z11, Z7, Z23
	VMULPS  Z12, Z4, Z4
	VMULPS  Z13, Z5, Z5
	VMULPS  Z14, Z6, Z6
	VMULPS  Z15, Z7, Z7
	VMULPS  Z12, Z0, Z12
	VMULPS  Z13, Z1, Z13
	VMULPS  Z14, Z2, Z14
	VMULPS  Z15, Z3, Z15
	ZPAIRS(Z12, Z13, Z0, Z8)
	ZPAIRS(Z14, Z15, Z1, Z8)
	ZPAIRS(Z4, Z5, Z2, Z8)
	ZPAIRS(Z6, Z7, Z3, Z8)

	// The groups' max |w| (Z14) and Σ |w| (Z15), every lane of half g group g's.
	ZMAG(Z16, Z17, Z20, Z21, Z10, Z11, Z8, Z9)
	ZMAG(Z18, Z19, Z22, Z23, Z12, Z13, Z8, Z9)
	ZHALVES(VMAXPS, Z10, Z12, Z14, Z8)
	ZHALVES(VADDPS, Z11, Z13, Z15, Z8)
	VPXORD   Z9, Z9, Z9
	VCMPPS   $0x1e, Z9, Z14, K2 // max > 0
	VCMPPS   $0x11, Z24, Z15, K3 // sum < +Inf, not NaN
	KANDW    K2, K3, K2
	KORTESTW K2, K2
	JCC      zfail

	// inv = 127/max (Z5; per group Z6, Z7) and the steps max/127/2¹⁴.
	VDIVPS     Z14, Z27, Z5
	VDIVPS     Z27, Z14, Z4
	VMULPS     Z26, Z4, Z4
	VMOVUPS    Z4, 256(DI)
	VSHUFF32X4 $0x00, Z5, Z5, Z6
	VSHUFF32X4 $0xaa, Z5, Z5, Z7
	ZW8(Z16, Z6, 0)
	ZW8(Z17, Z6, 16)
	ZW8(Z18, Z7, 32)
	ZW8(Z19, Z7, 48)
	ZW8(Z20, Z6, 64)
	ZW8(Z21, Z6, 80)
	ZW8(Z22, Z7, 96)
	ZW8(Z23, Z7, 112)

	// The zero terms times inv, refused past zmax, as int16.
	VMULPS    Z6, Z0, Z0
	VMULPS    Z7, Z1, Z1
	VMULPS    Z6, Z2, Z2
	VMULPS    Z7, Z3, Z3
	VANDPS    Z30, Z0, Z8
	VANDPS    Z30, Z1, Z9
	VANDPS    Z30, Z2, Z10
	VANDPS    Z30, Z3, Z11
	VCMPPS    $0x1e, Z25, Z8, K2
	VCMPPS    $0x1e, Z25, Z9, K3
	VCMPPS    $0x1e, Z25, Z10, K4
	VCMPPS    $0x1e, Z25, Z11, K5
	KORW      K2, K3, K2
	KORW      K4, K5, K4
	KORTESTW  K2, K4
	JNE       zfail
	VCVTPS2DQ Z0, Z0
	VCVTPS2DQ Z1, Z1
	VCVTPS2DQ Z2, Z2
	VCVTPS2DQ Z3, Z3
	VPMOVSDW  Z0, 128(DI)
	VPMOVSDW  Z1, 160(DI)
	VPMOVSDW  Z2, 192(DI)
	VPMOVSDW  Z3, 224(DI)

	ADDQ $256, SI
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $256, BX
	ADDQ $320, DI
	DECQ CX
	JNZ  zprep
	MOVB $1, ret+48(FP)
	VZEROUPPER
	RET

zfail:
	MOVB $0, ret+48(FP)
	VZEROUPPER
	RET

DATA zsignodd<>+0(SB)/8, $0x8000000000000000
GLOBL zsignodd<>(SB), RODATA|NOPTR, $8

DATA zabs<>+0(SB)/4, $0x7fffffff
GLOBL zabs<>(SB), RODATA|NOPTR, $4

DATA zc127<>+0(SB)/4, $0x42fe0000
GLOBL zc127<>(SB), RODATA|NOPTR, $4

DATA zq14inv<>+0(SB)/4, $0x38800000
GLOBL zq14inv<>(SB), RODATA|NOPTR, $4

DATA zinf<>+0(SB)/4, $0x7f800000
GLOBL zinf<>(SB), RODATA|NOPTR, $4

DATA zeven<>+0(SB)/8, $0x0000000200000000
DATA zeven<>+8(SB)/8, $0x0000000600000004
DATA zeven<>+16(SB)/8, $0x0000000a00000008
DATA zeven<>+24(SB)/8, $0x0000000e0000000c
DATA zeven<>+32(SB)/8, $0x0000001200000010
DATA zeven<>+40(SB)/8, $0x0000001600000014
DATA zeven<>+48(SB)/8, $0x0000001a00000018
DATA zeven<>+56(SB)/8, $0x0000001e0000001c
GLOBL zeven<>(SB), RODATA|NOPTR, $64

DATA zodd<>+0(SB)/8, $0x0000000300000001
DATA zodd<>+8(SB)/8, $0x0000000700000005
DATA zodd<>+16(SB)/8, $0x0000000b00000009
DATA zodd<>+24(SB)/8, $0x0000000f0000000d
DATA zodd<>+32(SB)/8, $0x0000001300000011
DATA zodd<>+40(SB)/8, $0x0000001700000015
DATA zodd<>+48(SB)/8, $0x0000001b00000019
DATA zodd<>+56(SB)/8, $0x0000001f0000001d
GLOBL zodd<>(SB), RODATA|NOPTR, $64
