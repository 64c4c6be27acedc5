//go:build amd64

#include "textflag.h"
#include "lossy_consts_amd64.h"

// MultiDot and MultiAxpy over float32 tiles in AVX2 + FMA assembly, one query (or
// two) per call, for any row length d ≥ 1: the last d%8 values of a row are read and
// written through lane masks (VMASKMOVPS), so nothing past a row's d values is read
// as data or written. Then the Channel and Affine decoders that fill such tiles.
// Every routine ends with VZEROUPPER.

// tilesTailMask is eight all-ones lanes then eight zero lanes: the 8 lanes at byte
// offset 4·(8−r) have their first r lanes set.
DATA tilesTailMask<>+0(SB)/8, $0xffffffffffffffff
DATA tilesTailMask<>+8(SB)/8, $0xffffffffffffffff
DATA tilesTailMask<>+16(SB)/8, $0xffffffffffffffff
DATA tilesTailMask<>+24(SB)/8, $0xffffffffffffffff
DATA tilesTailMask<>+32(SB)/8, $0
DATA tilesTailMask<>+40(SB)/8, $0
DATA tilesTailMask<>+48(SB)/8, $0
DATA tilesTailMask<>+56(SB)/8, $0
GLOBL tilesTailMask<>(SB), RODATA|NOPTR, $64

// TAILMASK sets Y15 to the mask of the first d%8 lanes (d in R11); clobbers AX, BX.
#define TAILMASK \
	MOVQ    R11, AX \
	ANDQ    $7, AX \
	MOVQ    $8, BX \
	SUBQ    AX, BX \
	LEAQ    tilesTailMask<>(SB), AX \
	VMOVUPS (AX)(BX*4), Y15

// func dotRowsF32(out, q, x *float32, xs uintptr, n, d int)
// out[i] = Σ_c q[c]·x[i·xs/4 + c] for i < n: eight rows at a time in eight 8-lane
// accumulators, reduced together by horizontal adds into one vector of 8 scores;
// the last n%8 rows one at a time.
TEXT ·dotRowsF32(SB), NOSPLIT, $0-48
	MOVQ q+8(FP), R9
	MOVQ out+0(FP), DI
	MOVQ x+16(FP), SI
	MOVQ xs+24(FP), DX
	MOVQ n+32(FP), R10
	MOVQ d+40(FP), R11
	TAILMASK
	LEAQ (DX)(DX*2), R12
	MOVQ R11, R13
	SHRQ $3, R13

dgroup:
	CMPQ   R10, $8
	JB     drow
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   SI, R14
	LEAQ   (SI)(DX*4), R8
	MOVQ   R9, AX
	MOVQ   R13, CX

dcol8:
	TESTQ       CX, CX
	JE          dtail8
	VMOVUPS     (AX), Y8
	VFMADD231PS (R14), Y8, Y0
	VFMADD231PS (R14)(DX*1), Y8, Y1
	VFMADD231PS (R14)(DX*2), Y8, Y2
	VFMADD231PS (R14)(R12*1), Y8, Y3
	VFMADD231PS (R8), Y8, Y4
	VFMADD231PS (R8)(DX*1), Y8, Y5
	VFMADD231PS (R8)(DX*2), Y8, Y6
	VFMADD231PS (R8)(R12*1), Y8, Y7
	ADDQ        $32, AX
	ADDQ        $32, R14
	ADDQ        $32, R8
	DECQ        CX
	JMP         dcol8

dtail8:
	TESTQ       $7, R11
	JE          dreduce8
	VMASKMOVPS  (AX), Y15, Y8
	VMASKMOVPS  (R14), Y15, Y9
	VFMADD231PS Y9, Y8, Y0
	VMASKMOVPS  (R14)(DX*1), Y15, Y9
	VFMADD231PS Y9, Y8, Y1
	VMASKMOVPS  (R14)(DX*2), Y15, Y9
	VFMADD231PS Y9, Y8, Y2
	VMASKMOVPS  (R14)(R12*1), Y15, Y9
	VFMADD231PS Y9, Y8, Y3
	VMASKMOVPS  (R8), Y15, Y9
	VFMADD231PS Y9, Y8, Y4
	VMASKMOVPS  (R8)(DX*1), Y15, Y9
	VFMADD231PS Y9, Y8, Y5
	VMASKMOVPS  (R8)(DX*2), Y15, Y9
	VFMADD231PS Y9, Y8, Y6
	VMASKMOVPS  (R8)(R12*1), Y15, Y9
	VFMADD231PS Y9, Y8, Y7

