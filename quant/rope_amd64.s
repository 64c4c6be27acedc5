#include "textflag.h"

// func ropeRowsAVX2(x *float32, n, d int, sp *float32, dims int, neox bool)
// Per row (DI, d·4 bytes apart; its table at SI, 2·dims·4 bytes apart): interleaved
// pairs, 8 values per step: Y0 = row, Y1 = Y0 with each pair swapped, row = Y0·cos +
// Y1·sin; NeoX pairs, 8 pairs per step: Y0 = first half, Y1 = second half, first =
// Y0·cos + Y1·sin, second = Y1·cos' + Y0·sin'. Each product rounded, then the add
// (no FMA), as the Go loop.
TEXT ·ropeRowsAVX2(SB), NOSPLIT, $0-41
	MOVQ    x+0(FP), DI
	MOVQ    n+8(FP), R8
	MOVQ    d+16(FP), R9
	MOVQ    sp+24(FP), SI
	MOVQ    dims+32(FP), R10
	MOVBQZX neox+40(FP), R11
	SHLQ    $2, R9            // row stride in bytes
	LEAQ    (R10*4), R12      // dims·4: offset of the sines
	LEAQ    (R12*2), R13      // table stride in bytes
	TESTQ   R11, R11
	JNZ     neoxrow

row:
	XORQ AX, AX
col:
	VMOVUPS   (DI)(AX*1), Y0
	VPERMILPS $0xb1, Y0, Y1
	VMULPS    (SI)(AX*1), Y0, Y0
	LEAQ      (SI)(R12*1), BX
	VMULPS    (BX)(AX*1), Y1, Y1
	VADDPS    Y1, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*1)
	ADDQ      $32, AX
	CMPQ      AX, R12
	JL        col
	ADDQ      R9, DI
	ADDQ      R13, SI
	DECQ      R8
	JNZ       row
	VZEROUPPER
	RET

neoxrow:
	MOVQ R12, R14
	SHRQ $1, R14              // half·4: the second half's offset
	XORQ AX, AX
neoxcol:
	LEAQ    (DI)(R14*1), CX   // second half of the row
	LEAQ    (SI)(R14*1), DX   // its cosines
	LEAQ    (SI)(R12*1), BX   // the sines
	VMOVUPS (DI)(AX*1), Y0
	VMOVUPS (CX)(AX*1), Y1
	VMULPS  (SI)(AX*1), Y0, Y2
	VMULPS  (BX)(AX*1), Y1, Y3
	VADDPS  Y3, Y2, Y2
	VMULPS  (DX)(AX*1), Y1, Y4
	ADDQ    R14, BX           // the second half's sines
	VMULPS  (BX)(AX*1), Y0, Y5
	VADDPS  Y5, Y4, Y4
	VMOVUPS Y2, (DI)(AX*1)
	VMOVUPS Y4, (CX)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, R14
	JL      neoxcol
	ADDQ    R9, DI
	ADDQ    R13, SI
	DECQ    R8
	JNZ     neoxrow
	VZEROUPPER
	RET

#include "lossy_consts_amd64.h"

// Code loaders: eight codes at M (3-bit: M2 two bytes further) into the int32 lanes
// of Y (X its lower half), with the shifts in Y14 and the mask in Y13.
#define RD2(M, M2, Y, X) \
	VPBROADCASTW M, Y; \
	VPSRLVD      Y14, Y, Y; \
	VPAND        Y13, Y, Y
#define RD4(M, M2, Y, X) \
	VPBROADCASTD M, Y; \
	VPSRLVD      Y14, Y, Y; \
	VPAND        Y13, Y, Y
#define RD3(M, M2, Y, X) \
	VPXOR        X, X, X; \
	VPINSRW      $0, M, X, X; \
	VPINSRB      $2, M2, X, X; \
	VPBROADCASTD X, Y; \
	VPSRLVD      Y14, Y, Y; \
	VPAND        Y13, Y, Y
// RD3W is RD3 reading four bytes, the fourth ignored (one past the codes).
#define RD3W(M, M2, Y, X) RD4(M, M2, Y, X)
#define RD8(M, M2, Y, X) VPMOVZXBD M, Y

