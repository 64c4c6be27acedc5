//go:build amd64

#include "textflag.h"
#include "q4k_amd64.h"

// The Q4_K product of one row against many tokens with AVX-512 VNNI, each token's sum
// bit for bit q4kDotRows's (q4k_amd64.s): that kernel keeps eight float32 lanes, lane j
// summing sub-block j of every super-block by two fused multiply-adds per super-block
// (acc += dot·(sc·d·xd), then acc −= (m·dmin)·(xd·xsum)), and adds its lanes at the end
// as ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)). Here the tokens are in the lanes and the eight
// sub-block accumulators are eight registers (Z16..Z23), updated by the same
// instructions in the same order, and added in that order at the end.

// Q4KTPAIR(p): sub-blocks 2p and 2p+1 of the super-block at SI against the group's
// activation blocks at DI (signed codes, packed): per dword k of their 32 code bytes,
// the low nibbles (sub-block 2p) and high nibbles (2p+1) of the row's four bytes
// broadcast against the 16 tokens' codes; then each sub-block's dots scaled into its
// accumulator.
#define Q4KTDWORD(p, k) \
	VPBROADCASTD (16+32*p+4*k)(SI), Z2 \
	VPSRLD       $4, Z2, Z3 \
	VPANDD       Z8, Z2, Z2 \
	VPANDD       Z8, Z3, Z3 \
	VPDPBUSD     ((2*p)*512+64*k)(DI), Z2, Z0 \
	VPDPBUSD     ((2*p+1)*512+64*k)(DI), Z3, Z1

// Q4KTACC(acc, facc, j): facc += dots·(sc·d)_j·xd, then facc −= (m·dmin)_j·(xd·xsum), as
// Q4KACC does for lane j; (sc·d) and (m·dmin) of the super-block at 0(SP) and 32(SP).
#define Q4KTACC(acc, facc, j) \
	VCVTDQ2PS         acc, acc \
	VMOVUPS           (64*j)(R8), Z4 \
	VMULPS.BCST       (4*j)(SP), Z4, Z5 \
	VFMADD231PS       Z5, acc, facc \
	VCVTDQ2PS         (64*j)(R9), Z6 \
	VMULPS            Z4, Z6, Z6 \
	VFNMADD231PS.BCST (32+4*j)(SP), Z6, facc

#define Q4KTPAIR(p, fa, fb) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	Q4KTDWORD(p, 0) \
	Q4KTDWORD(p, 1) \
	Q4KTDWORD(p, 2) \
	Q4KTDWORD(p, 3) \
	Q4KTDWORD(p, 4) \
	Q4KTDWORD(p, 5) \
	Q4KTDWORD(p, 6) \
	Q4KTDWORD(p, 7) \
	Q4KTACC(Z0, fa, (2*p)) \
	Q4KTACC(Z1, fb, (2*p+1))

// func q4kTokensZ(res *float32, w *byte, xps *uint32, xdp *float32, xsp *int32, nsb, groups int)
// res[16g+t] = q4kDotRows's sum of the Q4_K row of nsb super-blocks at w for token t of
// group g, for g < groups: the groups packed by packTokens with signed codes (xps),
// scales (xdp) and code sums (xsp). It prefetches 4 KiB ahead of the super-block it
// reads, as the one-token kernels do: the rows of a chunk are read one after the
// other, so that runs on into the next rows.
TEXT ·q4kTokensZ(SB), NOSPLIT, $64-56
	MOVQ         res+0(FP), R15
	MOVQ         xps+16(FP), DI
	MOVQ         xdp+24(FP), R8
	MOVQ         xsp+32(FP), R9
	MOVQ         groups+48(FP), R14
	MOVL         $0x0f0f0f0f, R13
	VPBROADCASTD R13, Z8

kgroup:
	TESTQ  R14, R14
	JE     kdone
	MOVQ   w+8(FP), SI
	MOVQ   nsb+40(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

ksb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	Q4KSCALES
	VMOVUPS Y2, 0(SP)
	VMOVUPS Y3, 32(SP)
	Q4KTPAIR(0, Z16, Z17)
	Q4KTPAIR(1, Z18, Z19)
	Q4KTPAIR(2, Z20, Z21)
	Q4KTPAIR(3, Z22, Z23)
	ADDQ    $144, SI
	ADDQ    $4096, DI
	ADDQ    $512, R8
	ADDQ    $512, R9
	DECQ    CX
	JNE     ksb

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
	JMP     kgroup

kdone:
	VZEROUPPER
	RET