dreduce8:
	// Pairwise horizontal adds: row r's lane sums end in lane r of the low half
	// (lanes 0-3 of the rows) and lane r of the high half (lanes 4-7).
	VHADDPS    Y1, Y0, Y0
	VHADDPS    Y3, Y2, Y2
	VHADDPS    Y5, Y4, Y4
	VHADDPS    Y7, Y6, Y6
	VHADDPS    Y2, Y0, Y0
	VHADDPS    Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS     Y2, Y1, Y1
	VMOVUPS    Y1, (DI)
	ADDQ       $32, DI
	LEAQ       (SI)(DX*8), SI
	SUBQ       $8, R10
	JMP        dgroup

drow:
	TESTQ  R10, R10
	JE     ddone
	VXORPS Y0, Y0, Y0
	MOVQ   SI, R14
	MOVQ   R9, AX
	MOVQ   R13, CX

dcol1:
	TESTQ       CX, CX
	JE          dtail1
	VMOVUPS     (AX), Y8
	VFMADD231PS (R14), Y8, Y0
	ADDQ        $32, AX
	ADDQ        $32, R14
	DECQ        CX
	JMP         dcol1

dtail1:
	TESTQ       $7, R11
	JE          dreduce1
	VMASKMOVPS  (AX), Y15, Y8
	VMASKMOVPS  (R14), Y15, Y9
	VFMADD231PS Y9, Y8, Y0

dreduce1:
	// ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)) of the lanes a, the order of the 8-row
	// reduction: a row's score does not depend on where it falls in x.
	VHADDPS      Y0, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DI)
	ADDQ         $4, DI
	ADDQ         DX, SI
	DECQ         R10
	JMP          drow

ddone:
	VZEROUPPER
	RET

// Both add routines load acc first and add the rows into it one after the other
// (one FMA per row and 8 columns, in row order), like the scalar twin's loop: the
// result does not depend on how the rows are split between calls or the queries
// between the two routines.

