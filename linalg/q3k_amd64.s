//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"

// Q3_K and Q2_K products in AVX2 + FMA + F16C assembly (the references are
// dotQ3KScalar and dotQ2KScalar). Both have a scale per 16 values and 2-bit codes in
// two halves of 32 bytes (block j = 4h + k of a super-block: bits 2k, 2k+1 of the
// half's bytes). Per 32-value block the integer dot is VPMADDUBSW with the unsigned
// codes, pairs summed by VPMADDWD (lanes 0-3: the block's first 16 values, 4-7: its
// last 16), converted and scaled per lane by the scales picked by VPERMPS, as Q6_K's.
//
// Q3_K: the code is (2 low bits) − 4 unless the block's bit of hmask is set; the
// kernel multiplies code + 4 = low | hbit << 2 (0..7) and subtracts VPMADDUBSW(4, x).
// Q2_K: value = d·sc·code − dmin·m; the minimums' part multiplies the pair sums of
// the activations (VPMADDUBSW(1, x)) by dmin·m.

// Lane picks of 8 scales for blocks k = 0..3: 2k for lanes 0-3, 2k+1 for lanes 4-7.
DATA k3Pick<>+0(SB)/8, $0x0000000000000000
DATA k3Pick<>+8(SB)/8, $0x0000000000000000
DATA k3Pick<>+16(SB)/8, $0x0000000100000001
DATA k3Pick<>+24(SB)/8, $0x0000000100000001
DATA k3Pick<>+32(SB)/8, $0x0000000200000002
DATA k3Pick<>+40(SB)/8, $0x0000000200000002
DATA k3Pick<>+48(SB)/8, $0x0000000300000003
DATA k3Pick<>+56(SB)/8, $0x0000000300000003
DATA k3Pick<>+64(SB)/8, $0x0000000400000004
DATA k3Pick<>+72(SB)/8, $0x0000000400000004
DATA k3Pick<>+80(SB)/8, $0x0000000500000005
DATA k3Pick<>+88(SB)/8, $0x0000000500000005
DATA k3Pick<>+96(SB)/8, $0x0000000600000006
DATA k3Pick<>+104(SB)/8, $0x0000000600000006
DATA k3Pick<>+112(SB)/8, $0x0000000700000007
DATA k3Pick<>+120(SB)/8, $0x0000000700000007
GLOBL k3Pick<>(SB), RODATA|NOPTR, $128

// Q3KSCALES writes the super-block's 16 scales times d, as float32, to sclo-64(SP)
// (0..7) and schi-32(SP) (8..15): with u0, u1, u2 the scale bytes 0-3, 4-7, 8-11,
// scales 0-3 = u0&0x0f.. | (u2&0x03..)<<4, 4-7 = u1&0x0f.. | (u2>>2&0x03..)<<4,
// 8-11 = u0>>4&0x0f.. | (u2>>4&0x03..)<<4, 12-15 = u1>>4&0x0f.. | (u2>>6&0x03..)<<4,
// each minus 32. AX, BX, DX, R10, R11, Y5..Y7 are scratch; Y11: 32 per dword.
#define Q3KSCALES \
	MOVL         96(SI), AX \
	MOVL         100(SI), BX \
	MOVL         104(SI), DX \
	MOVL         AX, R10 \
	ANDL         $0x0f0f0f0f, R10 \
	MOVL         DX, R11 \
	ANDL         $0x03030303, R11 \
	SHLL         $4, R11 \
	ORL          R11, R10 \
	MOVL         BX, R11 \
	ANDL         $0x0f0f0f0f, R11 \
	SHLQ         $32, R11 \
	ORQ          R11, R10 \
	MOVL         DX, R11 \
	SHRL         $2, R11 \
	ANDL         $0x03030303, R11 \
	SHLQ         $36, R11 \
	ORQ          R11, R10 \
	VPBROADCASTW 108(SI), X7 \
	VCVTPH2PS    X7, Y7 \
	VMOVQ        R10, X5 \
	VPMOVZXBD    X5, Y5 \
	VPSUBD       Y11, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y7, Y5, Y5 \
	VMOVUPS      Y5, sclo-64(SP) \
	SHRL         $4, AX \
	ANDL         $0x0f0f0f0f, AX \
	MOVL         DX, R11 \
	SHRL         $4, R11 \
	ANDL         $0x03030303, R11 \
	SHLL         $4, R11 \
	ORL          R11, AX \
	SHRL         $4, BX \
	ANDL         $0x0f0f0f0f, BX \
	SHRL         $6, DX \
	ANDL         $0x03030303, DX \
	SHLL         $4, DX \
	ORL          DX, BX \
	SHLQ         $32, BX \
	ORQ          BX, AX \
	VMOVQ        AX, X5 \
	VPMOVZXBD    X5, Y5 \
	VPSUBD       Y11, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y7, Y5, Y5 \
	VMOVUPS      Y5, schi-32(SP)

// Q3KCODES(lo2, hb) leaves in Y4 the codes + 4 of block j = 4h + k: its low bits
// from the half's bytes in Y1 shifted right by 2k (lo2: the shift instruction and
// mask), bit j of hmask (Y3) moved to bit 2 (hb: the shift). Y14: bytes 0x03, Y13:
// bytes 0x04; Y6 scratch.
#define Q3KLOW0 VPAND Y14, Y1, Y4
#define Q3KLOW(s) \
	VPSRLW $s, Y1, Y4 \
	VPAND  Y14, Y4, Y4
#define Q3KHIGHL(s) \
	VPSLLW $s, Y3, Y6 \
	VPAND  Y13, Y6, Y6 \
	VPOR   Y6, Y4, Y4
#define Q3KHIGH2 \
	VPAND  Y13, Y3, Y6 \
	VPOR   Y6, Y4, Y4
#define Q3KHIGHR(s) \
	VPSRLW $s, Y3, Y6 \
	VPAND  Y13, Y6, Y6 \
	VPOR   Y6, Y4, Y4

