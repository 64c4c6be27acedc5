//go:build amd64

#include "textflag.h"

// f32TailMask is eight all-ones lanes then eight zero lanes: the 8 lanes at byte
// offset 4·(8−r) have their first r lanes set (the mask of an r-value tail load).
DATA f32TailMask<>+0(SB)/8, $0xffffffffffffffff
DATA f32TailMask<>+8(SB)/8, $0xffffffffffffffff
DATA f32TailMask<>+16(SB)/8, $0xffffffffffffffff
DATA f32TailMask<>+24(SB)/8, $0xffffffffffffffff
DATA f32TailMask<>+32(SB)/8, $0
DATA f32TailMask<>+40(SB)/8, $0
DATA f32TailMask<>+48(SB)/8, $0
DATA f32TailMask<>+56(SB)/8, $0
GLOBL f32TailMask<>(SB), RODATA|NOPTR, $64

// func dotF32asm(a, b *float32, n int) float32
TEXT ·dotF32asm(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop32:
	CMPQ        CX, $32
	JB          loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         loop32

loop8:
	CMPQ        CX, $8
	JB          tail
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         loop8

tail:
	TESTQ       CX, CX
	JE          done
	LEAQ        f32TailMask<>(SB), AX
	MOVQ        $8, DX
	SUBQ        CX, DX
	VMOVUPS     (AX)(DX*4), Y8
	VMASKMOVPS  (SI), Y8, Y4
	VMASKMOVPS  (DI), Y8, Y5
	VFMADD231PS Y5, Y4, Y1

done:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET
