#include "textflag.h"
#include "lossy_consts_amd64.h"

// The value sums of ChannelValues blocks (chanvalues_amd64.go) in AVX2 + FMA.

// C2, C4 and C8 load the codes of 8 channels at off(SI) into the int32 lanes of Y:
// one 2-byte (2-bit codes) or 4-byte (4-bit) word broadcast, shifted per lane (Y14)
// and masked (Y13), or 8 bytes zero-extended. A broadcast 2-byte word fills each
// lane's upper half too, which the shifts of at most 14 and the mask leave out.
#define C2(off, Y) \
	VPBROADCASTW off(SI), Y; \
	VPSRLVD      Y14, Y, Y; \
	VPAND        Y13, Y, Y
#define C4(off, Y) \
	VPBROADCASTD off(SI), Y; \
	VPSRLVD      Y14, Y, Y; \
	VPAND        Y13, Y, Y
#define C8(off, Y) VPMOVZXBD off(SI), Y

// V(C, off, Y, so) is one strip's decoded values of the row at SI in Y: the codes at
// off(SI) widened (C), converted, times the scales at so(BX), plus the zeros at
// so(AX), a multiply and an add separately rounded, as decChannelRows decodes.
#define V(C, off, Y, so) \
	C(off, Y); \
	VCVTDQ2PS    Y, Y; \
	VMULPS       so(BX), Y, Y; \
	VADDPS       so(AX), Y, Y

// STRIPS(C, o1, o2, o3, quad, one, ...) is addChanRows' loop for one code width: 32
// channels (four strips of 8, their codes o1, o2 and o3 bytes after the first's in
// a row, quad bytes in all) at a time while there are, then 8 (one bytes) at a
// time; per strip the n rows (R10, R11 bytes apart from R9 on) in order, each row's
// decoded values added times its weight (DX) into the accumulators (DI) with one
// fused multiply-add each, as MultiAxpy adds them. Scales at BX, zeros at AX.
#define STRIPS(C, o1, o2, o3, quad, one, quadLabel, quadRow, oneLabel, oneRow) \
quadLabel: \
	CMPQ         CX, $4; \
	JLT          oneLabel; \
	VMOVUPS      (DI), Y1; \
	VMOVUPS      32(DI), Y3; \
	VMOVUPS      64(DI), Y5; \
	VMOVUPS      96(DI), Y7; \
	MOVQ         R9, SI; \
	MOVQ         R8, DX; \
	MOVQ         R10, R12; \
quadRow: \
	VBROADCASTSS (DX), Y2; \
	V(C, 0, Y0, 0); \
	VFMADD231PS  Y0, Y2, Y1; \
	V(C, o1, Y4, 32); \
	VFMADD231PS  Y4, Y2, Y3; \
	V(C, o2, Y6, 64); \
	VFMADD231PS  Y6, Y2, Y5; \
	V(C, o3, Y8, 96); \
	VFMADD231PS  Y8, Y2, Y7; \
	ADDQ         R11, SI; \
	ADDQ         $4, DX; \
	DECQ         R12; \
	JNZ          quadRow; \
	VMOVUPS      Y1, (DI); \
	VMOVUPS      Y3, 32(DI); \
	VMOVUPS      Y5, 64(DI); \
	VMOVUPS      Y7, 96(DI); \
	ADDQ         $128, DI; \
	ADDQ         $128, BX; \
	ADDQ         $128, AX; \
	ADDQ         $quad, R9; \
	SUBQ         $4, CX; \
	JMP          quadLabel; \
oneLabel: \
	TESTQ        CX, CX; \
	JZ           addret; \
	VMOVUPS      (DI), Y1; \
	MOVQ         R9, SI; \
	MOVQ         R8, DX; \
	MOVQ         R10, R12; \
oneRow: \
	VBROADCASTSS (DX), Y2; \
	V(C, 0, Y0, 0); \
	VFMADD231PS  Y0, Y2, Y1; \
	ADDQ         R11, SI; \
	ADDQ         $4, DX; \
	DECQ         R12; \
	JNZ          oneRow; \
	VMOVUPS      Y1, (DI); \
	ADDQ         $32, DI; \
	ADDQ         $32, BX; \
	ADDQ         $32, AX; \
	ADDQ         $one, R9; \
	DECQ         CX; \
	JMP          oneLabel

