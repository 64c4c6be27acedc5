//go:build amd64

#include "textflag.h"

// MultiDot and MultiAxpy over float32 tiles in AVX2 + FMA assembly, one query per
// call, for any row length d ≥ 1: the last d%8 values of a row are read and written
// through lane masks (VMASKMOVPS), so nothing past a row's d values is read as data
// or written. Both routines end with VZEROUPPER.

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
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (DI)
	ADDQ         $4, DI
	ADDQ         DX, SI
	DECQ         R10
	JMP          drow

ddone:
	VZEROUPPER
	RET

// func axpyRowsF32(acc, w, x *float32, xs uintptr, n, d int)
// acc[c] += Σ_i w[i]·x[i·xs/4 + c] for c < d: strips of 32 columns in four
// accumulators over all n rows, then strips of 8 (and the last d%8 columns, masked)
// with four accumulators taking rows in turn; each strip is added to acc once.
TEXT ·axpyRowsF32(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ w+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ xs+24(FP), DX
	MOVQ n+32(FP), R10
	MOVQ d+40(FP), R11
	TAILMASK
	LEAQ (DX)(DX*2), R12

astrip32:
	CMPQ   R11, $32
	JB     astrip8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, R14
	MOVQ   R9, AX
	MOVQ   R10, CX

arow32:
	VBROADCASTSS (AX), Y8
	VFMADD231PS  (R14), Y8, Y0
	VFMADD231PS  32(R14), Y8, Y1
	VFMADD231PS  64(R14), Y8, Y2
	VFMADD231PS  96(R14), Y8, Y3
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JNZ          arow32
	VADDPS       (DI), Y0, Y0
	VADDPS       32(DI), Y1, Y1
	VADDPS       64(DI), Y2, Y2
	VADDPS       96(DI), Y3, Y3
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $32, R11
	JMP          astrip32

astrip8:
	CMPQ   R11, $8
	JB     atail
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, R14
	MOVQ   R9, AX
	MOVQ   R10, CX

arow8x4:
	CMPQ         CX, $4
	JB           arow8x1
	VBROADCASTSS (AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VFMADD231PS  (R14), Y8, Y0
	VFMADD231PS  (R14)(DX*1), Y9, Y1
	VFMADD231PS  (R14)(DX*2), Y10, Y2
	VFMADD231PS  (R14)(R12*1), Y11, Y3
	ADDQ         $16, AX
	LEAQ         (R14)(DX*4), R14
	SUBQ         $4, CX
	JMP          arow8x4

arow8x1:
	TESTQ        CX, CX
	JE           aend8
	VBROADCASTSS (AX), Y8
	VFMADD231PS  (R14), Y8, Y0
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JMP          arow8x1

aend8:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, R11
	JMP     astrip8

atail:
	TESTQ  R11, R11
	JE     adone
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, R14
	MOVQ   R9, AX
	MOVQ   R10, CX

arowtx4:
	CMPQ         CX, $4
	JB           arowtx1
	VBROADCASTSS (AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VMASKMOVPS   (R14), Y15, Y4
	VMASKMOVPS   (R14)(DX*1), Y15, Y5
	VMASKMOVPS   (R14)(DX*2), Y15, Y6
	VMASKMOVPS   (R14)(R12*1), Y15, Y7
	VFMADD231PS  Y4, Y8, Y0
	VFMADD231PS  Y5, Y9, Y1
	VFMADD231PS  Y6, Y10, Y2
	VFMADD231PS  Y7, Y11, Y3
	ADDQ         $16, AX
	LEAQ         (R14)(DX*4), R14
	SUBQ         $4, CX
	JMP          arowtx4

arowtx1:
	TESTQ        CX, CX
	JE           aendt
	VBROADCASTSS (AX), Y8
	VMASKMOVPS   (R14), Y15, Y4
	VFMADD231PS  Y4, Y8, Y0
	ADDQ         $4, AX
	ADDQ         DX, R14
	DECQ         CX
	JMP          arowtx1

aendt:
	VADDPS     Y1, Y0, Y0
	VADDPS     Y3, Y2, Y2
	VADDPS     Y2, Y0, Y0
	VMASKMOVPS (DI), Y15, Y1
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

adone:
	VZEROUPPER
	RET
