// Shared by int8_i16z_amd64.s and chanquery_i8z_amd64.s: the widening of a KIVI key
// block's scales and zeros, 16 channels at a time, for the ZMM preparation of queries,
// and the sum of a query's zero term; file-local symbols, so each file that includes
// this has its own copy.

// cqzidx: VPERMT2PS indexes of the scales (even lanes) and the zeros (odd lanes) of
// 16 channels widened as (scale, zero) pairs into two vectors.
DATA cqzidx<>+0(SB)/8, $0x0000000200000000
DATA cqzidx<>+8(SB)/8, $0x0000000600000004
DATA cqzidx<>+16(SB)/8, $0x0000000a00000008
DATA cqzidx<>+24(SB)/8, $0x0000000e0000000c
DATA cqzidx<>+32(SB)/8, $0x0000001200000010
DATA cqzidx<>+40(SB)/8, $0x0000001600000014
DATA cqzidx<>+48(SB)/8, $0x0000001a00000018
DATA cqzidx<>+56(SB)/8, $0x0000001e0000001c
DATA cqzidx<>+64(SB)/8, $0x0000000300000001
DATA cqzidx<>+72(SB)/8, $0x0000000700000005
DATA cqzidx<>+80(SB)/8, $0x0000000b00000009
DATA cqzidx<>+88(SB)/8, $0x0000000f0000000d
DATA cqzidx<>+96(SB)/8, $0x0000001300000011
DATA cqzidx<>+104(SB)/8, $0x0000001700000015
DATA cqzidx<>+112(SB)/8, $0x0000001b00000019
DATA cqzidx<>+120(SB)/8, $0x0000001f0000001d
GLOBL cqzidx<>(SB), RODATA|NOPTR, $128

DATA cqzabs<>+0(SB)/4, $0x7fffffff
GLOBL cqzabs<>(SB), RODATA|NOPTR, $4

// CQZWIDEN widens the f16 scales and zeros of the 16 channels at off(DX) ((scale,
// zero) pairs) into Z2 (the scales) and Z0 (the zeros; Y1 those of the last 8), by
// the cqzidx indexes in Z26 and Z27.
#define CQZWIDEN(off) \
	VCVTPH2PS     off(DX), Z0    \
	VCVTPH2PS     off+32(DX), Z1 \
	VMOVAPS       Z0, Z2         \
	VPERMT2PS     Z1, Z26, Z2    \
	VPERMT2PS     Z1, Z27, Z0    \
	VEXTRACTF64X4 $1, Z0, Y1

// CQZB leaves in the low lane of Xb the sum of the lanes of Yb (a query's b), added
// as channelQueryF16C and I16QUANT do. Clobbers X1.
#define CQZB(Yb, Xb) \
	VEXTRACTF128 $1, Yb, X1 \
	VADDPS       X1, Xb, Xb \
	VHADDPS      Xb, Xb, Xb \
	VHADDPS      Xb, Xb, Xb
