//go:build amd64

#include "textflag.h"

// Softmax kernels in AVX2 + FMA assembly, and exp with AVX-512F (expRowZ, at the
// end). Constants are 8-lane vectors in read-only data, read as memory operands
// (log2e, ln2 split in two, the Taylor coefficients 1/720 … 1, the −87 cut;
// expRowZ broadcasts them into registers). The routines end with VZEROUPPER (scalar
// Go float code follows).

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

VEC8(expLog2e, $0x3fb8aa3b)  // 1.44269504
VEC8(expLn2hi, $0xbf318000)  // −0.693359375
VEC8(expLn2lo, $0x395e8083)  // +2.12194440e-4
VEC8(expLowCut, $0xc2ae0000) // −87
VEC8(expC720, $0x3ab60b61)   // 1/720
VEC8(expC120, $0x3c088889)   // 1/120
VEC8(expC24, $0x3d2aaaab)    // 1/24
VEC8(expC6, $0x3e2aaaab)     // 1/6
VEC8(expHalf, $0x3f000000)   // 1/2
VEC8(expOne, $0x3f800000)    // 1
VEC8(expBias, $127)          // exponent bias (int32)
VEC8(maxNegInf, $0xff800000) // −Inf

// expTailMask is eight zero lanes then eight all-ones lanes: the 8 lanes at byte
// offset 4·r have their last r lanes set (the lanes of the last r values of a row
// read as its last 8).
DATA expTailMask<>+0(SB)/8, $0
DATA expTailMask<>+8(SB)/8, $0
DATA expTailMask<>+16(SB)/8, $0
DATA expTailMask<>+24(SB)/8, $0
DATA expTailMask<>+32(SB)/8, $0xffffffffffffffff
DATA expTailMask<>+40(SB)/8, $0xffffffffffffffff
DATA expTailMask<>+48(SB)/8, $0xffffffffffffffff
DATA expTailMask<>+56(SB)/8, $0xffffffffffffffff
GLOBL expTailMask<>(SB), RODATA|NOPTR, $64

// EXPSUM returns the sum of the 8 lanes of Y12, added pairwise: ((f0+f1)+(f2+f3)) +
// ((f4+f5)+(f6+f7)).
#define EXPSUM \
	VHADDPS      Y12, Y12, Y12 \
	VHADDPS      Y12, Y12, Y12 \
	VEXTRACTF128 $1, Y12, X1   \
	VADDSS       X1, X12, X0   \
	VZEROUPPER                 \
	MOVSS        X0, ret+24(FP) \
	RET

// EXP8 replaces x (a Y register) by x − m (m in Y15) and writes w = e^(x−m) to Y3,
// as follows: v = round-even((x−m)·log2e), t = (x−m) − v·ln2 in two
// FMAs, the degree-6 polynomial in Horner form by FMAs, times 2^v built in the
// exponent bits, 0 where x−m < −87. Clobbers Y1, Y2, Y4, Y5.
#define EXP8(x) \
	VSUBPS      Y15, x, x \
	VMULPS      expLog2e<>(SB), x, Y1 \
	VROUNDPS    $0, Y1, Y1 \
	VMOVAPS     x, Y2 \
	VFMADD231PS expLn2hi<>(SB), Y1, Y2 \
	VFMADD231PS expLn2lo<>(SB), Y1, Y2 \
	VMOVUPS     expC720<>(SB), Y3 \
	VFMADD213PS expC120<>(SB), Y2, Y3 \
	VFMADD213PS expC24<>(SB), Y2, Y3 \
	VFMADD213PS expC6<>(SB), Y2, Y3 \
	VFMADD213PS expHalf<>(SB), Y2, Y3 \
	VFMADD213PS expOne<>(SB), Y2, Y3 \
	VFMADD213PS expOne<>(SB), Y2, Y3 \
	VCVTPS2DQ   Y1, Y4 \
	VPADDD      expBias<>(SB), Y4, Y4 \
	VPSLLD      $23, Y4, Y4 \
	VMULPS      Y4, Y3, Y3 \
	VCMPPS      $1, expLowCut<>(SB), x, Y5 \
	VANDNPS     Y3, Y5, Y3

// func expRowFMA(row *float32, n int, mb uint32) float32
// Full vectors in place, then, when n%8 ≠ 0, the last 8 values (loaded before the
// loop overwrites some of them) with only their last n%8 lanes summed. All 8 lanes
// are stored: the first 8−n%8 get the weights the loop stored there, bit for bit (the
// same instructions on the same values), and a plain store is cheaper than VMASKMOVPS.
TEXT ·expRowFMA(SB), NOSPLIT, $0-28
	MOVQ         row+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS mb+16(FP), Y15
	LEAQ         -32(SI)(CX*4), DI
	VMOVUPS      (DI), Y14
	MOVQ         CX, DX
	ANDQ         $7, DX
	LEAQ         expTailMask<>(SB), BX
	VMOVUPS      (BX)(DX*4), Y13
	VXORPS       Y12, Y12, Y12
	SHRQ         $3, CX