// Q3KBLK(xoff, pickoff, xdoff, scoff) adds to Y0 the dot of the block whose codes + 4
// are in Y4 with the activations at xoff(DI) and xdoff(R8), its scales picked from the
// 8 at scoff(SP). Y12: bytes 4, Y15: int16 ones; Y5..Y9 scratch.
#define Q3KBLK(xoff, pickoff, xdoff, scoff) \
	VMOVDQU      k3Pick<>+pickoff(SB), Y9 \
	VPERMPS      scoff(SP), Y9, Y9 \
	VPMADDUBSW   xoff(DI), Y4, Y5 \
	VPMADDUBSW   xoff(DI), Y12, Y6 \
	VPSUBW       Y6, Y5, Y5 \
	VPMADDWD     Y15, Y5, Y5 \
	VCVTDQ2PS    Y5, Y5 \
	VMULPS       Y9, Y5, Y5 \
	VBROADCASTSS xdoff(R8), Y7 \
	VFMADD231PS  Y7, Y5, Y0

// func q3kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the Q3_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·q3kDotRows(SB), NOSPLIT, $64-56
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	ONES16
	BYTES32(0x03, X14, Y14)
	BYTES32(0x04, X13, Y13)
	BYTES32(0x04, X12, Y12)
	DWORDS8(32, X11, Y11)

q3row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

q3sb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	Q3KSCALES
	VMOVDQU    (SI), Y3
	VMOVDQU    32(SI), Y1
	Q3KLOW0
	Q3KHIGHL(2)
	Q3KBLK(0, 0, 0, sclo-64)
	Q3KLOW(2)
	Q3KHIGHL(1)
	Q3KBLK(32, 32, 4, sclo-64)
	Q3KLOW(4)
	Q3KHIGH2
	Q3KBLK(64, 64, 8, sclo-64)
	Q3KLOW(6)
	Q3KHIGHR(1)
	Q3KBLK(96, 96, 12, sclo-64)
	VMOVDQU    64(SI), Y1
	Q3KLOW0
	Q3KHIGHR(2)
	Q3KBLK(128, 0, 16, schi-32)
	Q3KLOW(2)
	Q3KHIGHR(3)
	Q3KBLK(160, 32, 20, schi-32)
	Q3KLOW(4)
	Q3KHIGHR(4)
	Q3KBLK(192, 64, 24, schi-32)
	Q3KLOW(6)
	Q3KHIGHR(5)
	Q3KBLK(224, 96, 28, schi-32)
	ADDQ       $110, SI
	ADDQ       $256, DI
	ADDQ       $32, R8
	DECQ       CX
	JNZ        q3sb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    q3row
	VZEROUPPER
	RET

// Dword picks putting a super-block's 8 scales of blocks' halves in fold order:
// lanes 0-3 the first halves of blocks 0..3 (scales 0, 2, 4, 6), lanes 4-7 their
// second halves (1, 3, 5, 7).
DATA k2Fold<>+0(SB)/4, $0
DATA k2Fold<>+4(SB)/4, $2
DATA k2Fold<>+8(SB)/4, $4
DATA k2Fold<>+12(SB)/4, $6
DATA k2Fold<>+16(SB)/4, $1
DATA k2Fold<>+20(SB)/4, $3
DATA k2Fold<>+24(SB)/4, $5
DATA k2Fold<>+28(SB)/4, $7
GLOBL k2Fold<>(SB), RODATA|NOPTR, $32

// Q2KDOT(xoff, dst, sdst) leaves in dst the pair sums (VPMADDWD lanes 0-3: the block's
// first 16 values, 4-7: its last 16) of the codes in Y4 times the activations at
// xoff(DI), and in sdst those of the activations alone. Y12: bytes 1, Y15: int16 ones.
#define Q2KDOT(xoff, dst, sdst) \
	VMOVDQU    xoff(DI), Y3 \
	VPMADDUBSW Y3, Y4, dst \
	VPMADDWD   Y15, dst, dst \
	VPMADDUBSW Y3, Y12, sdst \
	VPMADDWD   Y15, sdst, sdst

// Q2KHALF(qoff, xoff, dsum, xsum) folds the four blocks of the half whose codes are at
// qoff(SI) (activations from xoff(DI)) into dsum (code dots) and xsum (activation
// sums) as float32 lanes [blocks 0..3, first halves | blocks 0..3, second halves].
// Y1, Y4..Y10 are scratch; Y14: bytes 3.
#define Q2KHALF(qoff, x0, x1, x2, x3, dsum, xsum) \
	VMOVDQU   qoff(SI), Y1 \
	VPAND     Y14, Y1, Y4 \
	Q2KDOT(x0, Y5, Y6) \
	VPSRLW    $2, Y1, Y4 \
	VPAND     Y14, Y4, Y4 \
	Q2KDOT(x1, Y7, Y8) \
	VPHADDD   Y7, Y5, Y5 \
	VPHADDD   Y8, Y6, Y6 \
	VPSRLW    $4, Y1, Y4 \
	VPAND     Y14, Y4, Y4 \
	Q2KDOT(x2, Y7, Y8) \
	VPSRLW    $6, Y1, Y4 \
	VPAND     Y14, Y4, Y4 \
	Q2KDOT(x3, Y9, Y10) \
	VPHADDD   Y9, Y7, Y7 \
	VPHADDD   Y10, Y8, Y8 \
	VPHADDD   Y7, Y5, dsum \
	VPHADDD   Y8, Y6, xsum \
	VCVTDQ2PS dsum, dsum \
	VCVTDQ2PS xsum, xsum

// Q2KSCALES(soff, sc, m) leaves in sc and m the scales times d (Y13) and minimums
// times dmin (Y11) of the 8 blocks' halves whose scale bytes are at soff(SI), in fold
// order. Y2: the fold picks; Y3 scratch.
#define Q2KSCALES(soff, sc, m) \
	VPMOVZXBD soff(SI), sc \
	VPERMD    sc, Y2, sc \
	VPSRLD    $4, sc, m \
	VPSLLD    $28, sc, sc \
	VPSRLD    $28, sc, sc \
	VCVTDQ2PS sc, sc \
	VMULPS    Y13, sc, sc \
	VCVTDQ2PS m, m \
	VMULPS    Y11, m, m

// Q2KACC(dsum, xsum, sc, m, xd) adds to Y0 one half's (dsum·sc − xsum·m)·xd, the
// activation scales broadcast from xd to both 128-bit lanes; Y3 scratch.
#define Q2KACC(dsum, xsum, sc, m, xd) \
	VBROADCASTF128 xd, Y3 \
	VMULPS         sc, dsum, dsum \
	VFNMADD231PS   m, xsum, dsum \
	VFMADD231PS    Y3, dsum, Y0

