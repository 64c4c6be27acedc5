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

// ROPEDOT(CODES8, step, rowLabel, colLabel) is dotRoPERows1's loop for one code width:
// per row (R10 of them), per 8 channels (R11 steps), CODES8 loads the codes at SI as
// int32 lanes of Y0; the key values lo + code·scale (zeros at R12, scales at R13,
// restarting at R8 and R9 each row), rotated by the row's table (cosines at R14, sines
// AX bytes further), multiplied into the query (DX, restarting at BX) and summed in
// Y8; the row's score, Y8's lanes added, goes to DI.
#define ROPEDOT(CODES8, step, rowLabel, colLabel) \
rowLabel: \
	MOVQ         R8, R12; \
	MOVQ         R9, R13; \
	MOVQ         BX, DX; \
	MOVQ         R11, CX; \
	VXORPS       Y8, Y8, Y8; \
colLabel: \
	CODES8; \
	VCVTDQ2PS    Y0, Y0; \
	VMULPS       (R13), Y0, Y0; \
	VADDPS       (R12), Y0, Y0; \
	VPERMILPS    $0xb1, Y0, Y1; \
	VMULPS       (R14), Y0, Y0; \
	VMULPS       (R14)(AX*1), Y1, Y1; \
	VADDPS       Y1, Y0, Y0; \
	VFMADD231PS  (DX), Y0, Y8; \
	ADDQ         step, SI; \
	ADDQ         $32, R12; \
	ADDQ         $32, R13; \
	ADDQ         $32, DX; \
	ADDQ         $32, R14; \
	DECQ         CX; \
	JNZ          colLabel; \
	ADDQ         AX, R14; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS       X9, X8, X8; \
	VHADDPS      X8, X8, X8; \
	VHADDPS      X8, X8, X8; \
	VMOVSS       X8, (DI); \
	ADDQ         $4, DI; \
	DECQ         R10; \
	JNZ          rowLabel; \
	VZEROUPPER; \
	RET

#define RD2 \
	VPBROADCASTW (SI), Y0; \
	VPSRLVD      Y14, Y0, Y0; \
	VPAND        Y13, Y0, Y0
#define RD4 \
	VPBROADCASTD (SI), Y0; \
	VPSRLVD      Y14, Y0, Y0; \
	VPAND        Y13, Y0, Y0
#define RD3 \
	VPXOR        X0, X0, X0; \
	VPINSRW      $0, (SI), X0, X0; \
	VPINSRB      $2, 2(SI), X0, X0; \
	VPBROADCASTD X0, Y0; \
	VPSRLVD      Y14, Y0, Y0; \
	VPAND        Y13, Y0, Y0
#define RD8 VPMOVZXBD (SI), Y0

// func dotRoPERows1(out, q *float32, codes *byte, lo, s, sp *float32, n, d, bits int)
// out[i] = q · R(b_i)(lo + code_i·s) for the n code rows of a Channel block at codes
// (bits 8, 4, 3 or 2, packed as pack.go packs them), the rotation of row i given by
// its spread table at sp + i·2d floats (RoPE.spread, pairs (2j, 2j+1), all d values
// rotated), d a multiple of 8: each key value decoded as Channel.Decode does, rotated
// as rotateRowsGo does, then multiplied into the query with FMAs in 8 lanes. Reads
// exactly n·d·bits/8 code bytes.
TEXT ·dotRoPERows1(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), BX
	MOVQ codes+16(FP), SI
	MOVQ lo+24(FP), R8
	MOVQ s+32(FP), R9
	MOVQ sp+40(FP), R14
	MOVQ n+48(FP), R10
	MOVQ d+56(FP), R11
	LEAQ (R11*4), AX
	SHRQ $3, R11
	MOVQ bits+64(FP), CX
	CMPQ CX, $8
	JE   r8start
	CMPQ CX, $4
	JE   r4start
	CMPQ CX, $3
	JE   r3start
	VMOVUPS sh2<>(SB), Y14
	VMOVUPS two2<>(SB), Y13
	ROPEDOT(RD2, $2, r2row, r2col)

r4start:
	VMOVUPS sh4<>(SB), Y14
	VMOVUPS nib4<>(SB), Y13
	ROPEDOT(RD4, $4, r4row, r4col)

r3start:
	VMOVUPS rsh3<>(SB), Y14
	VMOVUPS rseven3<>(SB), Y13
	ROPEDOT(RD3, $3, r3row, r3col)

r8start:
	ROPEDOT(RD8, $8, r8row, r8col)

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