// func axpyRowsF32(acc, w, x *float32, xs uintptr, n, d int)
// acc[c] += Σ_i w[i]·x[i·xs/4 + c] for c < d: strips of 32 columns (four
// accumulators), then 16, then 8, then the last d%8 columns, masked.
TEXT ·axpyRowsF32(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ w+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ xs+24(FP), DX
	MOVQ n+32(FP), R10
	MOVQ d+40(FP), R11
	TAILMASK

a1strip32:
	CMPQ    R11, $32
	JB      a1strip16
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    SI, R14
	MOVQ    R9, AX
	MOVQ    R10, CX

a1row32:
	VBROADCASTSS (AX), Y8
	VFMADD231PS  (R14), Y8, Y0
	VFMADD231PS  32(R14), Y8, Y1
	VFMADD231PS  64(R14), Y8, Y2
	VFMADD231PS  96(R14), Y8, Y3
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a1row32
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $32, R11
	JMP          a1strip32

a1strip16:
	CMPQ    R11, $16
	JB      a1strip8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	MOVQ    SI, R14
	MOVQ    R9, AX
	MOVQ    R10, CX

a1row16:
	VBROADCASTSS (AX), Y8
	VFMADD231PS  (R14), Y8, Y0
	VFMADD231PS  32(R14), Y8, Y1
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a1row16
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	ADDQ         $64, DI
	ADDQ         $64, SI
	SUBQ         $16, R11

a1strip8:
	CMPQ    R11, $8
	JB      a1tail
	VMOVUPS (DI), Y0
	MOVQ    SI, R14
	MOVQ    R9, AX
	MOVQ    R10, CX

a1row8:
	VBROADCASTSS (AX), Y8
	VFMADD231PS  (R14), Y8, Y0
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a1row8
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	SUBQ         $8, R11

a1tail:
	TESTQ      R11, R11
	JE         a1done
	VMASKMOVPS (DI), Y15, Y0
	MOVQ       SI, R14
	MOVQ       R9, AX
	MOVQ       R10, CX

a1rowt:
	VBROADCASTSS (AX), Y8
	VMASKMOVPS   (R14), Y15, Y4
	VFMADD231PS  Y4, Y8, Y0
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a1rowt
	VMASKMOVPS   Y0, Y15, (DI)

a1done:
	VZEROUPPER
	RET

// func axpyRows2F32(acc *float32, as uintptr, w *float32, ws uintptr, x *float32, xs uintptr, n, d int)
// axpyRowsF32 for two queries, each row loaded once for both: acc[c] and
// acc[as/4 + c] get the rows weighted by w[i] and w[ws/4 + i]; strips of 16 columns
// (four accumulators), then 8, then the last d%8 columns, masked.
TEXT ·axpyRows2F32(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ w+16(FP), R9
	MOVQ x+32(FP), SI
	MOVQ xs+40(FP), DX
	MOVQ n+48(FP), R10
	MOVQ d+56(FP), R11
	TAILMASK
	MOVQ as+8(FP), R12
	MOVQ ws+24(FP), R13

a2strip16:
	CMPQ    R11, $16
	JB      a2strip8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R12*1), Y2
	VMOVUPS 32(DI)(R12*1), Y3
	MOVQ    SI, R14
	MOVQ    R9, AX
	MOVQ    R10, CX

a2row16:
	VBROADCASTSS (AX), Y8
	VBROADCASTSS (AX)(R13*1), Y9
	VMOVUPS      (R14), Y10
	VMOVUPS      32(R14), Y11
	VFMADD231PS  Y10, Y8, Y0
	VFMADD231PS  Y11, Y8, Y1
	VFMADD231PS  Y10, Y9, Y2
	VFMADD231PS  Y11, Y9, Y3
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a2row16
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, (DI)(R12*1)
	VMOVUPS      Y3, 32(DI)(R12*1)
	ADDQ         $64, DI
	ADDQ         $64, SI
	SUBQ         $16, R11
	JMP          a2strip16

a2strip8:
	CMPQ    R11, $8
	JB      a2tail
	VMOVUPS (DI), Y0
	VMOVUPS (DI)(R12*1), Y2
	MOVQ    SI, R14
	MOVQ    R9, AX
	MOVQ    R10, CX

a2row8:
	VBROADCASTSS (AX), Y8
	VBROADCASTSS (AX)(R13*1), Y9
	VMOVUPS      (R14), Y10
	VFMADD231PS  Y10, Y8, Y0
	VFMADD231PS  Y10, Y9, Y2
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a2row8
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y2, (DI)(R12*1)
	ADDQ         $32, DI
	ADDQ         $32, SI
	SUBQ         $8, R11

a2tail:
	TESTQ      R11, R11
	JE         a2done
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (DI)(R12*1), Y15, Y2
	MOVQ       SI, R14
	MOVQ       R9, AX
	MOVQ       R10, CX

a2rowt:
	VBROADCASTSS (AX), Y8
	VBROADCASTSS (AX)(R13*1), Y9
	VMASKMOVPS   (R14), Y15, Y10
	VFMADD231PS  Y10, Y8, Y0
	VFMADD231PS  Y10, Y9, Y2
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          a2rowt
	VMASKMOVPS   Y0, Y15, (DI)
	VMASKMOVPS   Y2, Y15, (DI)(R12*1)

a2done:
	VZEROUPPER
	RET

// CHANROWS(CODES8, step, rowLabel, colLabel) is decChannelRows' loop for one code
// width: per row of R10, per 8 channels of R11 (CX), CODES8 loads the 8 codes at SI
// as int32 lanes of Y0, then dst (DI) gets code·scale + lo (scales at R13, zeros at
// R12, restarting at R9 and R8 each row) and SI moves on by step bytes.
#define CHANROWS(CODES8, step, rowLabel, colLabel) \
rowLabel: \
	MOVQ      R8, R12; \
	MOVQ      R9, R13; \
	MOVQ      R11, CX; \
colLabel: \
	CODES8; \
	VCVTDQ2PS Y0, Y0; \
	VMULPS    (R13), Y0, Y0; \
	VADDPS    (R12), Y0, Y0; \
	VMOVUPS   Y0, (DI); \
	ADDQ      step, SI; \
	ADDQ      $32, DI; \
	ADDQ      $32, R12; \
	ADDQ      $32, R13; \
	DECQ      CX; \
	JNZ       colLabel; \
	DECQ      R10; \
	JNZ       rowLabel; \
	VZEROUPPER; \
	RET

// CHAN2, CHAN4 and CHAN8 load 8 channels' codes into Y0 (shifts in Y14 and mask in
// Y13 for the 2- and 4-bit ones).
#define CHAN2 \
	VPBROADCASTW (SI), Y0; \
	VPSRLVD      Y14, Y0, Y0; \
	VPAND        Y13, Y0, Y0
#define CHAN4 \
	VPBROADCASTD (SI), Y0; \
	VPSRLVD      Y14, Y0, Y0; \
	VPAND        Y13, Y0, Y0
#define CHAN8 VPMOVZXBD (SI), Y0
// CHAN3 reads the 3 bytes of 8 3-bit codes (a 2-byte and a 1-byte load: no byte past
// them) into one dword, broadcast, shifted per lane by 3k and masked to 3 bits.
#define CHAN3 \
	MOVWLZX      (SI), AX; \
	MOVBLZX      2(SI), BX; \
	SHLL         $16, BX; \
	ORL          BX, AX; \
	VMOVD        AX, X0; \
	VPBROADCASTD X0, Y0; \
	VPSRLVD      Y14, Y0, Y0; \
	VPAND        Y13, Y0, Y0

// func decChannelRows(dst *float32, codes *byte, lo, s *float32, n, d, bits int)
// dst[i·d+c] = lo[c] + code(i, c)·s[c] for i < n, c < d, d a multiple of 8: the code
// rows of a Channel block (bits 8, 4, 3 or 2, packed as pack.go packs them) one after
// the other, 8 channels per step: codes widened to int32 lanes (zero-extended bytes,
// or one 4- or 2-byte word broadcast, shifted per lane and masked; a broadcast 2-byte
// word fills each lane's upper half too, which the shifts of at most 14 and the mask
// leave out), converted, then a multiply
// and an add, separately rounded as in Channel.Decode, so the values are its bit for
// bit. Reads exactly n·d·bits/8 code bytes.
TEXT ·decChannelRows(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ lo+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ n+32(FP), R10
	MOVQ d+40(FP), R11
	MOVQ bits+48(FP), AX
	SHRQ $3, R11
	CMPQ AX, $8
	JE   c8row
	CMPQ AX, $4
	JE   c4start
	CMPQ AX, $3
	JE   c3start

	// 2-bit codes: 8 channels in 2 bytes.
	VMOVUPS      sh2<>(SB), Y14
	VMOVUPS      two2<>(SB), Y13
	CHANROWS(CHAN2, $2, c2row, c2col)

c4start:
	// 4-bit codes: 8 channels in 4 bytes.
	VMOVUPS      sh4<>(SB), Y14
	VMOVUPS      nib4<>(SB), Y13
	CHANROWS(CHAN4, $4, c4row, c4col)

c3start:
	// 3-bit codes: 8 channels in 3 bytes.
	VMOVUPS      sh3<>(SB), Y14
	VMOVUPS      seven3<>(SB), Y13
	CHANROWS(CHAN3, $3, c3row, c3col)

c8row:
	// 8-bit codes: 8 channels in 8 bytes.
	CHANROWS(CHAN8, $8, c8rows, c8col)

// Lane shifts and mask of 8 3-bit codes in one 24-bit word.
DATA sh3<>+0(SB)/8, $0x0000000300000000
DATA sh3<>+8(SB)/8, $0x0000000900000006
DATA sh3<>+16(SB)/8, $0x0000000f0000000c
DATA sh3<>+24(SB)/8, $0x0000001500000012
GLOBL sh3<>(SB), RODATA|NOPTR, $32

DATA seven3<>+0(SB)/8, $0x0000000700000007
DATA seven3<>+8(SB)/8, $0x0000000700000007
DATA seven3<>+16(SB)/8, $0x0000000700000007
DATA seven3<>+24(SB)/8, $0x0000000700000007
GLOBL seven3<>(SB), RODATA|NOPTR, $32

// AFFROWS(CODES8, step, rowLabel, groupLabel, stepLabel) is decAffineRows' loop for
// one code width: per row of R10 (R8, R9 apart), per group of the row (R11), the f16
// scale (Y3) and zero (Y4) widened and broadcast, then per 8 codes (R12 steps) CODES8
// loads them at SI as int32 lanes of Y0 and dst (DI) gets 0 + (code·scale + zero).
#define AFFROWS(CODES8, step, rowLabel, groupLabel, stepLabel) \
rowLabel: \
	MOVQ         R8, SI; \
	MOVQ         R11, BX; \
groupLabel: \
	VPBROADCASTW (SI), X3; \
	VCVTPH2PS    X3, Y3; \
	VPBROADCASTW 2(SI), X4; \
	VCVTPH2PS    X4, Y4; \
	ADDQ         $4, SI; \
	MOVQ         R12, CX; \
stepLabel: \
	CODES8; \
	ADDQ         step, SI; \
	VCVTDQ2PS    Y0, Y0; \
	VMULPS       Y3, Y0, Y0; \
	VADDPS       Y4, Y0, Y0; \
	VADDPS       Y0, Y5, Y0; \
	VMOVUPS      Y0, (DI); \
	ADDQ         $32, DI; \
	DECQ         CX; \
	JNZ          stepLabel; \
	DECQ         BX; \
	JNZ          groupLabel; \
	ADDQ         R9, R8; \
	DECQ         R10; \
	JNZ          rowLabel; \
	VZEROUPPER; \
	RET

// func decAffineRows(dst *float32, src *byte, stride uintptr, n, d, group, bits int)
// Affine.Decode of n rows src + i·stride (bytes) into dst[i·d:(i+1)·d], for d and
// group multiples of 8 and group dividing d (whole groups only): per group the f16
// scale and zero widened by VCVTPH2PS (exact) and broadcast, then per 8 codes
// (widened as in decChannelRows, the width chosen once per call) 0 + (code·scale +
// zero), each step rounded as in addCodes, so the values are Affine.Decode's bit for
// bit (the +0 turns −0 into +0 as there). Needs F16C.
TEXT ·decAffineRows(SB), NOSPLIT, $0-56
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), R8
	MOVQ         stride+16(FP), R9
	MOVQ         n+24(FP), R10
	MOVQ         d+32(FP), AX
	MOVQ         group+40(FP), R12
	XORQ         DX, DX
	DIVQ         R12
	MOVQ         AX, R11 // groups per row
	SHRQ         $3, R12 // 8-code steps per group
	VXORPS       Y5, Y5, Y5
	MOVQ         bits+48(FP), AX
	CMPQ         AX, $4
	JE           a4
	JB           a2
	AFFROWS(CHAN8, $8, a8row, a8group, a8step)

a4:
	VMOVUPS      sh4<>(SB), Y14
	VMOVUPS      nib4<>(SB), Y13
	AFFROWS(CHAN4, $4, a4row, a4group, a4step)

a2:
	VMOVUPS      sh2<>(SB), Y14
	VMOVUPS      two2<>(SB), Y13
	AFFROWS(CHAN2, $2, a2row, a2group, a2step)

// func widenChanParams(s, lo *float32, hdr *byte, d int)
// s[c], lo[c] = the binary16 scale and zero of channel c at hdr[4c:], hdr[4c+2:], for
// c < d, d a positive multiple of 8: 16 halves widened per step (VCVTPH2PS, exact),
// then the scales and the zeros gathered apart (VSHUFPS per lane, VPERMPD across).
TEXT ·widenChanParams(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ lo+8(FP), R8
	MOVQ hdr+16(FP), SI
	MOVQ d+24(FP), CX
widen:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VSHUFPS   $0x88, Y1, Y0, Y2
	VSHUFPS   $0xdd, Y1, Y0, Y3
	VPERMPD   $0xd8, Y2, Y2
	VPERMPD   $0xd8, Y3, Y3
	VMOVUPS   Y2, (DI)
	VMOVUPS   Y3, (R8)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, R8
	SUBQ      $8, CX
	JNZ       widen
	VZEROUPPER
	RET
