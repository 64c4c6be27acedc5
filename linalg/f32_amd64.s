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

// SUM4 leaves in the low lane of xa (a's low half) the sum of the four accumulators
// a, b, c, e, in the order every dot here uses (so their results agree bit for bit):
// (a+b)+(c+e), then the halves, pairs and lanes; xt is scratch.
#define SUM4(a, b, c, e, xa, xt) \
	VADDPS       b, a, a;   \
	VADDPS       e, c, c;   \
	VADDPS       c, a, a;   \
	VEXTRACTF128 $1, a, xt; \
	VADDPS       xt, xa, xa; \
	VMOVHLPS     xa, xa, xt; \
	VADDPS       xt, xa, xa; \
	VMOVSHDUP    xa, xt;    \
	VADDSS       xt, xa, xa

// func dotF32FMA(a, b []float32) float32
TEXT ·dotF32FMA(SB), NOSPLIT, $0-52
	MOVQ    a_base+0(FP), SI
	MOVQ    a_len+8(FP), CX
	MOVQ    b_base+24(FP), DI
	MOVQ    b_len+32(FP), AX
	CMPQ    AX, CX
	CMOVQLT AX, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3

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
	SUM4(Y0, Y1, Y2, Y3, X0, X1)
	VZEROUPPER
	MOVSS        X0, ret+48(FP)
	RET

#define VEC8(name, bits) \
	DATA name<>+0(SB)/4, bits \
	DATA name<>+4(SB)/4, bits \
	DATA name<>+8(SB)/4, bits \
	DATA name<>+12(SB)/4, bits \
	DATA name<>+16(SB)/4, bits \
	DATA name<>+20(SB)/4, bits \
	DATA name<>+24(SB)/4, bits \
	DATA name<>+28(SB)/4, bits \
	GLOBL name<>(SB), RODATA|NOPTR, $32

// The constants of e^−v in siluMulFMA.
VEC8(siluLo, $0xc2b00000)    // −88
VEC8(siluHi, $0x42b00000)    // 88
VEC8(siluNegOne, $0xbf800000) // −1
VEC8(siluLog2e, $0x3fb8aa3b) // 1.44269504
VEC8(siluLn2hi, $0xbf318000) // −0.693359375
VEC8(siluLn2lo, $0x395e8083) // 2.12194440e-4
VEC8(siluP0, $0x39506967)    // 1.9875691500e-4
VEC8(siluP1, $0x3ab743ce)    // 1.3981999507e-3
VEC8(siluP2, $0x3c088908)    // 8.3334519073e-3
VEC8(siluP3, $0x3d2aa9c1)    // 4.1665795894e-2
VEC8(siluP4, $0x3e2aaaaa)    // 1.6666665459e-1
VEC8(siluHalf, $0x3f000000)  // 5.0000001201e-1 (0.5 in float32)
VEC8(siluOne, $0x3f800000)   // 1
VEC8(siluBias, $127)         // exponent bias (int32)

// func siluMulFMA(gv, u *float32, n int)
// gv[i] = gv[i]/(1+e^−gv[i])·u[i] for i < n, n a multiple of 8. e^−v per lane for v
// clamped to [−88, 88]: n = round(−v·log2 e), r = −v − n·ln 2 (ln 2 split in two parts
// for precision), e^r by Cephes' expf polynomial, times 2^n built in the exponent bits.
TEXT ·siluMulFMA(SB), NOSPLIT, $0-24
	MOVQ gv+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JE   sdone

sloop:
	VMOVUPS      (DI), Y0
	VMAXPS       siluLo<>(SB), Y0, Y1
	VMINPS       siluHi<>(SB), Y1, Y1
	VMULPS       siluNegOne<>(SB), Y1, Y1
	VMULPS       siluLog2e<>(SB), Y1, Y2
	VROUNDPS     $0, Y2, Y2
	VFMADD231PS  siluLn2hi<>(SB), Y2, Y1
	VFMADD231PS  siluLn2lo<>(SB), Y2, Y1
	VMOVUPS      siluP0<>(SB), Y3
	VFMADD213PS  siluP1<>(SB), Y1, Y3
	VFMADD213PS  siluP2<>(SB), Y1, Y3
	VFMADD213PS  siluP3<>(SB), Y1, Y3
	VFMADD213PS  siluP4<>(SB), Y1, Y3
	VFMADD213PS  siluHalf<>(SB), Y1, Y3
	VMULPS       Y1, Y1, Y4
	VFMADD213PS  Y1, Y4, Y3
	VADDPS       siluOne<>(SB), Y3, Y3
	VCVTPS2DQ    Y2, Y2
	VPADDD       siluBias<>(SB), Y2, Y2
	VPSLLD       $23, Y2, Y2
	VMULPS       Y2, Y3, Y3
	VADDPS       siluOne<>(SB), Y3, Y3
	VDIVPS       Y3, Y0, Y0
	VMULPS       (SI), Y0, Y0
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JNZ          sloop

sdone:
	VZEROUPPER
	RET

// func dotF32Tokens(out *float32, os uintptr, w, x *float32, xs uintptr, cols, n int)
// out + t·os gets dotF32FMA(w[:cols], x[t·xs/4:][:cols]) for t < n, cols ≥ 1: two
// tokens per step, each load of w serving both, every token's sums in dotF32FMA's
// accumulators and order (Y0–Y3 for the first token, Y4–Y7 for the second), so each
// result is dotF32FMA's bit for bit; an odd last token alone.
TEXT ·dotF32Tokens(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DX
	MOVQ os+8(FP), R13
	MOVQ w+16(FP), SI
	MOVQ x+24(FP), DI
	MOVQ xs+32(FP), R11
	MOVQ cols+40(FP), CX
	MOVQ n+48(FP), BX

	// R12: bytes of the 32-value steps; R10: bytes of the 8-value steps; Y15: the
	// mask of the last cols%8 values.
	MOVQ    CX, R12
	ANDQ    $-32, R12
	SHLQ    $2, R12
	MOVQ    CX, R10
	ANDQ    $-8, R10
	SHLQ    $2, R10
	MOVQ    CX, AX
	ANDQ    $7, AX
	MOVQ    $8, R9
	SUBQ    AX, R9
	LEAQ    f32TailMask<>(SB), AX
	VMOVUPS (AX)(R9*4), Y15

pair:
	CMPQ   BX, $2
	JB     single
	LEAQ   (DI)(R11*1), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX

pair32:
	CMPQ        AX, R12
	JAE         pair8
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS (R8)(AX*1), Y8, Y4
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS 32(DI)(AX*1), Y9, Y1
	VFMADD231PS 32(R8)(AX*1), Y9, Y5
	VMOVUPS     64(SI)(AX*1), Y10
	VFMADD231PS 64(DI)(AX*1), Y10, Y2
	VFMADD231PS 64(R8)(AX*1), Y10, Y6
	VMOVUPS     96(SI)(AX*1), Y11
	VFMADD231PS 96(DI)(AX*1), Y11, Y3
	VFMADD231PS 96(R8)(AX*1), Y11, Y7
	ADDQ        $128, AX
	JMP         pair32

pair8:
	CMPQ        AX, R10
	JAE         pairtail
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VFMADD231PS (R8)(AX*1), Y8, Y4
	ADDQ        $32, AX
	JMP         pair8

pairtail:
	TESTQ       $7, CX
	JE          pairsum
	VMASKMOVPS  (SI)(AX*1), Y15, Y8
	VMASKMOVPS  (DI)(AX*1), Y15, Y9
	VMASKMOVPS  (R8)(AX*1), Y15, Y10
	VFMADD231PS Y9, Y8, Y1
	VFMADD231PS Y10, Y8, Y5

pairsum:
	SUM4(Y0, Y1, Y2, Y3, X0, X1)
	VMOVSS       X0, (DX)
	SUM4(Y4, Y5, Y6, Y7, X4, X5)
	VMOVSS       X4, (DX)(R13*1)
	LEAQ         (DI)(R11*2), DI
	LEAQ         (DX)(R13*2), DX
	SUBQ         $2, BX
	JMP          pair

single:
	TESTQ  BX, BX
	JE     done1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX

one32:
	CMPQ        AX, R12
	JAE         one8
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS 32(DI)(AX*1), Y9, Y1
	VMOVUPS     64(SI)(AX*1), Y10
	VFMADD231PS 64(DI)(AX*1), Y10, Y2
	VMOVUPS     96(SI)(AX*1), Y11
	VFMADD231PS 96(DI)(AX*1), Y11, Y3
	ADDQ        $128, AX
	JMP         one32

one8:
	CMPQ        AX, R10
	JAE         onetail
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DI)(AX*1), Y8, Y0
	ADDQ        $32, AX
	JMP         one8

onetail:
	TESTQ       $7, CX
	JE          onesum
	VMASKMOVPS  (SI)(AX*1), Y15, Y8
	VMASKMOVPS  (DI)(AX*1), Y15, Y9
	VFMADD231PS Y9, Y8, Y1

onesum:
	SUM4(Y0, Y1, Y2, Y3, X0, X1)
	VMOVSS       X0, (DX)

done1:
	VZEROUPPER
	RET

// func maxF32x8(x *float32, n int, lanes *[8]float32)
// Over x[:n], n a positive multiple of 32, x[0] not NaN: lanes[j] is the running
// maximum, by "v > m", of the values x[i] with i%8 == j, started at x[0]: VMAXPS
// with the new values as first source keeps the second (the maximum so far) when a
// value is NaN or not larger, as argmaxScalar does. Four accumulators, merged the
// same way (none holds NaN).
TEXT ·maxF32x8(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         lanes+16(FP), DI
	VBROADCASTSS (SI), Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3
	SHRQ         $5, CX

maxloop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS  Y0, Y4, Y0
	VMAXPS  Y1, Y5, Y1
	VMAXPS  Y2, Y6, Y2
	VMAXPS  Y3, Y7, Y3
	ADDQ    $128, SI
	DECQ    CX
	JNZ     maxloop

	VMAXPS  Y0, Y1, Y0
	VMAXPS  Y2, Y3, Y2
	VMAXPS  Y0, Y2, Y0
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func firstEqF32(x *float32, n int, m float32) int
// The first i < n (n a positive multiple of 8) with x[i] == m (ordered compare: a
// NaN equals nothing), or n when there is none.
TEXT ·firstEqF32(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y1
	XORQ         BX, BX

eqloop:
	VCMPPS    $0, (SI)(BX*4), Y1, Y2
	VMOVMSKPS Y2, AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $8, BX
	CMPQ      BX, CX
	JB        eqloop
	MOVQ      CX, ret+24(FP)
	VZEROUPPER
	RET

found:
	BSFL AX, AX
	ADDQ BX, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
