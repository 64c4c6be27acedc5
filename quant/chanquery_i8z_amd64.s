//go:build amd64

#include "textflag.h"
#include "cqz_amd64.h"

// chanQueryI8Z (declaration and contract in chanquery_i8z_amd64.go): one query
// prepared for the int8 scores of a 2-bit KIVI key block in one call with ZMM
// registers, what channelQueryF16C and quantQueryI8 write one after the other, bit
// for bit, with the pre-scaled query kept in registers. Two groups of 32 channels go
// side by side, group k in the low 256 bits of each vector and k+1 in the high ones,
// laid out so that the packs leave the codes in the kernels' order. A pair of groups
// whose values are all finite (almost every one) takes a short path: their largest
// magnitudes in any order, Σ q·0 = +0 left out. A pair with a NaN or an infinity
// repeats quantQueryI8's YMM steps in each half, in its order (which NaN a group's d
// keeps, and whether its largest magnitude is NaN, depend on it). b is summed in
// channelQueryF16C's order and operand order, eight lanes over the channels in turn.
// Against those two calls, a KIVI key block of d = 64 and 32 tokens took 22 → 14 ns to
// prepare, 48 → 39 ns with its scores (BenchmarkChanQueryI8Z).

// cq8idx: the VPERMT2PS indexes that lay out two groups' 64 pre-scaled channels
// (four vectors of 16 in order, P0..P3) as four vectors X0..X3 whose VPACKSSDW and
// VPACKSSWB leave the codes in the kernels' order (quantQueryI8's 2-bit order: byte
// 8m+j of a group is its code 4j+m): the packs put dword e of 128-bit lane i of X_a
// at byte 16i+4a+e, so X_a takes there channel 32(i/2) + 16(a%2) + 4e + 2(i%2) + a/2,
// from P_(a%2) and P_(2+a%2) (group k in the low 256 bits, k+1 in the high ones) by
// the first index (a < 2) or the second; then the VPERMPS index that spreads lanes 0
// and 8 over their halves and the VPERMT2PS index of the factors (lanes 0 and 8 of
// d and of d·Σq̂).
DATA cq8idx<>+0(SB)/8, $0x0000000400000000
DATA cq8idx<>+8(SB)/8, $0x0000000c00000008
DATA cq8idx<>+16(SB)/8, $0x0000000600000002
DATA cq8idx<>+24(SB)/8, $0x0000000e0000000a
DATA cq8idx<>+32(SB)/8, $0x0000001400000010
DATA cq8idx<>+40(SB)/8, $0x0000001c00000018
DATA cq8idx<>+48(SB)/8, $0x0000001600000012
DATA cq8idx<>+56(SB)/8, $0x0000001e0000001a
DATA cq8idx<>+64(SB)/8, $0x0000000500000001
DATA cq8idx<>+72(SB)/8, $0x0000000d00000009
DATA cq8idx<>+80(SB)/8, $0x0000000700000003
DATA cq8idx<>+88(SB)/8, $0x0000000f0000000b
DATA cq8idx<>+96(SB)/8, $0x0000001500000011
DATA cq8idx<>+104(SB)/8, $0x0000001d00000019
DATA cq8idx<>+112(SB)/8, $0x0000001700000013
DATA cq8idx<>+120(SB)/8, $0x0000001f0000001b
DATA cq8idx<>+128(SB)/8, $0x0000000000000000
DATA cq8idx<>+136(SB)/8, $0x0000000000000000
DATA cq8idx<>+144(SB)/8, $0x0000000000000000
DATA cq8idx<>+152(SB)/8, $0x0000000000000000
DATA cq8idx<>+160(SB)/8, $0x0000000800000008
DATA cq8idx<>+168(SB)/8, $0x0000000800000008
DATA cq8idx<>+176(SB)/8, $0x0000000800000008
DATA cq8idx<>+184(SB)/8, $0x0000000800000008
DATA cq8idx<>+192(SB)/8, $0x0000001000000000
DATA cq8idx<>+200(SB)/8, $0x0000001800000008
GLOBL cq8idx<>(SB), RODATA|NOPTR, $208

// cq8c: 127, 2^-120 (below it a group is taken as zero) and the bits of the largest
// finite magnitude.
DATA cq8c<>+0(SB)/4, $127.0
DATA cq8c<>+4(SB)/4, $0x03800000
DATA cq8c<>+8(SB)/4, $0x7f7fffff
GLOBL cq8c<>(SB), RODATA|NOPTR, $12

// CQ8PRE sets P to the 16 channels at off of the query (SI) times their scales (the
// block at DX) and adds q·zero to the lanes of Y15, as CQHALF does (in its operand
// order). Clobbers Z0..Z3, Y12.
#define CQ8PRE(off, P) \
	CQZWIDEN(off)                \
	VMOVUPS     off(SI), Z3      \
	VMOVUPS     off+32(SI), Y12  \
	VMULPS      Z2, Z3, P        \
	VFMADD231PS Y0, Y3, Y15      \
	VFMADD231PS Y1, Y12, Y15