// FOLD(RD, step, ...) is dotRoPEFold1's loop for one code width (RD its loader, step
// its bytes per eight codes). Rows go two at a time (the second's codes CX bytes
// after the first's, its table at AX and R9), sharing the loads of w: per 8
// channels (DX the byte offset, up to R11 = 4d; w1, w2, z1, z2 at R8 + 4·DX and
// 32, 64, 96 bytes further), t1 = code·w1 + z1 and t2 = code·w2 + z2 go into
// accumulators += t1·cos and += t2·sin (the first row's table at R14 and BX); a
// row's score, its accumulators' lanes added, goes to DI. An odd last row goes alone,
// its lanes added in the pairs' order: a row's score is the same bits whichever rows
// share its call (attention cuts spans anywhere in a block).
#define FOLD(RD, step, pairL, colL, oneL, col1L) \
pairL: \
	CMPQ         R10, $2; \
	JL           oneL; \
	XORQ         DX, DX; \
	VXORPS       Y8, Y8, Y8; \
	VXORPS       Y9, Y9, Y9; \
	VXORPS       Y11, Y11, Y11; \
	VXORPS       Y12, Y12, Y12; \
colL: \
	RD((SI), 2(SI), Y0, X0); \
	RD((SI)(CX*1), 2(SI)(CX*1), Y3, X3); \
	VCVTDQ2PS    Y0, Y0; \
	VCVTDQ2PS    Y3, Y3; \
	VMOVUPS      (R8)(DX*4), Y5; \
	VMOVUPS      32(R8)(DX*4), Y6; \
	VMOVUPS      64(R8)(DX*4), Y7; \
	VMOVUPS      96(R8)(DX*4), Y10; \
	VMOVAPS      Y0, Y1; \
	VMOVAPS      Y3, Y4; \
	VFMADD213PS  Y7, Y5, Y0; \
	VFMADD213PS  Y10, Y6, Y1; \
	VFMADD213PS  Y7, Y5, Y3; \
	VFMADD213PS  Y10, Y6, Y4; \
	VFMADD231PS  (R14)(DX*1), Y0, Y8; \
	VFMADD231PS  (BX)(DX*1), Y1, Y9; \
	VFMADD231PS  (AX)(DX*1), Y3, Y11; \
	VFMADD231PS  (R9)(DX*1), Y4, Y12; \
	ADDQ         step, SI; \
	ADDQ         $32, DX; \
	CMPQ         DX, R11; \
	JL           colL; \
	ADDQ         CX, SI; \
	VADDPS       Y9, Y8, Y8; \
	VADDPS       Y12, Y11, Y11; \
	VHADDPS      Y11, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS       X9, X8, X8; \
	VHADDPS      X8, X8, X8; \
	VMOVSD       X8, (DI); \
	ADDQ         $8, DI; \
	LEAQ         (R14)(R11*4), R14; \
	LEAQ         (BX)(R11*4), BX; \
	LEAQ         (AX)(R11*4), AX; \
	LEAQ         (R9)(R11*4), R9; \
	SUBQ         $2, R10; \
	JMP          pairL; \
oneL: \
	TESTQ        R10, R10; \
	JZ           fdone; \
	XORQ         DX, DX; \
	VXORPS       Y8, Y8, Y8; \
	VXORPS       Y9, Y9, Y9; \
col1L: \
	RD((SI), 2(SI), Y0, X0); \
	VCVTDQ2PS    Y0, Y0; \
	VMOVAPS      Y0, Y1; \
	VMOVUPS      (R8)(DX*4), Y5; \
	VMOVUPS      32(R8)(DX*4), Y6; \
	VFMADD213PS  64(R8)(DX*4), Y5, Y0; \
	VFMADD213PS  96(R8)(DX*4), Y6, Y1; \
	VFMADD231PS  (R14)(DX*1), Y0, Y8; \
	VFMADD231PS  (BX)(DX*1), Y1, Y9; \
	ADDQ         step, SI; \
	ADDQ         $32, DX; \
	CMPQ         DX, R11; \
	JL           col1L; \
	VADDPS       Y9, Y8, Y8; \
	VHADDPS      Y8, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS       X9, X8, X8; \
	VHADDPS      X8, X8, X8; \
	VMOVSS       X8, (DI); \
	JMP          fdone

