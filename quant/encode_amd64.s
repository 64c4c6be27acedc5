//go:build amd64

#include "textflag.h"

// Affine encoding in AVX2: the range of a group and its codes, 8 values per step,
// computing what groupRange and quantCode compute value by value (encode_amd64.go).

DATA encf16max<>+0(SB)/4, $0x477fe000 // 65504
GLOBL encf16max<>(SB), RODATA|NOPTR, $4

DATA encnegf16max<>+0(SB)/4, $0xc77fe000 // −65504
GLOBL encnegf16max<>(SB), RODATA|NOPTR, $4

DATA enchalf<>+0(SB)/4, $0x3f000000 // 0.5
GLOBL enchalf<>(SB), RODATA|NOPTR, $4

// Word factors of VPMADDWD that pack codes: 4-bit pairs c0 + 16·c1, 2-bit pairs
// c0 + 4·c1 and 16·c2 + 64·c3 (VPHADDD then adds the two).
DATA encmul4<>+0(SB)/8, $0x0010000100100001
DATA encmul4<>+8(SB)/8, $0x0010000100100001
GLOBL encmul4<>(SB), RODATA|NOPTR, $16

DATA encmul2<>+0(SB)/8, $0x0040001000040001
DATA encmul2<>+8(SB)/8, $0x0040001000040001
GLOBL encmul2<>(SB), RODATA|NOPTR, $16

// func affineRange(src *float32, n int) (lo, hi float32, nan bool)
// Per lane, lo = x < lo ? x : lo and hi = x > hi ? x : hi from ±65504 (VMINPS and
// VMAXPS return their second operand, the running value, for a NaN x), then the lanes'
// extremes; nan tells whether some x is NaN. n is a positive multiple of 8.
TEXT ·affineRange(SB), NOSPLIT, $0-25
	MOVQ         src+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS encf16max<>(SB), Y0
	VBROADCASTSS encnegf16max<>(SB), Y1
	VXORPS       Y2, Y2, Y2

rangeloop:
	VMOVUPS (SI), Y3
	VMINPS  Y0, Y3, Y0
	VMAXPS  Y1, Y3, Y1
	VCMPPS  $3, Y3, Y3, Y4 // unordered: NaN
	VORPS   Y4, Y2, Y2
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     rangeloop

	VEXTRACTF128 $1, Y0, X3
	VMINPS       X3, X0, X0
	VEXTRACTF128 $1, Y1, X4
	VMAXPS       X4, X1, X1
	VPERMILPS    $0x4e, X0, X3
	VMINPS       X3, X0, X0
	VPERMILPS    $0x4e, X1, X4
	VMAXPS       X4, X1, X1
	VPERMILPS    $0xb1, X0, X3
	VMINPS       X3, X0, X0
	VPERMILPS    $0xb1, X1, X4
	VMAXPS       X4, X1, X1
	VMOVSS       X0, lo+16(FP)
	VMOVSS       X1, hi+20(FP)
	VMOVMSKPS    Y2, AX
	TESTL        AX, AX
	SETNE        nan+24(FP)
	VZEROUPPER
	RET

// ENCCODES leaves in X7 the codes of the 8 values at (SI), as words, and steps SI:
// c = (x − lo)·inv + 0.5, rounded after each step; c where c ≥ 0, else cnan
// for NaN x and 0 for the rest (−Inf, values below lo); at most maxCode (Y11);
// truncated. Y8 lo, Y9 inv, Y10 0.5, Y12 cnan, Y13 zero; Y3..Y6 scratch.
#define ENCCODES \
	VMOVUPS    (SI), Y3            \
	VSUBPS     Y8, Y3, Y4          \
	VMULPS     Y9, Y4, Y4          \
	VADDPS     Y10, Y4, Y4         \
	VCMPPS     $0x1d, Y13, Y4, Y5  \
	VCMPPS     $3, Y3, Y3, Y6      \
	VANDPS     Y12, Y6, Y6         \
	VBLENDVPS  Y5, Y4, Y6, Y4      \
	VMINPS     Y11, Y4, Y4         \
	VCVTTPS2DQ Y4, Y4              \
	VEXTRACTI128 $1, Y4, X5        \
	VPACKUSDW  X5, X4, X7          \
	ADDQ       $32, SI

// func affineQuant(dst *byte, src *float32, n int, lo, inv, cnan float32, bits int)
// The codes of the n values at src (a positive multiple of 8) for zero lo and
// reciprocal step inv, packed as packCodes packs them (bits 8, 4 or 2; little end
// first); cnan is the code value of NaN before clamping, −lo·inv + 0.5.
TEXT ·affineQuant(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS lo+24(FP), Y8
	VBROADCASTSS inv+28(FP), Y9
	VBROADCASTSS enchalf<>(SB), Y10
	VBROADCASTSS cnan+32(FP), Y12
	VXORPS       Y13, Y13, Y13
	MOVQ         bits+40(FP), BX
	MOVL         $1, AX
	MOVQ         BX, CX
	SHLL         CX, AX
	DECL         AX
	MOVQ         n+16(FP), CX
	VCVTSI2SSL   AX, X11, X11
	VBROADCASTSS X11, Y11
	CMPQ         BX, $8
	JEQ          q8loop
	CMPQ         BX, $4
	JEQ          q4loop

q2loop:
	ENCCODES
	VPMADDWD  encmul2<>(SB), X7, X7
	VPHADDD   X7, X7, X7
	VPACKUSDW X7, X7, X7
	VPACKUSWB X7, X7, X7
	VPEXTRW   $0, X7, AX
	MOVW      AX, (DI)
	ADDQ      $2, DI
	SUBQ      $8, CX
	JNZ       q2loop
	VZEROUPPER
	RET

q4loop:
	ENCCODES
	VPMADDWD  encmul4<>(SB), X7, X7
	VPACKUSDW X7, X7, X7
	VPACKUSWB X7, X7, X7
	VMOVD     X7, (DI)
	ADDQ      $4, DI
	SUBQ      $8, CX
	JNZ       q4loop
	VZEROUPPER
	RET

q8loop:
	ENCCODES
	VPACKUSWB X7, X7, X7
	VMOVQ     X7, (DI)
	ADDQ      $8, DI
	SUBQ      $8, CX
	JNZ       q8loop
	VZEROUPPER
	RET