// CQ8QUANT quantizes the pre-scaled channels of two groups, P0..P3 in Z4..Z7, as
// quantQueryI8 quantizes each group: their codes to Z0 in the kernels' order (group
// k's 32 bytes, then k+1's), their factors to X12 (d_k, d_k·Σq̂, d_k+1, d_k+1·Σq̂).
// X0..X3 (Z8..Z11, cq8idx) hold group k in their low halves and k+1 in their high
// ones, as do d (Z12) and inv (Z13) once each half holds its group's in every lane.
// Where every value is finite, Σ q·0 is +0 and the largest magnitude m that of any
// order: the magnitudes' bits are reduced as unsigned integers, d = m/127 and inv =
// 127/m, both 0 below 2^-120. A pair with a NaN or an infinity goes through CQ8EXACT
// (label exact) for d and inv instead, back at label done. Then the codes round(q·inv)
// (to nearest even, saturated by the packs as quantQueryI8's) and their int32 sums
// (the codes' sums where no code saturates, that is where d is not NaN). Clobbers
// Z1..Z3, Z8..Z14, Z30, Z31, K1, K2.
#define CQ8QUANT(exact, done) \
	VMOVAPS     Z4, Z8               \
	VPERMT2PS   Z6, Z17, Z8          \
	VMOVAPS     Z5, Z9               \
	VPERMT2PS   Z7, Z17, Z9          \
	VMOVAPS     Z4, Z10              \
	VPERMT2PS   Z6, Z18, Z10         \
	VMOVAPS     Z5, Z11              \
	VPERMT2PS   Z7, Z18, Z11         \
	VPANDD      Z23, Z8, Z0          \
	VPANDD      Z23, Z9, Z1          \
	VPANDD      Z23, Z10, Z2         \
	VPANDD      Z23, Z11, Z3         \
	VPMAXUD     Z1, Z0, Z0           \
	VPMAXUD     Z3, Z2, Z2           \
	VPMAXUD     Z2, Z0, Z12          \
	VPSHUFD     $0x4e, Z12, Z13      \
	VPMAXUD     Z13, Z12, Z12        \
	VPSHUFD     $0xb1, Z12, Z13      \
	VPMAXUD     Z13, Z12, Z12        \
	VSHUFI32X4  $0xb1, Z12, Z12, Z13 \
	VPMAXUD     Z13, Z12, Z12        \
	VPCMPUD     $6, Z24, Z12, K2     \
	KORTESTW    K2, K2               \
	JNZ         exact                \
	VCMPPS      $0x1d, Z20, Z12, K1  \
	VDIVPS      Z12, Z21, Z13        \
	VDIVPS      Z21, Z12, Z12        \
	VMOVAPS.Z   Z13, K1, Z13         \
	VMOVAPS.Z   Z12, K1, Z12         \
done:                                \
	VMULPS      Z8, Z13, Z8          \
	VMULPS      Z9, Z13, Z9          \
	VMULPS      Z10, Z13, Z10        \
	VMULPS      Z11, Z13, Z11        \
	VCVTPS2DQ   Z8, Z8               \
	VCVTPS2DQ   Z9, Z9               \
	VCVTPS2DQ   Z10, Z10             \
	VCVTPS2DQ   Z11, Z11             \
	VPACKSSDW   Z9, Z8, Z0           \
	VPACKSSDW   Z11, Z10, Z1         \
	VPACKSSWB   Z1, Z0, Z0           \
	VPADDD      Z9, Z8, Z8           \
	VPADDD      Z11, Z10, Z10        \
	VPADDD      Z10, Z8, Z8          \
	VPSHUFD     $0x4e, Z8, Z9        \
	VPADDD      Z9, Z8, Z8           \
	VPSHUFD     $0xb1, Z8, Z9        \
	VPADDD      Z9, Z8, Z8           \
	VSHUFI32X4  $0xb1, Z8, Z8, Z9    \
	VPADDD      Z9, Z8, Z8           \
	VCVTDQ2PS   Z8, Z8               \
	VMULPS      Z12, Z8, Z8          \
	VPERMT2PS   Z8, Z29, Z12

