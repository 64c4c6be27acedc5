#include "textflag.h"

// func hasF16C() bool
// CPUID leaf 1, ECX bit 29.
TEXT ·hasF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func hasAVX2FMA() bool
// CPUID leaf 1: ECX bit 12 (FMA), bit 27 (OSXSAVE), bit 28 (AVX); XGETBV: XCR0 bits 1-2
// (XMM and YMM state saved by the OS); CPUID leaf 7 subleaf 0: EBX bit 5 (AVX2).
TEXT ·hasAVX2FMA(SB), NOSPLIT, $0-1
	MOVB $0, ret+0(FP)
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, R8
	ANDL $0x18001000, R8
	CMPL R8, $0x18001000
	JNE  no
	XORL CX, CX
	XGETBV
	ANDL $6, AX
	CMPL AX, $6
	JNE  no
	MOVL $7, AX
	XORL CX, CX
	CPUID
	SHRL $5, BX
	ANDL $1, BX
	MOVB BX, ret+0(FP)
no:
	RET

// func hasAVX512F() bool
// CPUID leaf 7 subleaf 0: EBX bit 16 (AVX512F); XGETBV: XCR0 bits 1-2 and 5-7 (XMM,
// YMM, opmask and the ZMM state of registers 0-15 and 16-31 saved by the OS). Callers
// check OSXSAVE first (hasAVX2FMA).
TEXT ·hasAVX512F(SB), NOSPLIT, $0-1
	MOVB $0, ret+0(FP)
	MOVL $7, AX
	XORL CX, CX
	CPUID
	BTL  $16, BX
	JCC  none
	XORL CX, CX
	XGETBV
	ANDL $0xe6, AX
	CMPL AX, $0xe6
	JNE  none
	MOVB $1, ret+0(FP)
none:
	RET

// func hasAVX512VNNI() bool
// CPUID leaf 7 subleaf 0: EBX bit 30 (AVX512BW) and ECX bit 11 (AVX512_VNNI). Callers
// check AVX512F and its OS state first (hasAVX512F).
TEXT ·hasAVX512VNNI(SB), NOSPLIT, $0-1
	MOVB $0, ret+0(FP)
	MOVL $7, AX
	XORL CX, CX
	CPUID
	BTL  $30, BX
	JCC  nobw
	BTL  $11, CX
	JCC  nobw
	MOVB $1, ret+0(FP)
nobw:
	RET

// func hasVBMIGFNI() bool
// CPUID leaf 7 subleaf 0: ECX bit 1 (AVX512_VBMI) and bit 8 (GFNI), EBX bit 31
// (AVX512VL). Callers check AVX512F and its OS state first (hasAVX512F).
TEXT ·hasVBMIGFNI(SB), NOSPLIT, $0-1
	MOVB $0, ret+0(FP)
	MOVL $7, AX
	XORL CX, CX
	CPUID
	BTL  $31, BX
	JCC  novbmi
	BTL  $1, CX
	JCC  novbmi
	BTL  $8, CX
	JCC  novbmi
	MOVB $1, ret+0(FP)
novbmi:
	RET
