//go:build amd64

#include "textflag.h"
#include "q6k_amd64.h"

// The many-token Q6_K kernel with AVX-512 VNNI: each token's sum bit for bit
// q6kDotRows's (q6k_amd64.s), whose eight lanes per block (lane j: the exact dot of
// the block's values 4j..4j+3, times d·sc of its 16-value half, then fused into the
// lane's sum times the block's activation scale) become eight registers of 16 tokens
// each, updated by the same operations and added in the same order at the end. A row
// is expanded once per call (q6kExpandZ) and then multiplied against every 16-token
// group (q6kTokensZ).

// Q6KEXP(k, off) stores block k (codes in Y4, 0..63) of a half at off: its codes − 32
// as int8 at off(DI), and −128 times the sum of each of its dwords of those at
// off(BX). Y10: zero, Y11: bytes 1, Y12: bytes 32; Y6 scratch.
#define Q6KEXP(off) \
	VPSUBB   Y12, Y4, Y4 \
	VMOVDQU  Y4, off(DI) \
	VPXOR    Y6, Y6, Y6 \
	VPDPBUSD Y4, Y11, Y6 \
	VPSLLD   $7, Y6, Y6 \
	VPSUBD   Y6, Y10, Y6 \
	VMOVDQU  Y6, off(BX)

// Q6KEXPHALF(lo, hi, off): the four blocks of half a super-block (ql at lo(SI), qh at
// hi(SI)) by Q6KEXP, the first at off.
#define Q6KEXPHALF(lo, hi, off) \
	Q6KLOAD(lo, hi) \
	Q6KCODE0 \
	Q6KEXP(off) \
	Q6KCODE1 \
	Q6KEXP((off+32)) \
	Q6KCODE2 \
	Q6KEXP((off+64)) \
	Q6KCODE3 \
	Q6KEXP((off+96))

// func q6kExpandZ(codes *int8, corr *int32, ds *float32, w *byte, nsb int)
// For the Q6_K row of nsb super-blocks at w, per 32-value block b: its codes − 32 at
// codes[32b:], −128 times the sum of each group of four of those at corr[8b:], and for
// each 16-value half i of the row d·sc as float32 at ds[i] (q6kExpandScalar).
TEXT ·q6kExpandZ(SB), NOSPLIT, $0-40
	MOVQ         codes+0(FP), DI
	MOVQ         corr+8(FP), BX
	MOVQ         ds+16(FP), DX
	MOVQ         w+24(FP), SI
	MOVQ         nsb+32(FP), CX
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y14
	MOVL         $0x30303030, AX
	VPBROADCASTD AX, Y13
	MOVL         $0x20202020, AX
	VPBROADCASTD AX, Y12
	MOVL         $0x01010101, AX
	VPBROADCASTD AX, Y11
	VPXOR        Y10, Y10, Y10
	TESTQ        CX, CX
	JE           edone

esb:
	VPBROADCASTW 208(SI), X7
	VCVTPH2PS    X7, Y7
	VPMOVSXBD    192(SI), Y5
	VCVTDQ2PS    Y5, Y5
	VMULPS       Y7, Y5, Y5
	VMOVUPS      Y5, (DX)
	VPMOVSXBD    200(SI), Y5
	VCVTDQ2PS    Y5, Y5
	VMULPS       Y7, Y5, Y5
	VMOVUPS      Y5, 32(DX)
	Q6KEXPHALF(0, 128, 0)
	Q6KEXPHALF(64, 160, 128)
	ADDQ         $210, SI
	ADDQ         $256, DI
	ADDQ         $256, BX
	ADDQ         $64, DX
	DECQ         CX
	JNE          esb

edone:
	VZEROUPPER
	RET

// LANE(j, acc): lane j of the block at SI (codes), BX (corrections), DX (d·sc of its
// two halves) against one 16-token group (codes + 128 at DI, scales in Z24): the exact
// dot of its dword j, converted, times d·sc, fused into acc times the scales.
#define LANE(j, acc, dsoff) \
	VMOVDQU32     (64*j)(DI), Z26 \
	VPBROADCASTD  (4*j)(BX), Z25 \
	VPDPBUSD.BCST (4*j)(SI), Z26, Z25 \
	VCVTDQ2PS     Z25, Z25 \
	VMULPS.BCST   dsoff(DX), Z25, Z25 \
	VFMADD231PS   Z24, Z25, acc

// func q6kTokensZ(res *float32, codes *int8, corr *int32, ds *float32, xp *uint32, xdp *float32, nb, groups int)
// res[16g+t] = q6kDotRows's sum of the row q6kExpandZ expanded (codes, corr, ds; nb
// blocks) with token t of group g of the pack (xp, xdp), for g < groups: per block the
// eight lanes by LANE into Z16..Z23, then added as HSUM adds a YMM's lanes:
// ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)).
TEXT ·q6kTokensZ(SB), NOSPLIT, $0-64
	MOVQ res+0(FP), R15
	MOVQ xp+32(FP), DI
	MOVQ xdp+40(FP), R8
	MOVQ groups+56(FP), R14

tgroup:
	TESTQ  R14, R14
	JE     tdone
	MOVQ   codes+8(FP), SI
	MOVQ   corr+16(FP), BX
	MOVQ   ds+24(FP), DX
	MOVQ   nb+48(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

tblock:
	VMOVUPS (R8), Z24
	LANE(0, Z16, 0)
	LANE(1, Z17, 0)
	LANE(2, Z18, 0)
	LANE(3, Z19, 0)
	LANE(4, Z20, 4)
	LANE(5, Z21, 4)
	LANE(6, Z22, 4)
	LANE(7, Z23, 4)
	ADDQ    $32, SI
	ADDQ    $32, BX
	ADDQ    $8, DX
	ADDQ    $512, DI
	ADDQ    $64, R8
	DECQ    CX
	JNE     tblock

	VADDPS  Z20, Z16, Z16
	VADDPS  Z21, Z17, Z17
	VADDPS  Z22, Z18, Z18
	VADDPS  Z23, Z19, Z19
	VADDPS  Z17, Z16, Z16
	VADDPS  Z19, Z18, Z18
	VADDPS  Z18, Z16, Z16
	VMOVUPS Z16, (R15)
	ADDQ    $64, R15
	DECQ    R14
	JMP     tgroup

tdone:
	VZEROUPPER
	RET