// CQ8EXACT sets d (Z12) and inv (Z13) for CQ8QUANT where a pair has a NaN or an
// infinity: which NaN a group's d keeps, and whether its largest magnitude is NaN
// (then its codes are those of inv = 0), depend on the order of quantQueryI8's
// steps. Each half of Z0..Z3 takes quantQueryI8's four vectors of its group, reduced
// in its order, the largest magnitude to Z30 and Σ q·0 to Z14 (±0, or NaN where a
// value is NaN or infinite), each half's low lane theirs; then d = m/127 + Σ q·0 and
// inv = 127/m, both 0 (d then Σ q·0) below 2^-120 or for a NaN m, spread over their
// halves. Ends with a jump to label done.
#define CQ8EXACT(done) \
	VSHUFF64X2  $0x44, Z6, Z4, Z0    \
	VSHUFF64X2  $0xee, Z6, Z4, Z1    \
	VSHUFF64X2  $0x44, Z7, Z5, Z2    \
	VSHUFF64X2  $0xee, Z7, Z5, Z3    \
	VPXORD      Z14, Z14, Z14        \
	VFMADD231PS Z0, Z22, Z14         \
	VFMADD231PS Z1, Z22, Z14         \
	VFMADD231PS Z2, Z22, Z14         \
	VFMADD231PS Z3, Z22, Z14         \
	VPANDD      Z23, Z0, Z0          \
	VPANDD      Z23, Z1, Z1          \
	VPANDD      Z23, Z2, Z2          \
	VPANDD      Z23, Z3, Z3          \
	VMAXPS      Z1, Z0, Z30          \
	VMAXPS      Z2, Z30, Z30         \
	VMAXPS      Z3, Z30, Z30         \
	VSHUFF32X4  $0xb1, Z30, Z30, Z31 \
	VMAXPS      Z31, Z30, Z30        \
	VPERMILPS   $0x4e, Z30, Z31      \
	VMAXPS      Z31, Z30, Z30        \
	VPERMILPS   $0xb1, Z30, Z31      \
	VMAXPS      Z31, Z30, Z30        \
	VSHUFF32X4  $0xb1, Z14, Z14, Z31 \
	VADDPS      Z31, Z14, Z14        \
	VPERMILPS   $0x4e, Z14, Z31      \
	VADDPS      Z31, Z14, Z14        \
	VPERMILPS   $0xb1, Z14, Z31      \
	VADDPS      Z31, Z14, Z14        \
	VCMPPS      $0x1d, Z20, Z30, K1  \
	VDIVPS.Z    Z21, Z30, K1, Z12    \
	VDIVPS.Z    Z30, Z21, K1, Z13    \
	VADDPS      Z14, Z12, Z12        \
	VPERMPS     Z12, Z16, Z12        \
	VPERMPS     Z13, Z16, Z13        \
	JMP         done

// func chanQueryI8Z(q8, qf, q, block unsafe.Pointer, d int)
// Pairs of groups through CQ8PRE and CQ8QUANT, an odd last group with zeros beside
// it (neither stored), then b after the factors. CX counts the groups left.
TEXT ·chanQueryI8Z(SB), NOSPLIT, $0-40
	MOVQ         q8+0(FP), DI
	MOVQ         qf+8(FP), R8
	MOVQ         q+16(FP), SI
	MOVQ         block+24(FP), DX
	MOVQ         d+32(FP), CX
	SHRQ         $5, CX
	VMOVDQU32    cqzidx<>(SB), Z26
	VMOVDQU32    cqzidx<>+64(SB), Z27
	VPBROADCASTD cqzabs<>(SB), Z23
	VPXORD       Z22, Z22, Z22
	VBROADCASTSS cq8c<>+0(SB), Z21
	VBROADCASTSS cq8c<>+4(SB), Z20
	VPBROADCASTD cq8c<>+8(SB), Z24
	VMOVDQU32    cq8idx<>(SB), Z17
	VMOVDQU32    cq8idx<>+64(SB), Z18
	VMOVDQU32    cq8idx<>+128(SB), Z16
	VMOVDQU32    cq8idx<>+192(SB), X29
	VXORPS       Y15, Y15, Y15

cq8pair:
	CQ8PRE(0, Z4)
	CQ8PRE(64, Z5)
	CMPQ   CX, $1
	JEQ    cq8one
	CQ8PRE(128, Z6)
	CQ8PRE(192, Z7)
	JMP    cq8quant

cq8one:
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

cq8quant:
	CQ8QUANT(cq8exact, cq8done)
	CMPQ      CX, $1
	JEQ       cq8last
	VMOVDQU Y0, (DI)
	VEXTRACTI64X4 $1, Z0, 32(DI)
	VMOVUPS   X12, (R8)
	ADDQ      $256, SI
	ADDQ      $256, DX
	ADDQ      $64, DI
	ADDQ      $16, R8
	SUBQ      $2, CX
	JNZ       cq8pair
	JMP       cq8b

cq8last:
	VMOVDQU Y0, (DI)
	VMOVQ   X12, (R8)
	ADDQ    $8, R8

cq8b:
	CQZB(Y15, X15)
	VMOVSS X15, (R8)
	VZEROUPPER
	RET

cq8exact:
	CQ8EXACT(cq8done)
