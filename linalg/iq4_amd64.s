//go:build amd64

#include "textflag.h"
#include "rows_amd64.h"

// IQ4_XS and IQ4_NL products in AVX2 + FMA + F16C assembly (the references are
// dotIQ4XSScalar and dotIQ4NLScalar). A 32-value sub-block is 16 bytes of 4-bit
// indices into the sixteen int8 levels of IQ4NLValues (values l and 16+l in the low
// and high nibble of byte l). VPSHUFB looks the levels up for all 32 values at once;
// the products with the int8 activations go through VPMADDUBSW as |level| times the
// activation with the level's sign (VPABSB, VPSIGNB): pair sums are at most
// 2·127·127 = 32258, no saturation. Eight sub-blocks' dots are folded into one vector
// whose lane j is sub-block j's, then scaled all at once.

// The sixteen levels, in both 128-bit lanes of Y12.
DATA iq4Levels<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4Levels<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4Levels<>(SB), RODATA|NOPTR, $16

// Per-lane shift counts of the IQ4_XS scales: 4j for the low nibbles, 2j for the
// high bits (lane j: sub-block j).
DATA iq4ShiftLo<>+0(SB)/4, $0
DATA iq4ShiftLo<>+4(SB)/4, $4
DATA iq4ShiftLo<>+8(SB)/4, $8
DATA iq4ShiftLo<>+12(SB)/4, $12
DATA iq4ShiftLo<>+16(SB)/4, $16
DATA iq4ShiftLo<>+20(SB)/4, $20
DATA iq4ShiftLo<>+24(SB)/4, $24
DATA iq4ShiftLo<>+28(SB)/4, $28
GLOBL iq4ShiftLo<>(SB), RODATA|NOPTR, $32
DATA iq4ShiftHi<>+0(SB)/4, $0
DATA iq4ShiftHi<>+4(SB)/4, $2
DATA iq4ShiftHi<>+8(SB)/4, $4
DATA iq4ShiftHi<>+12(SB)/4, $6
DATA iq4ShiftHi<>+16(SB)/4, $8
DATA iq4ShiftHi<>+20(SB)/4, $10
DATA iq4ShiftHi<>+24(SB)/4, $12
DATA iq4ShiftHi<>+28(SB)/4, $14
GLOBL iq4ShiftHi<>(SB), RODATA|NOPTR, $32

// IQ4DOT(qoff, xoff, dst) leaves in dst (eight int32 partial sums) the dot of the
// sub-block whose 16 index bytes are at qoff(SI) with the 32 activation codes at
// xoff(DI). Y12: levels, Y14: nibble masks, Y15: int16 ones; Y1, Y2 scratch.
#define IQ4DOT(qoff, xoff, dst) \
	VMOVDQU     qoff(SI), X1 \
	VPSRLW      $4, X1, X2 \
	VINSERTI128 $1, X2, Y1, Y1 \
	VPAND       Y14, Y1, Y1 \
	VPSHUFB     Y1, Y12, Y1 \
	VMOVDQU     xoff(DI), Y2 \
	VPSIGNB     Y1, Y2, Y2 \
	VPABSB      Y1, Y1 \
	VPMADDUBSW  Y2, Y1, Y1 \
	VPMADDWD    Y15, Y1, dst

// IQ4DOT4(q0, q1, q2, q3, x0, x1, x2, x3, dst) leaves in dst the dots of four
// sub-blocks (index bytes at q0..q3(SI), activations at x0..x3(DI)) as lanes
// [0 1 2 3 | 0 1 2 3], each half the sums of its half of the values. Y5..Y8 are scratch.
#define IQ4DOT4(q0, q1, q2, q3, x0, x1, x2, x3, dst) \
	IQ4DOT(q0, x0, Y5) \
	IQ4DOT(q1, x1, Y6) \
	IQ4DOT(q2, x2, Y7) \
	IQ4DOT(q3, x3, Y8) \
	VPHADDD Y6, Y5, Y5 \
	VPHADDD Y8, Y7, Y7 \
	VPHADDD Y7, Y5, dst