// func q2kDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the Q2_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go). Per super-block the eight blocks' dots are
// folded (VPHADDD) into two vectors of their 16-value halves and scaled at once.
TEXT ·q2kDotRows(SB), NOSPLIT, $0-56
	MOVQ    out+0(FP), R15
	MOVQ    w+8(FP), R13
	MOVQ    rows+24(FP), R14
	ONES16
	BYTES32(0x03, X14, Y14)
	BYTES32(0x01, X12, Y12)
	VMOVDQU k2Fold<>(SB), Y2

q2row:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

q2sb:
	PREFETCHT0   4096(SI)
	PREFETCHT0   4160(SI)
	VPBROADCASTW 80(SI), X13
	VCVTPH2PS    X13, Y13
	VPBROADCASTW 82(SI), X11
	VCVTPH2PS    X11, Y11
	Q2KHALF(16, 0, 32, 64, 96, Y5, Y6)
	Q2KSCALES(0, Y7, Y8)
	Q2KACC(Y5, Y6, Y7, Y8, (R8))
	Q2KHALF(48, 128, 160, 192, 224, Y5, Y6)
	Q2KSCALES(8, Y7, Y8)
	Q2KACC(Y5, Y6, Y7, Y8, 16(R8))
	ADDQ         $84, SI
	ADDQ         $256, DI
	ADDQ         $32, R8
	DECQ         CX
	JNZ          q2sb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    q2row
	VZEROUPPER
	RET

// Q3_K and Q2_K products with AVX-512 VNNI, VBMI and GFNI, without any
// horizontal sums. Lane 2b+h of a 16-dword vector stands for half h (16 values) of
// block b; per super-block, the activations are laid out once per call (kPrepZ) as four
// vectors, vector q holding quad q (values 4q..4q+3) of every half in that half's lane.
// A row's codes are put in the same places by one VPERMD per quad (dword 4h+q of the
// half of the code bytes that holds block b) and taken out of their bits by one
// VGF2P8AFFINEQB (a bit matrix per block: Q2_K's 2-bit codes; Q3_K's, with its hmask bit,
// merged in by VPTERNLOGD beforehand, as bit 2: code + 4); four VPDPBUSD then leave each
// half's exact dot in its lane. Then over the 16 lanes in float32: Q2_K
// (d·sc·dot − dmin·m·sum)·xd, Q3_K d·sc·(dot − 4·sum)·xd, the integer parts exact.

// Per-qword VGF2P8AFFINEQB bit matrices for the 8 blocks' lanes (output bit i: the
// parity of the byte and matrix byte 7−i). kBitsZ: block b's codes are bits 2k, 2k+1
// (k = b mod 4) of its bytes, moved to bits 0, 1.
DATA kBitsZ<>+0(SB)/8, $0x102000000000000
DATA kBitsZ<>+8(SB)/8, $0x408000000000000
DATA kBitsZ<>+16(SB)/8, $0x1020000000000000
DATA kBitsZ<>+24(SB)/8, $0x4080000000000000
DATA kBitsZ<>+32(SB)/8, $0x102000000000000
DATA kBitsZ<>+40(SB)/8, $0x408000000000000
DATA kBitsZ<>+48(SB)/8, $0x1020000000000000
DATA kBitsZ<>+56(SB)/8, $0x4080000000000000
GLOBL kBitsZ<>(SB), RODATA|NOPTR, $64