// func dotRoPEFold1(out *float32, codes *byte, w, sp *float32, n, d, bits int, past bool)
// out[i] = Σ_c cos_c·(code_c·w1_c + z1_c) + sin_c·(code_c·w2_c + z2_c) for the n code
// rows of a Channel block at codes (bits 8, 4, 3 or 2, packed as pack.go packs them),
// w1, w2, z1, z2 from w as ropeFoldPrep lays them out, cos and sin from row i's
// spread table at sp + i·2d floats (RoPE.spread), d a multiple of 8: ropeFoldGo's
// sums in 8 lanes with FMAs. It reads n·d·bits/8 code bytes, and one more for 3-bit
// codes when past is set.
TEXT ·dotRoPEFold1(SB), NOSPLIT, $0-57
	MOVQ    out+0(FP), DI
	MOVQ    codes+8(FP), SI
	MOVQ    w+16(FP), R8
	MOVQ    sp+24(FP), R14
	MOVQ    n+32(FP), R10
	MOVQ    d+40(FP), R11
	SHLQ    $2, R11
	LEAQ    (R14)(R11*1), BX
	LEAQ    (R14)(R11*2), AX
	LEAQ    (AX)(R11*1), R9
	MOVQ    bits+48(FP), DX
	MOVQ    R11, CX
	IMULQ   DX, CX
	SHRQ    $5, CX            // a row's code bytes: d·bits/8
	MOVBQZX past+56(FP), R12
	CMPQ    DX, $8
	JE      f8start
	CMPQ    DX, $4
	JE      f4start
	CMPQ    DX, $3
	JE      f3start
	VMOVUPS sh2<>(SB), Y14
	VMOVUPS two2<>(SB), Y13
	FOLD(RD2, $2, f2pair, f2col, f2one, f2col1)

f4start:
	VMOVUPS sh4<>(SB), Y14
	VMOVUPS nib4<>(SB), Y13
	FOLD(RD4, $4, f4pair, f4col, f4one, f4col1)

f3start:
	VMOVUPS rsh3<>(SB), Y14
	VMOVUPS rseven3<>(SB), Y13
	TESTQ   R12, R12
	JNZ     f3wstart
	FOLD(RD3, $3, f3pair, f3col, f3one, f3col1)

f3wstart:
	FOLD(RD3W, $3, f3wpair, f3wcol, f3wone, f3wcol1)

f8start:
	FOLD(RD8, $8, f8pair, f8col, f8one, f8col1)

fdone:
	VZEROUPPER
	RET

DATA rsh3<>+0(SB)/8, $0x0000000300000000
DATA rsh3<>+8(SB)/8, $0x0000000900000006
DATA rsh3<>+16(SB)/8, $0x0000000f0000000c
DATA rsh3<>+24(SB)/8, $0x0000001500000012
GLOBL rsh3<>(SB), RODATA|NOPTR, $32

DATA rseven3<>+0(SB)/8, $0x0000000700000007
DATA rseven3<>+8(SB)/8, $0x0000000700000007
DATA rseven3<>+16(SB)/8, $0x0000000700000007
DATA rseven3<>+24(SB)/8, $0x0000000700000007
GLOBL rseven3<>(SB), RODATA|NOPTR, $32

// Code unpackers of dotRoPEInt1: 32 codes at M into the bytes of Y0, in channel
// order (a pair's two codes in adjacent bytes).
// UNP4: 16 bytes, each a pair: word = byte | byte<<4, masked to 0x0f0f.
#define UNP4(M) \
	VPMOVZXBW M, Y0; \
	VPSLLW    $4, Y0, Y1; \
	VPOR      Y1, Y0, Y0; \
	VPAND     Y15, Y0, Y0
// UNP2: 8 bytes, each two pairs: dword = x | x<<6 | x<<12 | x<<18, masked to 0x03030303.
#define UNP2(M) \
	VPMOVZXBD M, Y0; \
	VPSLLD    $6, Y0, Y1; \
	VPSLLD    $12, Y0, Y2; \
	VPSLLD    $18, Y0, Y3; \
	VPOR      Y1, Y0, Y0; \
	VPOR      Y3, Y2, Y2; \
	VPOR      Y2, Y0, Y0; \
	VPAND     Y15, Y0, Y0
