#include "textflag.h"

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

// STRIPS(C, o1, o2, o3, quad, one, ...) is addChanCodes' loop for one code width:
// 32 channels (four strips of 8, their codes o1, o2 and o3 bytes after the first's
// in a row, quad bytes in all) at a time while there are, then 8 (one bytes) at a
// time; per strip the n rows (R10, R11 bytes apart from R9 on) in order, each
// row's codes converted and added times its weight (DX) into the strip's sums.
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
	C(0, Y0); \
	VCVTDQ2PS    Y0, Y0; \
	VFMADD231PS  Y0, Y2, Y1; \
	C(o1, Y4); \
	VCVTDQ2PS    Y4, Y4; \
	VFMADD231PS  Y4, Y2, Y3; \
	C(o2, Y6); \
	VCVTDQ2PS    Y6, Y6; \
	VFMADD231PS  Y6, Y2, Y5; \
	C(o3, Y8); \
	VCVTDQ2PS    Y8, Y8; \
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
	C(0, Y0); \
	VCVTDQ2PS    Y0, Y0; \
	VFMADD231PS  Y0, Y2, Y1; \
	ADDQ         R11, SI; \
	ADDQ         $4, DX; \
	DECQ         R12; \
	JNZ          oneRow; \
	VMOVUPS      Y1, (DI); \
	ADDQ         $32, DI; \
	ADDQ         $one, R9; \
	DECQ         CX; \
	JMP          oneLabel

// func addChanCodes(t, w *float32, codes *byte, n int, rb uintptr, d, bits int)
// t[c] += Σ_{i<n} w[i]·code(i, c) for c < d (d a positive multiple of 8, n ≥ 1),
// code row i of a Channel block of the given bits (8, 4 or 2) at codes + i·rb: each
// channel's rows added in order, one fused multiply-add each (codes are exact in
// float32). Reads exactly the d·bits/8 code bytes of each row.
TEXT ·addChanCodes(SB), NOSPLIT, $0-56
	MOVQ t+0(FP), DI
	MOVQ w+8(FP), R8
	MOVQ codes+16(FP), R9
	MOVQ n+24(FP), R10
	MOVQ rb+32(FP), R11
	MOVQ d+40(FP), CX
	MOVQ bits+48(FP), AX
	SHRQ $3, CX
	CMPQ AX, $4
	JE   b4
	CMPQ AX, $8
	JE   b8
	VMOVDQU shw2<>(SB), Y14
	VMOVDQU mask2<>(SB), Y13
	STRIPS(C2, 2, 4, 6, 8, 2, q2, q2row, s2, s2row)

b4:
	VMOVDQU shw4<>(SB), Y14
	VMOVDQU mask4<>(SB), Y13
	STRIPS(C4, 4, 8, 12, 16, 4, q4, q4row, s4, s4row)

b8:
	STRIPS(C8, 8, 16, 24, 32, 8, q8, q8row, s8, s8row)

addret:
	VZEROUPPER
	RET

// QUAD(C, one, ...) is addChanCodes4's loop for one code width: per strip of 8
// channels (one bytes of a row), the n rows (R10, R11 bytes apart from R9 on) in
// order, each row's codes converted once and added times each query's weight (DX,
// the next queries' R14 bytes apart) into the query's sums (DI, R13 bytes apart).
#define QUAD(C, one, stripLabel, rowLabel) \
stripLabel: \
	LEAQ         (DI)(R13*2), BX; \
	VMOVUPS      (DI), Y1; \
	VMOVUPS      (DI)(R13*1), Y3; \
	VMOVUPS      (BX), Y5; \
	VMOVUPS      (BX)(R13*1), Y7; \
	MOVQ         R9, SI; \
	MOVQ         R8, DX; \
	MOVQ         R10, R12; \
rowLabel: \
	C(0, Y0); \
	VCVTDQ2PS    Y0, Y0; \
	LEAQ         (DX)(R14*2), AX; \
	VBROADCASTSS (DX), Y2; \
	VFMADD231PS  Y0, Y2, Y1; \
	VBROADCASTSS (DX)(R14*1), Y4; \
	VFMADD231PS  Y0, Y4, Y3; \
	VBROADCASTSS (AX), Y6; \
	VFMADD231PS  Y0, Y6, Y5; \
	VBROADCASTSS (AX)(R14*1), Y8; \
	VFMADD231PS  Y0, Y8, Y7; \
	ADDQ         R11, SI; \
	ADDQ         $4, DX; \
	DECQ         R12; \
	JNZ          rowLabel; \
	LEAQ         (DI)(R13*2), BX; \
	VMOVUPS      Y1, (DI); \
	VMOVUPS      Y3, (DI)(R13*1); \
	VMOVUPS      Y5, (BX); \
	VMOVUPS      Y7, (BX)(R13*1); \
	ADDQ         $32, DI; \
	ADDQ         $one, R9; \
	DECQ         CX; \
	JNZ          stripLabel; \
	JMP          quadret