// IQ4FOLD(lo, hi, dst, tmp) is Q4KFOLD: lane j of dst is sub-block j's dot as float32.
#define IQ4FOLD(lo, hi, dst, tmp) \
	VPERM2I128 $0x20, hi, lo, dst \
	VPERM2I128 $0x31, hi, lo, tmp \
	VPADDD     tmp, dst, dst \
	VCVTDQ2PS  dst, dst

// IQ4SETUP loads the constants: Y12 levels, Y14 nibble masks, Y15 int16 ones.
#define IQ4SETUP \
	ONES16 \
	BYTES32(0x0f, X14, Y14) \
	VBROADCASTI128 iq4Levels<>(SB), Y12

// func iq4xsDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the IQ4_XS row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·iq4xsDotRows(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	IQ4SETUP
	DWORDS8(15, X11, Y11)
	DWORDS8(3, X13, Y13)

xsrow:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

xssb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	IQ4DOT4(8, 24, 40, 56, 0, 32, 64, 96, Y9)
	IQ4DOT4(72, 88, 104, 120, 128, 160, 192, 224, Y10)
	IQ4FOLD(Y9, Y10, Y1, Y2)
	// Scales ls_j = (scales_l nibble j | (scales_h bits 2j, 2j+1) << 4) − 32.
	MOVL         4(SI), AX
	VMOVD        AX, X3
	VPBROADCASTD X3, Y3
	VPSRLVD      iq4ShiftLo<>(SB), Y3, Y3
	VPAND        Y11, Y3, Y3
	MOVWLZX      2(SI), AX
	VMOVD        AX, X4
	VPBROADCASTD X4, Y4
	VPSRLVD      iq4ShiftHi<>(SB), Y4, Y4
	VPAND        Y13, Y4, Y4
	VPSLLD       $4, Y4, Y4
	VPOR         Y4, Y3, Y3
	DWORDS8(32, X4, Y4)
	VPSUBD       Y4, Y3, Y3
	VCVTDQ2PS    Y3, Y3
	VMULPS       Y3, Y1, Y1 // ls·dot, exact
	MOVWLZX      (SI), AX
	VMOVD        AX, X4
	VCVTPH2PS    X4, X4
	VBROADCASTSS X4, Y4
	VMULPS       (R8), Y4, Y4 // d·xd
	VFMADD231PS  Y4, Y1, Y0
	ADDQ         $136, SI
	ADDQ         $256, DI
	ADDQ         $32, R8
	DECQ         CX
	JNZ          xssb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    xsrow
	VZEROUPPER
	RET

// IQ4NLSCALE(k) inserts block k's binary16 scale (at 18k(SI)) into word k of X3.
#define IQ4NLSCALE(k) \
	MOVWLZX (18*k)(SI), AX \
	VPINSRW $k, AX, X3, X3