eloop:
	VMOVUPS (SI), Y0
	EXP8(Y0)
	VMOVUPS Y3, (SI)
	VADDPS  Y3, Y12, Y12
	ADDQ    $32, SI
	DECQ    CX
	JNZ     eloop

	TESTQ      DX, DX
	JE         esum
	EXP8(Y14)
	VMOVUPS    Y3, (DI)
	VANDPS     Y13, Y3, Y3
	VADDPS     Y3, Y12, Y12

esum:
	EXPSUM

// func maxRowFMA(row *float32, n int) float32
// A value x enters a lane's maximum m as VMAXPS with x first: m stays when x is NaN,
// and m, started at −Inf, is never NaN.
TEXT ·maxRowFMA(SB), NOSPLIT, $0-20
	MOVQ    row+0(FP), SI
	MOVQ    n+8(FP), CX
	LEAQ    -32(SI)(CX*4), DI
	VMOVUPS maxNegInf<>(SB), Y0
	VMOVAPS Y0, Y1
	SHRQ    $3, CX

mloop2:
	CMPQ    CX, $2
	JB      mloop1
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VMAXPS  Y0, Y2, Y0
	VMAXPS  Y1, Y3, Y1
	ADDQ    $64, SI
	SUBQ    $2, CX
	JMP     mloop2

mloop1:
	TESTQ   CX, CX
	JE      mlast
	VMOVUPS (SI), Y2
	VMAXPS  Y0, Y2, Y0

mlast:
	// The last 8 values (a whole vector again when n%8 = 0).
	VMOVUPS      (DI), Y2
	VMAXPS       Y1, Y2, Y1
	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

// EXP16 is EXP8 with ZMM registers (AVX-512F): x replaced by x − m (m in Z31) and
// w = e^(x−m) written to Z3, lane for lane the same bits: the same operations, but
// the scaling by 2^n in one VSCALEFPS (exact where EXP8's exponent bits are: n ≥
// −126 above the cut), the constants in registers (Z16 log2e, Z17 and Z18 ln2's
// parts, Z19 the −87 cut, Z20..Z25 the coefficients 1/720 … 1; EXPZCONSTS).
// Clobbers Z1, Z2, K1.
#define EXP16(x) \
	VSUBPS      Z31, x, x   \
	VMULPS      Z16, x, Z1  \
	VRNDSCALEPS $0, Z1, Z1  \
	VMOVAPS     x, Z2       \
	VFMADD231PS Z17, Z1, Z2 \
	VFMADD231PS Z18, Z1, Z2 \
	VMOVAPS     Z20, Z3     \
	VFMADD213PS Z21, Z2, Z3 \
	VFMADD213PS Z22, Z2, Z3 \
	VFMADD213PS Z23, Z2, Z3 \
	VFMADD213PS Z24, Z2, Z3 \
	VFMADD213PS Z25, Z2, Z3 \
	VFMADD213PS Z25, Z2, Z3 \
	VSCALEFPS   Z1, Z3, Z3  \
	VCMPPS      $5, Z19, x, K1 \
	VMOVAPS.Z   Z3, K1, Z3

#define EXPZCONSTS \
	VBROADCASTSS expLog2e<>(SB), Z16  \
	VBROADCASTSS expLn2hi<>(SB), Z17  \
	VBROADCASTSS expLn2lo<>(SB), Z18  \
	VBROADCASTSS expLowCut<>(SB), Z19 \
	VBROADCASTSS expC720<>(SB), Z20   \
	VBROADCASTSS expC120<>(SB), Z21   \
	VBROADCASTSS expC24<>(SB), Z22    \
	VBROADCASTSS expC6<>(SB), Z23     \
	VBROADCASTSS expHalf<>(SB), Z24   \
	VBROADCASTSS expOne<>(SB), Z25

// func expRowZ(row *float32, n int, mb uint32) float32
// expRowFMA with 16 lanes, for n ≥ 16: full vectors in place, then, when n%16 ≠ 0,
// the last 16 values (loaded before the loop overwrites some of them) with only
// their last n%16 lanes (K2) summed; each weight is expRowFMA's, bit for bit.
TEXT ·expRowZ(SB), NOSPLIT, $0-28
	MOVQ         row+0(FP), SI
	MOVQ         n+8(FP), R9
	VBROADCASTSS mb+16(FP), Z31
	EXPZCONSTS
	LEAQ         -64(SI)(R9*4), DI
	VMOVUPS      (DI), Z14
	MOVQ         R9, R10
	ANDQ         $15, R10
	MOVQ         $16, CX
	SUBQ         R10, CX
	MOVL         $0xffff, AX
	SHLL         CX, AX
	KMOVW        AX, K2
	VPXORD       Z12, Z12, Z12
	SHRQ         $4, R9

zloop:
	VMOVUPS (SI), Z0
	EXP16(Z0)
	VMOVUPS Z3, (SI)
	VADDPS  Z3, Z12, Z12
	ADDQ    $64, SI
	DECQ    R9
	JNZ     zloop

	TESTQ     R10, R10
	JE        zsum
	EXP16(Z14)
	VMOVUPS   Z3, (DI)
	VMOVAPS.Z Z3, K2, Z3
	VADDPS    Z3, Z12, Z12

zsum:
	// The two halves' lanes added, then as expRowFMA.
	VEXTRACTF64X4 $1, Z12, Y1
	VADDPS        Y1, Y12, Y12
	EXPSUM
