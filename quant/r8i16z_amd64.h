// The body of dotInt8R8I16Z and dotInt8R8I16ZNext (int8_i16z_amd64.s; see there),
// PF the prefetch instruction that asks for each row's line ahead bytes on
// (PREFETCHT0, or PREFETCHT1 for the rows the caller reads next).
#define DOTR8I16Z(PF) \
	MOVQ         out+0(FP), DI; \
	MOVQ         q+8(FP), SI; \
	MOVQ         src+16(FP), R8; \
	MOVQ         stride+24(FP), R12; \
	MOVQ         nu+32(FP), R13; \
	MOVQ         d+40(FP), R14; \
	MOVQ         ahead+48(FP), BX; \
	VBROADCASTSS (SI)(R14*2), Y7; \
	LEAQ         (R12)(R12*2), R9; \
	LEAQ         (R12)(R12*4), R10; \
	LEAQ         (R9)(R12*4), R11; \
	VMOVDQU      r8perm<>(SB), Y15; \
	TESTQ        R13, R13; \
	JZ           r8done; \
r8unit: \
	LEAQ       (R8)(BX*1), CX; \
	PF (CX); \
	PF (CX)(R12*1); \
	PF (CX)(R12*2); \
	PF (CX)(R9*1); \
	PF (CX)(R12*4); \
	PF (CX)(R10*1); \
	PF (CX)(R9*2); \
	PF (CX)(R11*1); \
	VPXORD     Z0, Z0, Z0; \
	VPXORD     Z1, Z1, Z1; \
	VPXORD     Z2, Z2, Z2; \
	VPXORD     Z3, Z3, Z3; \
	VPXORD     Z4, Z4, Z4; \
	VPXORD     Z5, Z5, Z5; \
	VPXORD     Z6, Z6, Z6; \
	VPXORD     Z16, Z16, Z16; \
	MOVQ       R8, R15; \
	XORQ       AX, AX; \
r8step: \
	VMOVDQU64 (SI)(AX*2), Z8; \
	VPMOVSXBW 2(R15), Z9; \
	VPMOVSXBW 2(R15)(R12*1), Z10; \
	VPMOVSXBW 2(R15)(R12*2), Z11; \
	VPMOVSXBW 2(R15)(R9*1), Z12; \
	VPDPWSSD  Z8, Z9, Z0; \
	VPDPWSSD  Z8, Z10, Z1; \
	VPDPWSSD  Z8, Z11, Z2; \
	VPDPWSSD  Z8, Z12, Z3; \
	VPMOVSXBW 2(R15)(R12*4), Z9; \
	VPMOVSXBW 2(R15)(R10*1), Z10; \
	VPMOVSXBW 2(R15)(R9*2), Z11; \
	VPMOVSXBW 2(R15)(R11*1), Z12; \
	VPDPWSSD  Z8, Z9, Z4; \
	VPDPWSSD  Z8, Z10, Z5; \
	VPDPWSSD  Z8, Z11, Z6; \
	VPDPWSSD  Z8, Z12, Z16; \
	ADDQ      $32, AX; \
	ADDQ      $32, R15; \
	CMPQ      AX, R14; \
	JB        r8step; \
	VSHUFI64X2 $0x44, Z1, Z0, Z8; \
	VSHUFI64X2 $0xee, Z1, Z0, Z9; \
	VPADDD     Z9, Z8, Z8; \
	VSHUFI64X2 $0x44, Z3, Z2, Z10; \
	VSHUFI64X2 $0xee, Z3, Z2, Z11; \
	VPADDD     Z11, Z10, Z10; \
	VSHUFI64X2 $0x44, Z5, Z4, Z12; \
	VSHUFI64X2 $0xee, Z5, Z4, Z13; \
	VPADDD     Z13, Z12, Z12; \
	VSHUFI64X2 $0x44, Z16, Z6, Z14; \
	VSHUFI64X2 $0xee, Z16, Z6, Z13; \
	VPADDD     Z13, Z14, Z14; \
	VSHUFI64X2 $0x88, Z10, Z8, Z0; \
	VSHUFI64X2 $0xdd, Z10, Z8, Z1; \
	VPADDD     Z1, Z0, Z0; \
	VSHUFI64X2 $0x88, Z14, Z12, Z2; \
	VSHUFI64X2 $0xdd, Z14, Z12, Z3; \
	VPADDD     Z3, Z2, Z2; \
	VSHUFPS    $0x88, Z2, Z0, Z8; \
	VSHUFPS    $0xdd, Z2, Z0, Z9; \
	VPADDD     Z9, Z8, Z8; \
	VSHUFPS    $0x88, Z8, Z8, Z9; \
	VSHUFPS    $0xdd, Z8, Z8, Z10; \
	VPADDD     Z10, Z9, Z9; \
	VPERMD     Z9, Z15, Z9; \
	VCVTDQ2PS  Y9, Y9; \
	VPXOR     X1, X1, X1; \
	VPINSRW   $0, (R8), X1, X1; \
	VPINSRW   $1, (R8)(R12*1), X1, X1; \
	VPINSRW   $2, (R8)(R12*2), X1, X1; \
	VPINSRW   $3, (R8)(R9*1), X1, X1; \
	VPINSRW   $4, (R8)(R12*4), X1, X1; \
	VPINSRW   $5, (R8)(R10*1), X1, X1; \
	VPINSRW   $6, (R8)(R9*2), X1, X1; \
	VPINSRW   $7, (R8)(R11*1), X1, X1; \
	VCVTPH2PS X1, Y1; \
	VMULPS    Y1, Y9, Y9; \
	VMULPS    Y7, Y9, Y9; \
	VMOVUPS   Y9, (DI); \
	ADDQ      $32, DI; \
	LEAQ      (R8)(R12*8), R8; \
	DECQ      R13; \
	JNZ       r8unit; \
r8done: \
	VZEROUPPER; \
	RET