// UNP3: 12 bytes (16 loaded), pair j at bits 6j..6j+5: word j gathers the two bytes
// holding it (Y14), a multiply by 2^(10-s) (Y13) puts it at bits 10..15, then the
// first code goes to bits 0..2 (mask Y12) and the second to bits 8..10 (mask Y15).
#define UNP3(M) \
	VBROADCASTI128 M, Y0; \
	VPSHUFB        Y14, Y0, Y0; \
	VPMULLW        Y13, Y0, Y0; \
	VPSRLW         $10, Y0, Y1; \
	VPSRLW         $5, Y0, Y0; \
	VPAND          Y12, Y1, Y1; \
	VPAND          Y15, Y0, Y0; \
	VPOR           Y1, Y0, Y0

// ICORE(UNPACK, M, T, ACC) scores one row's group of 32 channels: its codes at M
// unpacked, A = codes·ŵ1 + Ẑ1 and B = codes·ŵ2 + Ẑ2 per pair (VPMADDUBSW, VPADDW;
// the group's scratch at CX, 160 bytes), multiplied into the pairs' cosines and sines
// (the row's table words at T and 32 bytes further) with VPMADDWD and added (A·cos
// + B·sin over two pairs per lane), the int32 lanes converted and added into ACC
// times the group's D/2^14.
#define ICORE(UNPACK, M, T, T32, ACC) \
	UNPACK(M); \
	VPMADDUBSW  (CX), Y0, Y1; \
	VPMADDUBSW  32(CX), Y0, Y2; \
	VPADDW      64(CX), Y1, Y1; \
	VPADDW      96(CX), Y2, Y2; \
	VPMADDWD    T, Y1, Y1; \
	VPMADDWD    T32, Y2, Y2; \
	VPADDD      Y2, Y1, Y3; \
	VCVTDQ2PS   Y3, Y3; \
	VFMADD231PS 128(CX), Y3, ACC

// IROWS(UNPACK, gbytes, ...) is dotRoPEInt1's loop for one code width (gbytes code
// bytes per group): four rows at a time (R12 and R13 the code bytes of one and three
// rows, R14 and R9 the table bytes of one and three), per group of 32 channels (R11
// per row; the scratch at CX, the table words at BX), ICORE into Y8..Y11, the four
// scores added and stored together; then the rest one row at a time into Y8. Both
// add a row's lanes in the same order, ((0+1)+(2+3))+((4+5)+(6+7)), so a score does
// not depend on the rows scored beside it.
#define IROWS(UNPACK, gbytes, row4L, grp4L, rowL, grpL, doneL) \
row4L: \
	CMPQ         R10, $4; \
	JL           rowL; \
	MOVQ         R8, CX; \
	MOVQ         R11, DX; \
	VXORPS       Y8, Y8, Y8; \
	VXORPS       Y9, Y9, Y9; \
	VXORPS       Y10, Y10, Y10; \
	VXORPS       Y11, Y11, Y11; \
grp4L: \
	ICORE(UNPACK, (SI), (BX), 32(BX), Y8); \
	ICORE(UNPACK, (SI)(R12*1), (BX)(R14*1), 32(BX)(R14*1), Y9); \
	ICORE(UNPACK, (SI)(R12*2), (BX)(R14*2), 32(BX)(R14*2), Y10); \
	ICORE(UNPACK, (SI)(R13*1), (BX)(R9*1), 32(BX)(R9*1), Y11); \
	ADDQ         gbytes, SI; \
	ADDQ         $160, CX; \
	ADDQ         $64, BX; \
	DECQ         DX; \
	JNZ          grp4L; \
	ADDQ         R13, SI; \
	ADDQ         R9, BX; \
	VHADDPS      Y9, Y8, Y8; \
	VHADDPS      Y11, Y10, Y10; \
	VHADDPS      Y10, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS       X9, X8, X8; \
	VMOVUPS      X8, (DI); \
	ADDQ         $16, DI; \
	SUBQ         $4, R10; \
	JMP          row4L; \
