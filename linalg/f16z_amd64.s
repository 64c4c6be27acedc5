//go:build amd64

#include "textflag.h"

// The many-token F16 kernel with AVX-512: each token's sum bit for bit dotF16C's
// (f16c_amd64.s), whose 32 lane accumulators (accumulator a, lane i: the columns
// c ≡ 8a+i mod 32, fused in column order) become registers of 16 tokens each: a
// row's columns c ≡ 8a..8a+7 mod 32 in pass a (eight registers), the passes' sums
// then added in dotF16C's order.

// F16LANE(i): lane i of a pass for three rows: the 16 tokens' values of its column
// at 64i(DI), times each row's value of that column at 4i(SI), 4i(BX), 4i(DX)
// (broadcast), fused into Zi, Z(8+i), Z(16+i).
#define F16LANE(i, a0, a1, a2) \
	VMOVUPS          (64*i)(DI), Z24 \
	VFMADD231PS.BCST (4*i)(SI), Z24, a0 \
	VFMADD231PS.BCST (4*i)(BX), Z24, a1 \
	VFMADD231PS.BCST (4*i)(DX), Z24, a2

// PASSPAIR(off, z0..z7): a pass's accumulators at off(R11) plus the next pass's at
// (off+512)(R11), lane by lane, to z0..z7.
#define PASSPAIR(off, z0, z1, z2, z3, z4, z5, z6, z7) \
	VMOVUPS off(R11), z0 \
	VMOVUPS (off+64)(R11), z1 \
	VMOVUPS (off+128)(R11), z2 \
	VMOVUPS (off+192)(R11), z3 \
	VMOVUPS (off+256)(R11), z4 \
	VMOVUPS (off+320)(R11), z5 \
	VMOVUPS (off+384)(R11), z6 \
	VMOVUPS (off+448)(R11), z7 \
	VADDPS  (off+512)(R11), z0, z0 \
	VADDPS  (off+576)(R11), z1, z1 \
	VADDPS  (off+640)(R11), z2, z2 \
	VADDPS  (off+704)(R11), z3, z3 \
	VADDPS  (off+768)(R11), z4, z4 \
	VADDPS  (off+832)(R11), z5, z5 \
	VADDPS  (off+896)(R11), z6, z6 \
	VADDPS  (off+960)(R11), z7, z7

// F16REDUCE(toff, dst): dotF16C's reduction of one row's four passes' accumulators at
// toff(R11) (tmp[8a+i] for pass a, lane i) to dst: per lane i, (acc0+acc1) +
// (acc2+acc3); then lanes i and i+4; then (0+1) + (2+3).
#define F16REDUCE(toff, dst) \
	PASSPAIR(toff, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7) \
	PASSPAIR((toff+1024), Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15) \
	VADDPS  Z8, Z0, Z0 \
	VADDPS  Z9, Z1, Z1 \
	VADDPS  Z10, Z2, Z2 \
	VADDPS  Z11, Z3, Z3 \
	VADDPS  Z12, Z4, Z4 \
	VADDPS  Z13, Z5, Z5 \
	VADDPS  Z14, Z6, Z6 \
	VADDPS  Z15, Z7, Z7 \
	VADDPS  Z4, Z0, Z0 \
	VADDPS  Z5, Z1, Z1 \
	VADDPS  Z6, Z2, Z2 \
	VADDPS  Z7, Z3, Z3 \
	VADDPS  Z1, Z0, Z0 \
	VADDPS  Z3, Z2, Z2 \
	VADDPS  Z2, Z0, Z0 \
	VMOVUPS Z0, dst

// STOREPASS(acc0..acc7, toff): a pass's accumulators of one row to toff(R11)(R13*1).
#define STOREPASS(z0, z1, z2, z3, z4, z5, z6, z7, toff) \
	VMOVUPS z0, toff(R11)(R13*1) \
	VMOVUPS z1, (toff+64)(R11)(R13*1) \
	VMOVUPS z2, (toff+128)(R11)(R13*1) \
	VMOVUPS z3, (toff+192)(R11)(R13*1) \
	VMOVUPS z4, (toff+256)(R11)(R13*1) \
	VMOVUPS z5, (toff+320)(R11)(R13*1) \
	VMOVUPS z6, (toff+384)(R11)(R13*1) \
	VMOVUPS z7, (toff+448)(R11)(R13*1)

// func f16ToF32Z(dst *float32, w *byte, n int)
// dst[i] = the binary16 value at w[2i:], for i < n, n a multiple of 16.
TEXT ·f16ToF32Z(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JE   cdone

cloop:
	VCVTPH2PS (SI), Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNE       cloop

cdone:
	VZEROUPPER
	RET

// func f16TokensZ(res, w0, w1, w2, xt *float32, cols, cols32, groups int, tmp *float32)
// For the three rows w0, w1, w2 (widened to float32; their first cols32 values, a
// multiple of 32 and ≥ 32, summed): res[j·16·groups + 16g + t] = dotF16C's sum of row
// j with token t of group g of xt (per group and column the 16 tokens' values, 64
// bytes; cols columns a group), for g < groups. Each load of the tokens' values
// serves the three rows. tmp holds 96 ZMMs: each row's four passes' accumulators.
TEXT ·f16TokensZ(SB), NOSPLIT, $0-72
	MOVQ res+0(FP), R15
	MOVQ xt+32(FP), R9
	MOVQ cols+40(FP), R10
	SHLQ $6, R10               // bytes of one group of xt
	MOVQ groups+56(FP), R14
	MOVQ R14, R8
	SHLQ $6, R8                // bytes of one row's results
	MOVQ tmp+64(FP), R11

fgroup:
	TESTQ R14, R14
	JE    fdone
	XORQ  R12, R12             // pass a: its first column's offset, in floats

fpass:
	MOVQ   w0+8(FP), SI
	LEAQ   (SI)(R12*4), SI
	MOVQ   w1+16(FP), BX
	LEAQ   (BX)(R12*4), BX
	MOVQ   w2+24(FP), DX
	LEAQ   (DX)(R12*4), DX
	MOVQ   R12, R13
	SHLQ   $6, R13
	LEAQ   (R9)(R13*1), DI
	MOVQ   cols32+48(FP), CX
	SHRQ   $5, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

fcol:
	F16LANE(0, Z0, Z8, Z16)
	F16LANE(1, Z1, Z9, Z17)
	F16LANE(2, Z2, Z10, Z18)
	F16LANE(3, Z3, Z11, Z19)
	F16LANE(4, Z4, Z12, Z20)
	F16LANE(5, Z5, Z13, Z21)
	F16LANE(6, Z6, Z14, Z22)
	F16LANE(7, Z7, Z15, Z23)
	ADDQ $128, SI
	ADDQ $128, BX
	ADDQ $128, DX
	ADDQ $2048, DI
	DECQ CX
	JNE  fcol

	// Pass a's accumulators (a = R12/8) of row j to tmp[32j + 8a + i].
	MOVQ R12, R13
	SHLQ $6, R13
	STOREPASS(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	STOREPASS(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, 2048)
	STOREPASS(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 4096)
	ADDQ $8, R12
	CMPQ R12, $32
	JNE  fpass

	F16REDUCE(0, (R15))
	F16REDUCE(2048, (R15)(R8*1))
	F16REDUCE(4096, (R15)(R8*2))
	ADDQ $64, R15
	ADDQ R10, R9
	DECQ R14
	JMP  fgroup

fdone:
	VZEROUPPER
	RET