// func addChanCodes4(t *float32, ts uintptr, w *float32, ws uintptr, codes *byte, n int, rb uintptr, d, bits int)
// addChanCodes for four queries, each row's codes read and converted once: query r
// (r < 4) gets t_r[c] += Σ_{i<n} w_r[i]·code(i, c) with t_r at t + r·ts and w_r at
// w + r·ws (bytes), each channel's rows added in order with one fused multiply-add
// each, as addChanCodes adds them (the same sums bit for bit).
TEXT ·addChanCodes4(SB), NOSPLIT, $0-72
	MOVQ t+0(FP), DI
	MOVQ ts+8(FP), R13
	MOVQ w+16(FP), R8
	MOVQ ws+24(FP), R14
	MOVQ codes+32(FP), R9
	MOVQ n+40(FP), R10
	MOVQ rb+48(FP), R11
	MOVQ d+56(FP), CX
	MOVQ bits+64(FP), AX
	SHRQ $3, CX
	CMPQ AX, $4
	JE   x4
	CMPQ AX, $8
	JE   x8
	VMOVDQU shw2<>(SB), Y14
	VMOVDQU mask2<>(SB), Y13
	QUAD(C2, 2, x2strip, x2row)

x4:
	VMOVDQU shw4<>(SB), Y14
	VMOVDQU mask4<>(SB), Y13
	QUAD(C4, 4, x4strip, x4row)

x8:
	QUAD(C8, 8, x8strip, x8row)

quadret:
	VZEROUPPER
	RET

// func chanFinish(a, s, lo, t *float32, sw float32, d int)
// a[c] += s[c]·t[c] + lo[c]·sw for c < d (a positive multiple of 8): lo·sw rounded,
// then s·t added to it in one fused multiply-add, then added to a.
TEXT ·chanFinish(SB), NOSPLIT, $0-48
	MOVQ         a+0(FP), DI
	MOVQ         s+8(FP), SI
	MOVQ         lo+16(FP), R8
	MOVQ         t+24(FP), R9
	VBROADCASTSS sw+32(FP), Y2
	MOVQ         d+40(FP), CX
	SHRQ         $3, CX

fin:
	VMULPS      (R8), Y2, Y0
	VMOVUPS     (R9), Y1
	VFMADD231PS (SI), Y1, Y0
	VADDPS      (DI), Y0, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         fin
	VZEROUPPER
	RET

// Lane shifts and masks of 8 2-bit codes in a 16-bit word, 8 4-bit codes in a
// 32-bit word.
DATA shw2<>+0(SB)/8, $0x0000000200000000
DATA shw2<>+8(SB)/8, $0x0000000600000004
DATA shw2<>+16(SB)/8, $0x0000000a00000008
DATA shw2<>+24(SB)/8, $0x0000000e0000000c
GLOBL shw2<>(SB), RODATA|NOPTR, $32

DATA mask2<>+0(SB)/8, $0x0000000300000003
DATA mask2<>+8(SB)/8, $0x0000000300000003
DATA mask2<>+16(SB)/8, $0x0000000300000003
DATA mask2<>+24(SB)/8, $0x0000000300000003
GLOBL mask2<>(SB), RODATA|NOPTR, $32

DATA shw4<>+0(SB)/8, $0x0000000400000000
DATA shw4<>+8(SB)/8, $0x0000000c00000008
DATA shw4<>+16(SB)/8, $0x0000001400000010
DATA shw4<>+24(SB)/8, $0x0000001c00000018
GLOBL shw4<>(SB), RODATA|NOPTR, $32

DATA mask4<>+0(SB)/8, $0x0000000f0000000f
DATA mask4<>+8(SB)/8, $0x0000000f0000000f
DATA mask4<>+16(SB)/8, $0x0000000f0000000f
DATA mask4<>+24(SB)/8, $0x0000000f0000000f
GLOBL mask4<>(SB), RODATA|NOPTR, $32