rowL: \
	TESTQ        R10, R10; \
	JZ           doneL; \
	MOVQ         R8, CX; \
	MOVQ         R11, DX; \
	VXORPS       Y8, Y8, Y8; \
grpL: \
	ICORE(UNPACK, (SI), (BX), 32(BX), Y8); \
	ADDQ         gbytes, SI; \
	ADDQ         $160, CX; \
	ADDQ         $64, BX; \
	DECQ         DX; \
	JNZ          grpL; \
	VHADDPS      Y8, Y8, Y8; \
	VHADDPS      Y8, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS       X9, X8, X8; \
	VMOVSS       X8, (DI); \
	ADDQ         $4, DI; \
	DECQ         R10; \
	JMP          rowL; \
doneL: \
	VZEROUPPER; \
	RET

// func dotRoPEInt1(out *float32, codes *byte, w *float32, tab *int16, n, d, bits int)
// ropeIntGo in AVX2: out[i] for the n code rows (bits 4, 3 or 2; d a multiple of 32)
// at codes, w from ropeIntPrep, row i's Q14 table at tab + i·d words (RoPE.pairs).
// The integers are ropeIntGo's; the float sums differ only in order. 3-bit rows are
// read 16 bytes per 12, so 4 bytes past the last codes must be readable.
TEXT ·dotRoPEInt1(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ tab+24(FP), BX
	MOVQ n+32(FP), R10
	MOVQ d+40(FP), R11
	SHRQ $5, R11
	MOVQ bits+48(FP), AX
	MOVQ d+40(FP), R12
	LEAQ (R12*2), R14         // a row's table bytes: 2d
	LEAQ (R14)(R14*2), R9     // three rows'
	IMULQ AX, R12
	SHRQ $3, R12              // a row's code bytes: d·bits/8
	LEAQ (R12)(R12*2), R13    // three rows'
	CMPQ AX, $4
	JE   i4start
	CMPQ AX, $3
	JE   i3start
	VMOVDQU rqm03<>(SB), Y15
	IROWS(UNP2, $8, i2row4, i2grp4, i2row, i2grp, i2done)

i4start:
	VMOVDQU rqm0f<>(SB), Y15
	IROWS(UNP4, $16, i4row4, i4grp4, i4row, i4grp, i4done)

i3start:
	VMOVDQU rq3idx<>(SB), Y14
	VMOVDQU rq3mul<>(SB), Y13
	VMOVDQU rqm0007<>(SB), Y12
	VMOVDQU rqm0700<>(SB), Y15
	IROWS(UNP3, $12, i3row4, i3grp4, i3row, i3grp, i3done)

DATA rq3idx<>+0(SB)/8, $0x0302020101000100
DATA rq3idx<>+8(SB)/8, $0x0605050404030403
DATA rq3idx<>+16(SB)/8, $0x0908080707060706
DATA rq3idx<>+24(SB)/8, $0x800b0b0a0a090a09
GLOBL rq3idx<>(SB), RODATA|NOPTR, $32

DATA rq3mul<>+0(SB)/8, $0x0100004000100400
DATA rq3mul<>+8(SB)/8, $0x0100004000100400
DATA rq3mul<>+16(SB)/8, $0x0100004000100400
DATA rq3mul<>+24(SB)/8, $0x0100004000100400
GLOBL rq3mul<>(SB), RODATA|NOPTR, $32

DATA rqm0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rqm0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rqm0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rqm0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL rqm0f<>(SB), RODATA|NOPTR, $32

DATA rqm03<>+0(SB)/8, $0x0303030303030303
DATA rqm03<>+8(SB)/8, $0x0303030303030303
DATA rqm03<>+16(SB)/8, $0x0303030303030303
DATA rqm03<>+24(SB)/8, $0x0303030303030303
GLOBL rqm03<>(SB), RODATA|NOPTR, $32

DATA rqm0007<>+0(SB)/8, $0x0007000700070007
DATA rqm0007<>+8(SB)/8, $0x0007000700070007
DATA rqm0007<>+16(SB)/8, $0x0007000700070007
DATA rqm0007<>+24(SB)/8, $0x0007000700070007
GLOBL rqm0007<>(SB), RODATA|NOPTR, $32

DATA rqm0700<>+0(SB)/8, $0x0700070007000700
DATA rqm0700<>+8(SB)/8, $0x0700070007000700
DATA rqm0700<>+16(SB)/8, $0x0700070007000700
DATA rqm0700<>+24(SB)/8, $0x0700070007000700
GLOBL rqm0700<>(SB), RODATA|NOPTR, $32

// PREPQ(off) loads q's 8 values at off(SI) into Y0 and their pair partners, signed as
// w2 and Z2 take them ([q1, −q0, q3, −q2, …]), into Y1.
#define PREPQ(off) \
	VMOVUPS   off(SI), Y0; \
	VPERMILPS $0xb1, Y0, Y1; \
	VXORPS    Y14, Y1, Y1

// PMAX(off) adds |q·s| and |q'·s| of 8 channels into the max Y12 and the sum Y11.
#define PMAX(off) \
	PREPQ(off); \
	VMULPS off(BX), Y0, Y0; \
	VMULPS off(BX), Y1, Y1; \
	VANDPS Y13, Y0, Y0; \
	VANDPS Y13, Y1, Y1; \
	VMAXPS Y0, Y12, Y12; \
	VMAXPS Y1, Y12, Y12; \
	VADDPS Y0, Y11, Y11; \
	VADDPS Y1, Y11, Y11

// func ropeIntMaxAVX2(m, q, s *float32, groups int)
// For each group k of 32 interleaved channels: m[2k] = max |w|, m[2k+1] = Σ |w| over
// its products w1 = q·s and w2 (ropeIntPrep); the sum is NaN or Inf when a product is.
TEXT ·ropeIntMaxAVX2(SB), NOSPLIT, $0-32
	MOVQ    m+0(FP), DI
	MOVQ    q+8(FP), SI
	MOVQ    s+16(FP), BX
	MOVQ    groups+24(FP), CX
	VMOVUPS rsignodd<>(SB), Y14
	VMOVUPS rabs<>(SB), Y13
maxgrp:
	VXORPS       Y12, Y12, Y12
	VXORPS       Y11, Y11, Y11
	PMAX(0)
	PMAX(32)
	PMAX(64)
	PMAX(96)
	VEXTRACTF128 $1, Y12, X0
	VMAXPS       X0, X12, X12
	VPERMILPS    $0x4e, X12, X0
	VMAXPS       X0, X12, X12
	VPERMILPS    $0xb1, X12, X0
	VMAXPS       X0, X12, X12
	VMOVSS       X12, (DI)
	VEXTRACTF128 $1, Y11, X0
	VADDPS       X0, X11, X11
	VHADDPS      X11, X11, X11
	VHADDPS      X11, X11, X11
	VMOVSS       X11, 4(DI)
	ADDQ         $8, DI
	ADDQ         $128, SI
	ADDQ         $128, BX
	DECQ         CX
	JNZ          maxgrp
	VZEROUPPER
	RET

// PW(off, A, B) writes the int32 roundings of q·s·inv and q'·s·inv (inv in Y15) of 8
// channels to A and B.
#define PW(off, A, B) \
	PREPQ(off); \
	VMULPS    off(BX), Y0, Y0; \
	VMULPS    off(BX), Y1, Y1; \
	VMULPS    Y15, Y0, Y0; \
	VMULPS    Y15, Y1, Y1; \
	VCVTPS2DQ Y0, A; \
	VCVTPS2DQ Y1, B

// PZ(off, A, B) writes q·lo and q'·lo of 8 channels (lo at R8) to A and B.
#define PZ(off, A, B) \
	PREPQ(off); \
	VMULPS off(R8), Y0, A; \
	VMULPS off(R8), Y1, B

// PACK8(A, B, C, D, dst): the int32 lanes of A..D (channels 0–31) as int8, in order.
#define PACK8(A, B, C, D, dst) \
	VPACKSSDW B, A, A; \
	VPACKSSDW D, C, C; \
	VPACKSSWB C, A, A; \
	VPERMD    A, Y10, A; \
	VMOVDQU   A, dst

// PACKZ(A, B, C, D, dst): pair sums of A..D (channels 0–31) times inv, as int16 per
// pair in order, their largest magnitude (before rounding) kept in Y11.
#define PACKZ(A, B, C, D, dst) \
	VHADDPS   B, A, A; \
	VHADDPS   D, C, C; \
	VMULPS    Y15, A, A; \
	VMULPS    Y15, C, C; \
	VANDPS    Y13, A, Y0; \
	VMAXPS    Y0, Y11, Y11; \
	VANDPS    Y13, C, Y0; \
	VMAXPS    Y0, Y11, Y11; \
	VCVTPS2DQ A, A; \
	VCVTPS2DQ C, C; \
	VPACKSSDW C, A, A; \
	VPERMQ    $0xd8, A, A; \
	VPSHUFD   $0xd8, A, A; \
	VMOVDQU   A, dst

// func ropeIntQuantAVX2(dst *byte, q, lo, s, inv *float32, groups int, zmax *float32)
// ropeIntPrep's roundings for each group k of 32 interleaved channels (inv[k] =
// 127/max|w|): ŵ1, ŵ2 (int8) and Ẑ1, Ẑ2 (int16) at dst + 160k, rounded to nearest
// even (VCVTPS2DQ); zmax[k] is the largest |Z·inv| before rounding (the Ẑ saturate
// beyond int16, for the caller to refuse).
TEXT ·ropeIntQuantAVX2(SB), NOSPLIT, $0-56
	MOVQ    dst+0(FP), DI
	MOVQ    q+8(FP), SI
	MOVQ    lo+16(FP), R8
	MOVQ    s+24(FP), BX
	MOVQ    inv+32(FP), R9
	MOVQ    groups+40(FP), CX
	MOVQ    zmax+48(FP), R10
	VMOVUPS rsignodd<>(SB), Y14
	VMOVUPS rabs<>(SB), Y13
	VMOVDQU rperm8<>(SB), Y10
quantgrp:
	VBROADCASTSS (R9), Y15
	VXORPS       Y11, Y11, Y11
	PW(0, Y2, Y6)
	PW(32, Y3, Y7)
	PW(64, Y4, Y8)
	PW(96, Y5, Y9)
	PACK8(Y2, Y3, Y4, Y5, (DI))
	PACK8(Y6, Y7, Y8, Y9, 32(DI))
	PZ(0, Y2, Y6)
	PZ(32, Y3, Y7)
	PZ(64, Y4, Y8)
	PZ(96, Y5, Y9)
	PACKZ(Y2, Y3, Y4, Y5, 64(DI))
	PACKZ(Y6, Y7, Y8, Y9, 96(DI))
	VEXTRACTF128 $1, Y11, X0
	VMAXPS       X0, X11, X11
	VPERMILPS    $0x4e, X11, X0
	VMAXPS       X0, X11, X11
	VPERMILPS    $0xb1, X11, X0
	VMAXPS       X0, X11, X11
	VMOVSS       X11, (R10)
	ADDQ         $160, DI
	ADDQ         $128, SI
	ADDQ         $128, R8
	ADDQ         $128, BX
	ADDQ         $4, R9
	ADDQ         $4, R10
	DECQ         CX
	JNZ          quantgrp
	VZEROUPPER
	RET

DATA rsignodd<>+0(SB)/8, $0x8000000000000000
DATA rsignodd<>+8(SB)/8, $0x8000000000000000
DATA rsignodd<>+16(SB)/8, $0x8000000000000000
DATA rsignodd<>+24(SB)/8, $0x8000000000000000
GLOBL rsignodd<>(SB), RODATA|NOPTR, $32

DATA rabs<>+0(SB)/8, $0x7fffffff7fffffff
DATA rabs<>+8(SB)/8, $0x7fffffff7fffffff
DATA rabs<>+16(SB)/8, $0x7fffffff7fffffff
DATA rabs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL rabs<>(SB), RODATA|NOPTR, $32

DATA rperm8<>+0(SB)/8, $0x0000000400000000
DATA rperm8<>+8(SB)/8, $0x0000000500000001
DATA rperm8<>+16(SB)/8, $0x0000000600000002
DATA rperm8<>+24(SB)/8, $0x0000000700000003
GLOBL rperm8<>(SB), RODATA|NOPTR, $32