// Q3_K: kHighPerm moves hmask bit b to bit π(b) = 2, 4, 6, 0, 3, 5, 7, 1 (b = 0..7), never
// one of block b's two code bits 2(b mod 4), 2(b mod 4)+1, which kQ3Keep selects per
// block; kQ3Bits moves those to bits 0, 1 and bit π(b) to bit 2.
DATA kHighPerm<>+0(SB)/8, $0x880011002200440
GLOBL kHighPerm<>(SB), RODATA|NOPTR, $8
DATA kQ3Keep<>+0(SB)/8, $0x303030303030303
DATA kQ3Keep<>+8(SB)/8, $0xc0c0c0c0c0c0c0c
DATA kQ3Keep<>+16(SB)/8, $0x3030303030303030
DATA kQ3Keep<>+24(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kQ3Keep<>+32(SB)/8, $0x303030303030303
DATA kQ3Keep<>+40(SB)/8, $0xc0c0c0c0c0c0c0c
DATA kQ3Keep<>+48(SB)/8, $0x3030303030303030
DATA kQ3Keep<>+56(SB)/8, $0xc0c0c0c0c0c0c0c0
GLOBL kQ3Keep<>(SB), RODATA|NOPTR, $64
DATA kQ3Bits<>+0(SB)/8, $0x102040000000000
DATA kQ3Bits<>+8(SB)/8, $0x408100000000000
DATA kQ3Bits<>+16(SB)/8, $0x1020400000000000
DATA kQ3Bits<>+24(SB)/8, $0x4080010000000000
DATA kQ3Bits<>+32(SB)/8, $0x102080000000000
DATA kQ3Bits<>+40(SB)/8, $0x408200000000000
DATA kQ3Bits<>+48(SB)/8, $0x1020800000000000
DATA kQ3Bits<>+56(SB)/8, $0x4080020000000000
GLOBL kQ3Bits<>(SB), RODATA|NOPTR, $64

// kCodeIdxZ+64q: VPERMD picks putting in lane 2b+h quad q of half h of block b: dword
// 8·(b/4) + 4h + q of the super-block's 64 code bytes (block b's codes in half b/4).
DATA kCodeIdxZ<>+0(SB)/4, $0x0
DATA kCodeIdxZ<>+4(SB)/4, $0x4
DATA kCodeIdxZ<>+8(SB)/4, $0x0
DATA kCodeIdxZ<>+12(SB)/4, $0x4
DATA kCodeIdxZ<>+16(SB)/4, $0x0
DATA kCodeIdxZ<>+20(SB)/4, $0x4
DATA kCodeIdxZ<>+24(SB)/4, $0x0
DATA kCodeIdxZ<>+28(SB)/4, $0x4
DATA kCodeIdxZ<>+32(SB)/4, $0x8
DATA kCodeIdxZ<>+36(SB)/4, $0xc
DATA kCodeIdxZ<>+40(SB)/4, $0x8
DATA kCodeIdxZ<>+44(SB)/4, $0xc
DATA kCodeIdxZ<>+48(SB)/4, $0x8
DATA kCodeIdxZ<>+52(SB)/4, $0xc
DATA kCodeIdxZ<>+56(SB)/4, $0x8
DATA kCodeIdxZ<>+60(SB)/4, $0xc
DATA kCodeIdxZ<>+64(SB)/4, $0x1
DATA kCodeIdxZ<>+68(SB)/4, $0x5
DATA kCodeIdxZ<>+72(SB)/4, $0x1
DATA kCodeIdxZ<>+76(SB)/4, $0x5
DATA kCodeIdxZ<>+80(SB)/4, $0x1
DATA kCodeIdxZ<>+84(SB)/4, $0x5
DATA kCodeIdxZ<>+88(SB)/4, $0x1
DATA kCodeIdxZ<>+92(SB)/4, $0x5
DATA kCodeIdxZ<>+96(SB)/4, $0x9
DATA kCodeIdxZ<>+100(SB)/4, $0xd
DATA kCodeIdxZ<>+104(SB)/4, $0x9
DATA kCodeIdxZ<>+108(SB)/4, $0xd
DATA kCodeIdxZ<>+112(SB)/4, $0x9
DATA kCodeIdxZ<>+116(SB)/4, $0xd
DATA kCodeIdxZ<>+120(SB)/4, $0x9
DATA kCodeIdxZ<>+124(SB)/4, $0xd
DATA kCodeIdxZ<>+128(SB)/4, $0x2
DATA kCodeIdxZ<>+132(SB)/4, $0x6
DATA kCodeIdxZ<>+136(SB)/4, $0x2
DATA kCodeIdxZ<>+140(SB)/4, $0x6
DATA kCodeIdxZ<>+144(SB)/4, $0x2
DATA kCodeIdxZ<>+148(SB)/4, $0x6
DATA kCodeIdxZ<>+152(SB)/4, $0x2
DATA kCodeIdxZ<>+156(SB)/4, $0x6
DATA kCodeIdxZ<>+160(SB)/4, $0xa
DATA kCodeIdxZ<>+164(SB)/4, $0xe
DATA kCodeIdxZ<>+168(SB)/4, $0xa
DATA kCodeIdxZ<>+172(SB)/4, $0xe
DATA kCodeIdxZ<>+176(SB)/4, $0xa
DATA kCodeIdxZ<>+180(SB)/4, $0xe
DATA kCodeIdxZ<>+184(SB)/4, $0xa
DATA kCodeIdxZ<>+188(SB)/4, $0xe
DATA kCodeIdxZ<>+192(SB)/4, $0x3
DATA kCodeIdxZ<>+196(SB)/4, $0x7
DATA kCodeIdxZ<>+200(SB)/4, $0x3
DATA kCodeIdxZ<>+204(SB)/4, $0x7
DATA kCodeIdxZ<>+208(SB)/4, $0x3
DATA kCodeIdxZ<>+212(SB)/4, $0x7
DATA kCodeIdxZ<>+216(SB)/4, $0x3
DATA kCodeIdxZ<>+220(SB)/4, $0x7
DATA kCodeIdxZ<>+224(SB)/4, $0xb
DATA kCodeIdxZ<>+228(SB)/4, $0xf
DATA kCodeIdxZ<>+232(SB)/4, $0xb
DATA kCodeIdxZ<>+236(SB)/4, $0xf
DATA kCodeIdxZ<>+240(SB)/4, $0xb
DATA kCodeIdxZ<>+244(SB)/4, $0xf
DATA kCodeIdxZ<>+248(SB)/4, $0xb
DATA kCodeIdxZ<>+252(SB)/4, $0xf
GLOBL kCodeIdxZ<>(SB), RODATA|NOPTR, $256

// kHighIdxZ+64q: the same for the 32 hmask bytes: dword 4h + q.
DATA kHighIdxZ<>+0(SB)/4, $0x0
DATA kHighIdxZ<>+4(SB)/4, $0x4
DATA kHighIdxZ<>+8(SB)/4, $0x0
DATA kHighIdxZ<>+12(SB)/4, $0x4
DATA kHighIdxZ<>+16(SB)/4, $0x0
DATA kHighIdxZ<>+20(SB)/4, $0x4
DATA kHighIdxZ<>+24(SB)/4, $0x0
DATA kHighIdxZ<>+28(SB)/4, $0x4
DATA kHighIdxZ<>+32(SB)/4, $0x0
DATA kHighIdxZ<>+36(SB)/4, $0x4
DATA kHighIdxZ<>+40(SB)/4, $0x0
DATA kHighIdxZ<>+44(SB)/4, $0x4
DATA kHighIdxZ<>+48(SB)/4, $0x0
DATA kHighIdxZ<>+52(SB)/4, $0x4
DATA kHighIdxZ<>+56(SB)/4, $0x0
DATA kHighIdxZ<>+60(SB)/4, $0x4
DATA kHighIdxZ<>+64(SB)/4, $0x1
DATA kHighIdxZ<>+68(SB)/4, $0x5
DATA kHighIdxZ<>+72(SB)/4, $0x1
DATA kHighIdxZ<>+76(SB)/4, $0x5
DATA kHighIdxZ<>+80(SB)/4, $0x1
DATA kHighIdxZ<>+84(SB)/4, $0x5
DATA kHighIdxZ<>+88(SB)/4, $0x1
DATA kHighIdxZ<>+92(SB)/4, $0x5
DATA kHighIdxZ<>+96(SB)/4, $0x1
DATA kHighIdxZ<>+100(SB)/4, $0x5
DATA kHighIdxZ<>+104(SB)/4, $0x1
DATA kHighIdxZ<>+108(SB)/4, $0x5
DATA kHighIdxZ<>+112(SB)/4, $0x1
DATA kHighIdxZ<>+116(SB)/4, $0x5
DATA kHighIdxZ<>+120(SB)/4, $0x1
DATA kHighIdxZ<>+124(SB)/4, $0x5
DATA kHighIdxZ<>+128(SB)/4, $0x2
DATA kHighIdxZ<>+132(SB)/4, $0x6
DATA kHighIdxZ<>+136(SB)/4, $0x2
DATA kHighIdxZ<>+140(SB)/4, $0x6
DATA kHighIdxZ<>+144(SB)/4, $0x2
DATA kHighIdxZ<>+148(SB)/4, $0x6
DATA kHighIdxZ<>+152(SB)/4, $0x2
DATA kHighIdxZ<>+156(SB)/4, $0x6
DATA kHighIdxZ<>+160(SB)/4, $0x2
DATA kHighIdxZ<>+164(SB)/4, $0x6
DATA kHighIdxZ<>+168(SB)/4, $0x2
DATA kHighIdxZ<>+172(SB)/4, $0x6
DATA kHighIdxZ<>+176(SB)/4, $0x2
DATA kHighIdxZ<>+180(SB)/4, $0x6
DATA kHighIdxZ<>+184(SB)/4, $0x2
DATA kHighIdxZ<>+188(SB)/4, $0x6
DATA kHighIdxZ<>+192(SB)/4, $0x3
DATA kHighIdxZ<>+196(SB)/4, $0x7
DATA kHighIdxZ<>+200(SB)/4, $0x3
DATA kHighIdxZ<>+204(SB)/4, $0x7
DATA kHighIdxZ<>+208(SB)/4, $0x3
DATA kHighIdxZ<>+212(SB)/4, $0x7
DATA kHighIdxZ<>+216(SB)/4, $0x3
DATA kHighIdxZ<>+220(SB)/4, $0x7
DATA kHighIdxZ<>+224(SB)/4, $0x3
DATA kHighIdxZ<>+228(SB)/4, $0x7
DATA kHighIdxZ<>+232(SB)/4, $0x3
DATA kHighIdxZ<>+236(SB)/4, $0x7
DATA kHighIdxZ<>+240(SB)/4, $0x3
DATA kHighIdxZ<>+244(SB)/4, $0x7
DATA kHighIdxZ<>+248(SB)/4, $0x3
DATA kHighIdxZ<>+252(SB)/4, $0x7
GLOBL kHighIdxZ<>(SB), RODATA|NOPTR, $256

// kActIdxZ+64q: VPERMT2D picks of quad q of halves 0-7 of 64 activation dwords:
// dword 4L + q for lane L (lanes 8-15 repeat them).
DATA kActIdxZ<>+0(SB)/4, $0x0
DATA kActIdxZ<>+4(SB)/4, $0x4
DATA kActIdxZ<>+8(SB)/4, $0x8
DATA kActIdxZ<>+12(SB)/4, $0xc
DATA kActIdxZ<>+16(SB)/4, $0x10
DATA kActIdxZ<>+20(SB)/4, $0x14
DATA kActIdxZ<>+24(SB)/4, $0x18
DATA kActIdxZ<>+28(SB)/4, $0x1c
DATA kActIdxZ<>+32(SB)/4, $0x0
DATA kActIdxZ<>+36(SB)/4, $0x4
DATA kActIdxZ<>+40(SB)/4, $0x8
DATA kActIdxZ<>+44(SB)/4, $0xc
DATA kActIdxZ<>+48(SB)/4, $0x10
DATA kActIdxZ<>+52(SB)/4, $0x14
DATA kActIdxZ<>+56(SB)/4, $0x18
DATA kActIdxZ<>+60(SB)/4, $0x1c
DATA kActIdxZ<>+64(SB)/4, $0x1
DATA kActIdxZ<>+68(SB)/4, $0x5
DATA kActIdxZ<>+72(SB)/4, $0x9
DATA kActIdxZ<>+76(SB)/4, $0xd
DATA kActIdxZ<>+80(SB)/4, $0x11
DATA kActIdxZ<>+84(SB)/4, $0x15
DATA kActIdxZ<>+88(SB)/4, $0x19
DATA kActIdxZ<>+92(SB)/4, $0x1d
DATA kActIdxZ<>+96(SB)/4, $0x1
DATA kActIdxZ<>+100(SB)/4, $0x5
DATA kActIdxZ<>+104(SB)/4, $0x9
DATA kActIdxZ<>+108(SB)/4, $0xd
DATA kActIdxZ<>+112(SB)/4, $0x11
DATA kActIdxZ<>+116(SB)/4, $0x15
DATA kActIdxZ<>+120(SB)/4, $0x19
DATA kActIdxZ<>+124(SB)/4, $0x1d
DATA kActIdxZ<>+128(SB)/4, $0x2
DATA kActIdxZ<>+132(SB)/4, $0x6
DATA kActIdxZ<>+136(SB)/4, $0xa
DATA kActIdxZ<>+140(SB)/4, $0xe
DATA kActIdxZ<>+144(SB)/4, $0x12
DATA kActIdxZ<>+148(SB)/4, $0x16
DATA kActIdxZ<>+152(SB)/4, $0x1a
DATA kActIdxZ<>+156(SB)/4, $0x1e
DATA kActIdxZ<>+160(SB)/4, $0x2
DATA kActIdxZ<>+164(SB)/4, $0x6
DATA kActIdxZ<>+168(SB)/4, $0xa
DATA kActIdxZ<>+172(SB)/4, $0xe
DATA kActIdxZ<>+176(SB)/4, $0x12
DATA kActIdxZ<>+180(SB)/4, $0x16
DATA kActIdxZ<>+184(SB)/4, $0x1a
DATA kActIdxZ<>+188(SB)/4, $0x1e
DATA kActIdxZ<>+192(SB)/4, $0x3
DATA kActIdxZ<>+196(SB)/4, $0x7
DATA kActIdxZ<>+200(SB)/4, $0xb
DATA kActIdxZ<>+204(SB)/4, $0xf
DATA kActIdxZ<>+208(SB)/4, $0x13
DATA kActIdxZ<>+212(SB)/4, $0x17
DATA kActIdxZ<>+216(SB)/4, $0x1b
DATA kActIdxZ<>+220(SB)/4, $0x1f
DATA kActIdxZ<>+224(SB)/4, $0x3
DATA kActIdxZ<>+228(SB)/4, $0x7
DATA kActIdxZ<>+232(SB)/4, $0xb
DATA kActIdxZ<>+236(SB)/4, $0xf
DATA kActIdxZ<>+240(SB)/4, $0x13
DATA kActIdxZ<>+244(SB)/4, $0x17
DATA kActIdxZ<>+248(SB)/4, $0x1b
DATA kActIdxZ<>+252(SB)/4, $0x1f
GLOBL kActIdxZ<>(SB), RODATA|NOPTR, $256

// kHalfIdxZ: lane L takes block scale L/2.
DATA kHalfIdxZ<>+0(SB)/4, $0x0
DATA kHalfIdxZ<>+4(SB)/4, $0x0
DATA kHalfIdxZ<>+8(SB)/4, $0x1
DATA kHalfIdxZ<>+12(SB)/4, $0x1
DATA kHalfIdxZ<>+16(SB)/4, $0x2
DATA kHalfIdxZ<>+20(SB)/4, $0x2
DATA kHalfIdxZ<>+24(SB)/4, $0x3
DATA kHalfIdxZ<>+28(SB)/4, $0x3
DATA kHalfIdxZ<>+32(SB)/4, $0x4
DATA kHalfIdxZ<>+36(SB)/4, $0x4
DATA kHalfIdxZ<>+40(SB)/4, $0x5
DATA kHalfIdxZ<>+44(SB)/4, $0x5
DATA kHalfIdxZ<>+48(SB)/4, $0x6
DATA kHalfIdxZ<>+52(SB)/4, $0x6
DATA kHalfIdxZ<>+56(SB)/4, $0x7
DATA kHalfIdxZ<>+60(SB)/4, $0x7
GLOBL kHalfIdxZ<>(SB), RODATA|NOPTR, $64

// The floats 0..15, looked up by VPERMPS (Q2_K's 4-bit scales and minimums).
DATA kFloats16<>+0(SB)/4, $0x0
DATA kFloats16<>+4(SB)/4, $0x3f800000
DATA kFloats16<>+8(SB)/4, $0x40000000
DATA kFloats16<>+12(SB)/4, $0x40400000
DATA kFloats16<>+16(SB)/4, $0x40800000
DATA kFloats16<>+20(SB)/4, $0x40a00000
DATA kFloats16<>+24(SB)/4, $0x40c00000
DATA kFloats16<>+28(SB)/4, $0x40e00000
DATA kFloats16<>+32(SB)/4, $0x41000000
DATA kFloats16<>+36(SB)/4, $0x41100000
DATA kFloats16<>+40(SB)/4, $0x41200000
DATA kFloats16<>+44(SB)/4, $0x41300000
DATA kFloats16<>+48(SB)/4, $0x41400000
DATA kFloats16<>+52(SB)/4, $0x41500000
DATA kFloats16<>+56(SB)/4, $0x41600000
DATA kFloats16<>+60(SB)/4, $0x41700000
GLOBL kFloats16<>(SB), RODATA|NOPTR, $64

// kPrepZ's table of a super-block: the activations laid out by quads (256 bytes), then
// 16 values each: the halves' block scales xd and xd times their code sums as float32,
// and −4 times the code sums as int32 (Q3_K's dots start from them).
#define KPXD 256
#define KPXSUM 320
#define KPNEG4SUM 384
#define KPBYTES 448

// KROWEND stores the sum of Z28's lanes to (R15) and moves to the next row.
#define KROWEND(loop) \
	VEXTRACTF64X4 $1, Z28, Y1 \
	VADDPS        Y1, Y28, Y0 \
	HSUM0 \
	VMOVSS        X0, (R15) \
	ADDQ          $4, R15 \
	ADDQ          rowBytes+16(FP), R13 \
	DECQ          R14 \
	JNZ           loop \
	VZEROUPPER \
	RET

// KPREPQ(q) lays out quad q of the super-block's activations at DI into Z1, stores it
// at 64q(DX) and adds its code sums to Z0 (Z15: bytes 1; Z2 scratch).
#define KPREPQ(q, idx) \
	VMOVDQU64  (DI), Z1 \
	VPERMT2D   64(DI), idx, Z1 \
	VMOVDQU64  128(DI), Z2 \
	VPERMT2D   192(DI), idx, Z2 \
	VSHUFI64X2 $0x44, Z2, Z1, Z1 \
	VMOVDQU64  Z1, (64*q)(DX) \
	VPDPBUSD   Z1, Z15, Z0

// func kPrepZ(tab *float32, xq *int8, xd *float32, units int)
// Writes the table the Q3_K and Q2_K kernels below read, KPBYTES per super-block of
// 256 activations (units of them).
TEXT ·kPrepZ(SB), NOSPLIT, $0-32
	MOVQ         tab+0(FP), DX
	MOVQ         xq+8(FP), DI
	MOVQ         xd+16(FP), R8
	MOVQ         units+24(FP), CX
	MOVL         $0x01010101, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64    kActIdxZ<>+0(SB), Z16
	VMOVDQU64    kActIdxZ<>+64(SB), Z17
	VMOVDQU64    kActIdxZ<>+128(SB), Z18
	VMOVDQU64    kActIdxZ<>+192(SB), Z19
	VMOVDQU64    kHalfIdxZ<>(SB), Z20

kpsb:
	VPXORD    Z0, Z0, Z0
	KPREPQ(0, Z16)
	KPREPQ(1, Z17)
	KPREPQ(2, Z18)
	KPREPQ(3, Z19)
	VPXORD    Z4, Z4, Z4
	VPSLLD    $2, Z0, Z5
	VPSUBD    Z5, Z4, Z4
	VMOVDQU64 Z4, KPNEG4SUM(DX)
	VCVTDQ2PS Z0, Z0
	VMOVUPS   (R8), Y3
	VPERMPS   Z3, Z20, Z3
	VMOVUPS   Z3, KPXD(DX)
	VMULPS    Z3, Z0, Z0
	VMOVUPS   Z0, KPXSUM(DX)
	ADDQ      $KPBYTES, DX
	ADDQ      $256, DI
	ADDQ      $32, R8
	DECQ      CX
	JNZ       kpsb
	VZEROUPPER
	RET

// Q2ZQ(q, idx, acc) adds to acc quad q's dots: codes (Z8: the 64 code bytes) picked by
// idx, bits taken by Z24. Z9 scratch.
#define Q2ZQ(q, idx, acc) \
	VPERMD         Z8, idx, Z9 \
	VGF2P8AFFINEQB $0, Z24, Z9, Z9 \
	VPDPBUSD       (64*q)(R9), Z9, acc

// func q2kDotRowsZ(out *float32, w *byte, rowBytes, rows int, tab *float32, units int)
// out[r] = the dot of the Q2_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go), tab the activations' kPrepZ table.
TEXT ·q2kDotRowsZ(SB), NOSPLIT, $8-48
	MOVQ      out+0(FP), R15
	MOVQ      w+8(FP), R13
	MOVQ      rows+24(FP), R14
	VMOVDQU64 kCodeIdxZ<>+0(SB), Z16
	VMOVDQU64 kCodeIdxZ<>+64(SB), Z17
	VMOVDQU64 kCodeIdxZ<>+128(SB), Z18
	VMOVDQU64 kCodeIdxZ<>+192(SB), Z19
	VMOVDQU64 kBitsZ<>(SB), Z24
	VMOVUPS   kFloats16<>(SB), Z30

q2zrow:
	MOVQ   R13, SI
	MOVQ   tab+32(FP), R9
	MOVQ   units+40(FP), CX
	VPXORD Z28, Z28, Z28
	VPXORD Z27, Z27, Z27

q2zsb:
	PREFETCHT0        4096(SI)
	PREFETCHT0        4160(SI)
	VMOVDQU64         16(SI), Z8
	VPXORD            Z0, Z0, Z0
	VPXORD            Z1, Z1, Z1
	Q2ZQ(0, Z16, Z0)
	Q2ZQ(1, Z17, Z1)
	Q2ZQ(2, Z18, Z0)
	Q2ZQ(3, Z19, Z1)
	VPADDD            Z1, Z0, Z0
	VCVTDQ2PS         Z0, Z0
	// Scales sc (low nibbles) and minimums m (high) of the 16 halves, as floats.
	VPMOVZXBD         (SI), Z1
	VPSRLD            $4, Z1, Z2
	VPERMPS           Z30, Z1, Z1
	VPERMPS           Z30, Z2, Z2
	MOVL              80(SI), AX
	VMOVD             AX, X3
	VCVTPH2PS         X3, X3
	VMOVQ             X3, 0(SP) // d, dmin
	VMULPS            KPXD(R9), Z1, Z1
	VMULPS.BCST       0(SP), Z1, Z1 // d·sc·xd
	VFMADD231PS       Z1, Z0, Z28
	VMULPS            KPXSUM(R9), Z2, Z2 // m·xd·sum
	VFNMADD231PS.BCST 4(SP), Z2, Z27
	ADDQ              $84, SI
	ADDQ              $KPBYTES, R9
	DECQ              CX
	JNZ               q2zsb

	VADDPS Z27, Z28, Z28
	KROWEND(q2zrow)

// Q3_K's scales: kQ3ScaleIdx puts in dword i the scale bytes holding scale i's low
// nibble (byte i mod 8, its high nibble for i ≥ 8) and its high 2 bits (byte 8 + i mod 4,
// bits 2·(i/4)); kQ3ScaleLo and kQ3ScaleHi shift them to bits 0-3 and 4-5.
DATA kQ3ScaleIdx<>+0(SB)/1, $0x0
DATA kQ3ScaleIdx<>+1(SB)/1, $0x8
DATA kQ3ScaleIdx<>+2(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+3(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+4(SB)/1, $0x1
DATA kQ3ScaleIdx<>+5(SB)/1, $0x9
DATA kQ3ScaleIdx<>+6(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+7(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+8(SB)/1, $0x2
DATA kQ3ScaleIdx<>+9(SB)/1, $0xa
DATA kQ3ScaleIdx<>+10(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+11(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+12(SB)/1, $0x3
DATA kQ3ScaleIdx<>+13(SB)/1, $0xb
DATA kQ3ScaleIdx<>+14(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+15(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+16(SB)/1, $0x4
DATA kQ3ScaleIdx<>+17(SB)/1, $0x8
DATA kQ3ScaleIdx<>+18(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+19(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+20(SB)/1, $0x5
DATA kQ3ScaleIdx<>+21(SB)/1, $0x9
DATA kQ3ScaleIdx<>+22(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+23(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+24(SB)/1, $0x6
DATA kQ3ScaleIdx<>+25(SB)/1, $0xa
DATA kQ3ScaleIdx<>+26(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+27(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+28(SB)/1, $0x7
DATA kQ3ScaleIdx<>+29(SB)/1, $0xb
DATA kQ3ScaleIdx<>+30(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+31(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+32(SB)/1, $0x0
DATA kQ3ScaleIdx<>+33(SB)/1, $0x8
DATA kQ3ScaleIdx<>+34(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+35(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+36(SB)/1, $0x1
DATA kQ3ScaleIdx<>+37(SB)/1, $0x9
DATA kQ3ScaleIdx<>+38(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+39(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+40(SB)/1, $0x2
DATA kQ3ScaleIdx<>+41(SB)/1, $0xa
DATA kQ3ScaleIdx<>+42(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+43(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+44(SB)/1, $0x3
DATA kQ3ScaleIdx<>+45(SB)/1, $0xb
DATA kQ3ScaleIdx<>+46(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+47(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+48(SB)/1, $0x4
DATA kQ3ScaleIdx<>+49(SB)/1, $0x8
DATA kQ3ScaleIdx<>+50(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+51(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+52(SB)/1, $0x5
DATA kQ3ScaleIdx<>+53(SB)/1, $0x9
DATA kQ3ScaleIdx<>+54(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+55(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+56(SB)/1, $0x6
DATA kQ3ScaleIdx<>+57(SB)/1, $0xa
DATA kQ3ScaleIdx<>+58(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+59(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+60(SB)/1, $0x7
DATA kQ3ScaleIdx<>+61(SB)/1, $0xb
DATA kQ3ScaleIdx<>+62(SB)/1, $0x3f
DATA kQ3ScaleIdx<>+63(SB)/1, $0x3f
GLOBL kQ3ScaleIdx<>(SB), RODATA|NOPTR, $64
DATA kQ3ScaleLo<>+0(SB)/4, $0x0
DATA kQ3ScaleLo<>+4(SB)/4, $0x0
DATA kQ3ScaleLo<>+8(SB)/4, $0x0
DATA kQ3ScaleLo<>+12(SB)/4, $0x0
DATA kQ3ScaleLo<>+16(SB)/4, $0x0
DATA kQ3ScaleLo<>+20(SB)/4, $0x0
DATA kQ3ScaleLo<>+24(SB)/4, $0x0
DATA kQ3ScaleLo<>+28(SB)/4, $0x0
DATA kQ3ScaleLo<>+32(SB)/4, $0x4
DATA kQ3ScaleLo<>+36(SB)/4, $0x4
DATA kQ3ScaleLo<>+40(SB)/4, $0x4
DATA kQ3ScaleLo<>+44(SB)/4, $0x4
DATA kQ3ScaleLo<>+48(SB)/4, $0x4
DATA kQ3ScaleLo<>+52(SB)/4, $0x4
DATA kQ3ScaleLo<>+56(SB)/4, $0x4
DATA kQ3ScaleLo<>+60(SB)/4, $0x4
GLOBL kQ3ScaleLo<>(SB), RODATA|NOPTR, $64
DATA kQ3ScaleHi<>+0(SB)/4, $0x4
DATA kQ3ScaleHi<>+4(SB)/4, $0x4
DATA kQ3ScaleHi<>+8(SB)/4, $0x4
DATA kQ3ScaleHi<>+12(SB)/4, $0x4
DATA kQ3ScaleHi<>+16(SB)/4, $0x6
DATA kQ3ScaleHi<>+20(SB)/4, $0x6
DATA kQ3ScaleHi<>+24(SB)/4, $0x6
DATA kQ3ScaleHi<>+28(SB)/4, $0x6
DATA kQ3ScaleHi<>+32(SB)/4, $0x8
DATA kQ3ScaleHi<>+36(SB)/4, $0x8
DATA kQ3ScaleHi<>+40(SB)/4, $0x8
DATA kQ3ScaleHi<>+44(SB)/4, $0x8
DATA kQ3ScaleHi<>+48(SB)/4, $0xa
DATA kQ3ScaleHi<>+52(SB)/4, $0xa
DATA kQ3ScaleHi<>+56(SB)/4, $0xa
DATA kQ3ScaleHi<>+60(SB)/4, $0xa
GLOBL kQ3ScaleHi<>(SB), RODATA|NOPTR, $64

// Q3ZQ(q, idx, hidx, acc) adds to acc quad q's dots with the codes + 4: the code bytes
// (Z8) picked by idx and the hmask bytes (Z10, each block's bit b moved to bit π(b) by
// kHighPerm, clear of the block's code bits) picked by hidx are merged by VPTERNLOGD
// (the code bits from the first, kQ3Keep), then one VGF2P8AFFINEQB (kQ3Bits) takes the
// two code bits to bits 0, 1 and the hmask bit to bit 2. Z11 scratch.
#define Q3ZQ(q, idx, hidx, acc) \
	VPERMD         Z8, idx, Z9 \
	VPERMD         Z10, hidx, Z11 \
	VPTERNLOGD     $0xe4, Z24, Z11, Z9 \
	VGF2P8AFFINEQB $0, Z25, Z9, Z9 \
	VPDPBUSD       (64*q)(R9), Z9, acc

// func q3kDotRowsZ(out *float32, w *byte, rowBytes, rows int, tab *float32, units int)
// out[r] = the dot of the Q3_K row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go), tab the activations' kPrepZ table.
TEXT ·q3kDotRowsZ(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), R15
	MOVQ         w+8(FP), R13
	MOVQ         rows+24(FP), R14
	VMOVDQU64    kCodeIdxZ<>+0(SB), Z16
	VMOVDQU64    kCodeIdxZ<>+64(SB), Z17
	VMOVDQU64    kCodeIdxZ<>+128(SB), Z18
	VMOVDQU64    kCodeIdxZ<>+192(SB), Z19
	VMOVDQU64    kHighIdxZ<>+0(SB), Z20
	VMOVDQU64    kHighIdxZ<>+64(SB), Z21
	VMOVDQU64    kHighIdxZ<>+128(SB), Z22
	VMOVDQU64    kHighIdxZ<>+192(SB), Z23
	VMOVDQU64    kQ3Keep<>(SB), Z24
	VMOVDQU64    kQ3Bits<>(SB), Z25
	VPBROADCASTQ kHighPerm<>(SB), Z29
	MOVL         $32, AX
	VPBROADCASTD AX, Z30
	MOVL         $15, AX
	VPBROADCASTD AX, Z15
	MOVL         $0x30, AX
	VPBROADCASTD AX, Z26
	MOVL         $0xfff, AX
	KMOVQ        AX, K1
	VMOVDQU64    kQ3ScaleIdx<>(SB), Z12
	VMOVDQU64    kQ3ScaleLo<>(SB), Z13
	VMOVDQU64    kQ3ScaleHi<>(SB), Z14

q3zrow:
	MOVQ   R13, SI
	MOVQ   tab+32(FP), R9
	MOVQ   units+40(FP), CX
	VPXORD Z28, Z28, Z28

q3zsb:
	PREFETCHT0       4096(SI)
	PREFETCHT0       4160(SI)
	VMOVDQU64        32(SI), Z8
	VMOVDQU          (SI), Y10
	VGF2P8AFFINEQB   $0, Y29, Y10, Y10
	VMOVDQU64        KPNEG4SUM(R9), Z0 // dot = −4·sum + Σ (code + 4)·x, exact
	VPXORD           Z1, Z1, Z1
	Q3ZQ(0, Z16, Z20, Z0)
	Q3ZQ(1, Z17, Z21, Z1)
	Q3ZQ(2, Z18, Z22, Z0)
	Q3ZQ(3, Z19, Z23, Z1)
	VPADDD           Z1, Z0, Z0
	VCVTDQ2PS        Z0, Z0
	VMOVDQU8.Z       96(SI), K1, Z5 // the 12 scale bytes
	VPERMB           Z5, Z12, Z5
	VPSRLVD          Z13, Z5, Z6
	VPSRLVD          Z14, Z5, Z5
	VPANDD           Z26, Z5, Z5
	VPTERNLOGD       $0xec, Z15, Z5, Z6 // (lo & 0x0f) | (hi & 0x30)
	VPSUBD           Z30, Z6, Z5
	VCVTDQ2PS        Z5, Z5
	VPBROADCASTW     108(SI), Y3
	VCVTPH2PS        Y3, Z3 // d
	VMULPS           KPXD(R9), Z5, Z5
	VMULPS           Z3, Z5, Z5 // d·sc·xd
	VFMADD231PS      Z5, Z0, Z28
	ADDQ             $110, SI
	ADDQ             $KPBYTES, R9
	DECQ             CX
	JNZ              q3zsb

	KROWEND(q3zrow)