// func addChanRows(acc, w *float32, codes *byte, n int, rb uintptr, s, lo *float32, d, bits int)
// acc[c] += Σ_{i<n} w[i]·(code(i, c)·s[c] + lo[c]) for c < d (d a positive multiple
// of 8, n ≥ 1), code row i of a Channel block of the given bits (8, 4 or 2) at
// codes + i·rb: each value decoded as decChannelRows decodes it and added as
// MultiAxpy adds a tile's rows, in row order with one fused multiply-add, so the
// sums are those of decoding the rows and adding them, bit for bit, however the
// rows are split between calls. Reads exactly the d·bits/8 code bytes of each row.
TEXT ·addChanRows(SB), NOSPLIT, $0-72
	MOVQ acc+0(FP), DI
	MOVQ w+8(FP), R8
	MOVQ codes+16(FP), R9
	MOVQ n+24(FP), R10
	MOVQ rb+32(FP), R11
	MOVQ s+40(FP), BX
	MOVQ lo+48(FP), AX
	MOVQ d+56(FP), CX
	MOVQ bits+64(FP), R12
	SHRQ $3, CX
	CMPQ R12, $4
	JE   b4
	CMPQ R12, $8
	JE   b8
	VMOVDQU sh2<>(SB), Y14
	VMOVDQU two2<>(SB), Y13
	STRIPS(C2, 2, 4, 6, 8, 2, q2, q2row, s2, s2row)

b4:
	VMOVDQU sh4<>(SB), Y14
	VMOVDQU nib4<>(SB), Y13
	STRIPS(C4, 4, 8, 12, 16, 4, q4, q4row, s4, s4row)

b8:
	STRIPS(C8, 8, 16, 24, 32, 8, q8, q8row, s8, s8row)

addret:
	VZEROUPPER
	RET

// QUAD(C, one, ...) is addChanRows4's loop for one code width: per strip of 8
// channels (one bytes of a row; scales at BX, zeros at AX), the n rows (R10, R11
// bytes apart from R9 on) in order, each row's values decoded once and added times
// each query's weight (DX, the next queries' R14 bytes apart) into the query's
// accumulators (DI, R13 bytes apart).
#define QUAD(C, one, stripLabel, rowLabel) \
stripLabel: \
	LEAQ         (DI)(R13*2), R15; \
	VMOVUPS      (DI), Y1; \
	VMOVUPS      (DI)(R13*1), Y3; \
	VMOVUPS      (R15), Y5; \
	VMOVUPS      (R15)(R13*1), Y7; \
	MOVQ         R9, SI; \
	MOVQ         R8, DX; \
	MOVQ         R10, R12; \
rowLabel: \
	V(C, 0, Y0, 0); \
	LEAQ         (DX)(R14*2), R15; \
	VBROADCASTSS (DX), Y2; \
	VFMADD231PS  Y0, Y2, Y1; \
	VBROADCASTSS (DX)(R14*1), Y4; \
	VFMADD231PS  Y0, Y4, Y3; \
	VBROADCASTSS (R15), Y6; \
	VFMADD231PS  Y0, Y6, Y5; \
	VBROADCASTSS (R15)(R14*1), Y8; \
	VFMADD231PS  Y0, Y8, Y7; \
	ADDQ         R11, SI; \
	ADDQ         $4, DX; \
	DECQ         R12; \
	JNZ          rowLabel; \
	LEAQ         (DI)(R13*2), R15; \
	VMOVUPS      Y1, (DI); \
	VMOVUPS      Y3, (DI)(R13*1); \
	VMOVUPS      Y5, (R15); \
	VMOVUPS      Y7, (R15)(R13*1); \
	ADDQ         $32, DI; \
	ADDQ         $32, BX; \
	ADDQ         $32, AX; \
	ADDQ         $one, R9; \
	DECQ         CX; \
	JNZ          stripLabel; \
	JMP          quadret

// func addChanRows4(acc *float32, as uintptr, w *float32, ws uintptr, codes *byte, n int, rb uintptr, s, lo *float32, d, bits int)
// addChanRows for four queries, each row's values decoded once: query r (r < 4)
// gets acc_r[c] += Σ_{i<n} w_r[i]·value(i, c) with acc_r at acc + r·as and w_r at
// w + r·ws (bytes), the sums addChanRows gives it, bit for bit.
TEXT ·addChanRows4(SB), NOSPLIT, $0-88
	MOVQ acc+0(FP), DI
	MOVQ as+8(FP), R13
	MOVQ w+16(FP), R8
	MOVQ ws+24(FP), R14
	MOVQ codes+32(FP), R9
	MOVQ n+40(FP), R10
	MOVQ rb+48(FP), R11
	MOVQ s+56(FP), BX
	MOVQ lo+64(FP), AX
	MOVQ d+72(FP), CX
	MOVQ bits+80(FP), R12
	SHRQ $3, CX
	CMPQ R12, $4
	JE   x4
	CMPQ R12, $8
	JE   x8
	VMOVDQU sh2<>(SB), Y14
	VMOVDQU two2<>(SB), Y13
	QUAD(C2, 2, x2strip, x2row)

x4:
	VMOVDQU sh4<>(SB), Y14
	VMOVDQU nib4<>(SB), Y13
	QUAD(C4, 4, x4strip, x4row)

x8:
	QUAD(C8, 8, x8strip, x8row)

quadret:
	VZEROUPPER
	RET
