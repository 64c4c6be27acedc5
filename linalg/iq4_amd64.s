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
	MOVL         $15, AX
	VMOVD        AX, X11
	VPBROADCASTD X11, Y11 // 15 per lane
	MOVL         $3, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13 // 3 per lane

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
	MOVL         $32, AX
	VMOVD        AX, X4
	VPBROADCASTD X4, Y4
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