// func iq4nlDotRows(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, units int)
// out[r] = the dot of the IQ4_NL row of units groups of 8 blocks (144 bytes) at
// w+r·rowBytes, for r < rows (rows, units ≥ 1; see rows_amd64.go).
TEXT ·iq4nlDotRows(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	IQ4SETUP

nlrow:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   units+48(FP), CX
	VXORPS Y0, Y0, Y0

nlgroup:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	IQ4DOT4(2, 20, 38, 56, 0, 32, 64, 96, Y9)
	IQ4DOT4(74, 92, 110, 128, 128, 160, 192, 224, Y10)
	IQ4FOLD(Y9, Y10, Y1, Y2)
	MOVWLZX   (SI), AX
	VMOVD     AX, X3
	IQ4NLSCALE(1)
	IQ4NLSCALE(2)
	IQ4NLSCALE(3)
	IQ4NLSCALE(4)
	IQ4NLSCALE(5)
	IQ4NLSCALE(6)
	IQ4NLSCALE(7)
	VCVTPH2PS X3, Y3
	VMULPS    (R8), Y3, Y3 // d·xd per block
	VFMADD231PS Y3, Y1, Y0
	ADDQ      $144, SI
	ADDQ      $256, DI
	ADDQ      $32, R8
	DECQ      CX
	JNZ       nlgroup

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    nlrow
	VZEROUPPER
	RET

// IQ4_XS and IQ4_NL products with AVX-512 VNNI and GFNI (the references are
// dotIQ4XSScalar and dotIQ4NLScalar; iq4_amd64.s has the AVX2 kernels). Per 32-value
// sub-block, VBROADCASTI128 puts its 16 index bytes in both 128-bit lanes, one
// VGF2P8AFFINEQB takes the low nibbles in lane 0 and the high nibbles in lane 1 (one
// bit matrix per lane), VPSHUFB looks up the levels plus 128 (1..241, unsigned), and
// one VPDPBUSD multiplies them with the int8 activations into eight int32 sums: the
// dot plus 128 times the activations' code sum, which is subtracted after the eight
// sub-blocks' sums are folded into one vector (lane j: sub-block j). Every step is
// exact in int32; the float scaling is the AVX2 kernels'.

// The sixteen levels plus 128 (XOR 0x80), in both 128-bit lanes of Y12.
DATA iq4zLevels<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4zLevels<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4zLevels<>(SB), RODATA|NOPTR, $16

// VGF2P8AFFINEQB bit matrices: the low nibble (lane 0) and the high nibble moved down
// (lane 1) of every byte; output bit i is the parity of the byte and matrix byte 7−i.
DATA iq4zNibbles<>+0(SB)/8, $0x0102040800000000
DATA iq4zNibbles<>+8(SB)/8, $0x0102040800000000
DATA iq4zNibbles<>+16(SB)/8, $0x1020408000000000
DATA iq4zNibbles<>+24(SB)/8, $0x1020408000000000
GLOBL iq4zNibbles<>(SB), RODATA|NOPTR, $32

// Word indices of the eight binary16 block scales of an IQ4_NL group of 8 blocks (at
// bytes 18j) in its first 128 bytes, for VPERMT2W.
DATA iq4zNLScales<>+0(SB)/8, $0x001b001200090000
DATA iq4zNLScales<>+8(SB)/8, $0x003f0036002d0024
DATA iq4zNLScales<>+16(SB)/8, $0
DATA iq4zNLScales<>+24(SB)/8, $0
DATA iq4zNLScales<>+32(SB)/8, $0
DATA iq4zNLScales<>+40(SB)/8, $0
DATA iq4zNLScales<>+48(SB)/8, $0
DATA iq4zNLScales<>+56(SB)/8, $0
GLOBL iq4zNLScales<>(SB), RODATA|NOPTR, $64

// IQ4Z(qoff, xoff, dst) sets dst to eight int32 partial sums of the sub-block whose 16
// index bytes are at qoff(SI) times the 32 activation codes at xoff(DI), the levels
// plus 128. Y12: levels, Y13: nibble matrices; Y1 scratch.
#define IQ4Z(qoff, xoff, dst) \
	VBROADCASTI128 qoff(SI), Y1 \
	VGF2P8AFFINEQB $0, Y13, Y1, Y1 \
	VPSHUFB        Y1, Y12, Y1 \
	VPXOR          dst, dst, dst \
	VPDPBUSD       xoff(DI), Y1, dst

// IQ4ZFOLD leaves in Y1 the eight sub-blocks' dots (IQ4Z in Y2..Y9) as float32, lane j
// sub-block j's, less 128 times the activation blocks' code sums at R9. Y10 scratch.
#define IQ4ZFOLD \
	VPHADDD    Y3, Y2, Y2 \
	VPHADDD    Y5, Y4, Y4 \
	VPHADDD    Y4, Y2, Y2 \
	VPHADDD    Y7, Y6, Y6 \
	VPHADDD    Y9, Y8, Y8 \
	VPHADDD    Y8, Y6, Y6 \
	VPERM2I128 $0x20, Y6, Y2, Y1 \
	VPERM2I128 $0x31, Y6, Y2, Y10 \
	VPADDD     Y10, Y1, Y1 \
	VMOVDQU    (R9), Y10 \
	VPSLLD     $7, Y10, Y10 \
	VPSUBD     Y10, Y1, Y1 \
	VCVTDQ2PS  Y1, Y1

// IQ4ZSETUP loads the constants: Y12 levels, Y13 nibble matrices.
#define IQ4ZSETUP \
	VBROADCASTI128 iq4zLevels<>(SB), Y12 \
	VMOVDQU        iq4zNibbles<>(SB), Y13

// func iq4xsDotRowsZ(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)
// out[r] = the dot of the IQ4_XS row of units super-blocks at w+r·rowBytes, for r < rows
// (rows, units ≥ 1; see rows_amd64.go).
TEXT ·iq4xsDotRowsZ(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), R15
	MOVQ w+8(FP), R13
	MOVQ rows+24(FP), R14
	IQ4ZSETUP
	DWORDS8(15, X11, Y11)
	DWORDS8(3, X14, Y14)
	DWORDS8(32, X15, Y15)

xzrow:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   xsum+48(FP), R9
	MOVQ   units+56(FP), CX
	VXORPS Y0, Y0, Y0

xzsb:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	IQ4Z(8, 0, Y2)
	IQ4Z(24, 32, Y3)
	IQ4Z(40, 64, Y4)
	IQ4Z(56, 96, Y5)
	IQ4Z(72, 128, Y6)
	IQ4Z(88, 160, Y7)
	IQ4Z(104, 192, Y8)
	IQ4Z(120, 224, Y9)
	IQ4ZFOLD
	// Scales ls_j = (scales_l nibble j | (scales_h bits 2j, 2j+1) << 4) − 32.
	VPBROADCASTD 4(SI), Y3
	VPSRLVD      iq4ShiftLo<>(SB), Y3, Y3
	VPAND        Y11, Y3, Y3
	VPBROADCASTW 2(SI), Y4
	VPSRLVD      iq4ShiftHi<>(SB), Y4, Y4
	VPAND        Y14, Y4, Y4
	VPSLLD       $4, Y4, Y4
	VPOR         Y4, Y3, Y3
	VPSUBD       Y15, Y3, Y3
	VCVTDQ2PS    Y3, Y3
	VMULPS       Y3, Y1, Y1 // ls·dot, exact
	VPBROADCASTW (SI), X4
	VCVTPH2PS    X4, Y4
	VMULPS       (R8), Y4, Y4 // d·xd
	VFMADD231PS  Y4, Y1, Y0
	ADDQ         $136, SI
	ADDQ         $256, DI
	ADDQ         $32, R8
	ADDQ         $32, R9
	DECQ         CX
	JNZ          xzsb

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    xzrow
	VZEROUPPER
	RET

// func iq4nlDotRowsZ(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, units int)
// out[r] = the dot of the IQ4_NL row of units groups of 8 blocks (144 bytes) at
// w+r·rowBytes, for r < rows (rows, units ≥ 1; see rows_amd64.go).
TEXT ·iq4nlDotRowsZ(SB), NOSPLIT, $0-64
	MOVQ      out+0(FP), R15
	MOVQ      w+8(FP), R13
	MOVQ      rows+24(FP), R14
	IQ4ZSETUP
	VMOVDQU64 iq4zNLScales<>(SB), Z14

nzrow:
	MOVQ   R13, SI
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R8
	MOVQ   xsum+48(FP), R9
	MOVQ   units+56(FP), CX
	VXORPS Y0, Y0, Y0

nzgroup:
	PREFETCHT0  4096(SI)
	PREFETCHT0  4160(SI)
	PREFETCHT0  4224(SI)
	IQ4Z(2, 0, Y2)
	IQ4Z(20, 32, Y3)
	IQ4Z(38, 64, Y4)
	IQ4Z(56, 96, Y5)
	IQ4Z(74, 128, Y6)
	IQ4Z(92, 160, Y7)
	IQ4Z(110, 192, Y8)
	IQ4Z(128, 224, Y9)
	IQ4ZFOLD
	// The eight blocks' binary16 scales, gathered from words 9j of the first 128 bytes.
	VMOVDQU64   (SI), Z3
	VPERMT2W    64(SI), Z14, Z3
	VCVTPH2PS   X3, Y3
	VMULPS      (R8), Y3, Y3 // d·xd per block
	VFMADD231PS Y3, Y1, Y0
	ADDQ        $144, SI
	ADDQ        $256, DI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         nzgroup

	HSUM0
	VMOVSS X0, (R15)
	ADDQ   $4, R15
	ADDQ   rowBytes+16(FP), R13
	DECQ   R14
	JNZ    nzrow
	VZEROUPPER
	RET
