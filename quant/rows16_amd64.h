// Shared by rows_f16c_amd64.s and rows_bf16_amd64.s: the bodies of the F16 and BF16
// row kernels (dot*R4, dot*Q4, add*Q1x64, add*Q1x16; contracts in rows_f16c_amd64.go),
// which differ only in how 8 stored 16-bit values become float32s: W16(m, y) widens
// the 8 values at memory operand m into y (F16W16: VCVTPH2PS; BF16W16: VPMOVZXWD and a
// shift into the high halves). The kernels load their arguments before the body (the
// dot*R4 kernels through R4FRAME, r4frame_amd64.h, which go vet does not look into;
// the others where go vet checks them); each body ends with VZEROUPPER and RET.

// F16W16 widens 8 binary16 values exactly.
#define F16W16(m, y) VCVTPH2PS m, y

// BF16W16 widens 8 bfloat16 values exactly.
#define BF16W16(m, y) \
	VPMOVZXWD m, y; \
	VPSLLD    $16, y, y

// DOTR4_16 is the body of dotF16R4 (see its declaration). Each group first asks for
// its rows' lines PFDIST bytes on through PF (PREFETCH4X2, prefetch_amd64.h), or for
// none (NOPF4: the rows' twin for the end of what the caller reads), or for the
// rows the caller reads next (PFNEXTROWS, dotF16R4Next).
#define DOTR4_16(W16, PF) \
	SHLQ $1, R14; \
group: \
	TESTQ R13, R13; \
	JZ    done; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	LEAQ   (R8)(R9*1), BX; \
	LEAQ   (R8)(R10*1), CX; \
	LEAQ   (R8)(R11*1), DX; \
	PF(R8, BX, CX, DX); \
	XORQ   AX, AX; \
loop: \
	VMOVUPS     (SI)(AX*2), Y8; \
	VMOVUPS     32(SI)(AX*2), Y9; \
	W16((R8)(AX*1), Y10); \
	W16(16(R8)(AX*1), Y11); \
	VFMADD231PS Y8, Y10, Y0; \
	VFMADD231PS Y9, Y11, Y4; \
	W16((BX)(AX*1), Y10); \
	W16(16(BX)(AX*1), Y11); \
	VFMADD231PS Y8, Y10, Y1; \
	VFMADD231PS Y9, Y11, Y5; \
	W16((CX)(AX*1), Y10); \
	W16(16(CX)(AX*1), Y11); \
	VFMADD231PS Y8, Y10, Y2; \
	VFMADD231PS Y9, Y11, Y6; \
	W16((DX)(AX*1), Y10); \
	W16(16(DX)(AX*1), Y11); \
	VFMADD231PS Y8, Y10, Y3; \
	VFMADD231PS Y9, Y11, Y7; \
	ADDQ        $32, AX; \
	CMPQ        AX, R14; \
	JB          loop; \
	VADDPS       Y4, Y0, Y0; \
	VADDPS       Y5, Y1, Y1; \
	VADDPS       Y6, Y2, Y2; \
	VADDPS       Y7, Y3, Y3; \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVUPS      X0, (DI); \
	ADDQ         $16, DI; \
	ADDQ         R12, R8; \
	DECQ         R13; \
	JMP          group; \
done: \
	VZEROUPPER; \
	RET

// DOTQ4_16 is the body of dotF16Q4 (see its declaration). Each row first asks for
// the two lines PFDIST bytes on (prefetch_amd64.h): f16 decode attention at 32k
// (32/8/64) took 10% less time per step with it.
#define DOTQ4_16(W16) \
	SHLQ $1, R14; \
	LEAQ (SI)(CX*1), R9; \
	LEAQ (R9)(CX*1), R10; \
	LEAQ (R10)(CX*1), R11; \
	LEAQ (BX)(BX*2), DX; \
row: \
	TESTQ  R13, R13; \
	JZ     qdone; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	PREFETCHT0 PFDIST(R8); \
	PREFETCHT0 PFDIST+64(R8); \
	XORQ   AX, AX; \
qloop: \
	W16((R8)(AX*1), Y8); \
	W16(16(R8)(AX*1), Y9); \
	VFMADD231PS (SI)(AX*2), Y8, Y0; \
	VFMADD231PS 32(SI)(AX*2), Y9, Y4; \
	VFMADD231PS (R9)(AX*2), Y8, Y1; \
	VFMADD231PS 32(R9)(AX*2), Y9, Y5; \
	VFMADD231PS (R10)(AX*2), Y8, Y2; \
	VFMADD231PS 32(R10)(AX*2), Y9, Y6; \
	VFMADD231PS (R11)(AX*2), Y8, Y3; \
	VFMADD231PS 32(R11)(AX*2), Y9, Y7; \
	ADDQ        $32, AX; \
	CMPQ        AX, R14; \
	JB          qloop; \
	VADDPS       Y4, Y0, Y0; \
	VADDPS       Y5, Y1, Y1; \
	VADDPS       Y6, Y2, Y2; \
	VADDPS       Y7, Y3, Y3; \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSS       X0, (DI); \
	VEXTRACTPS   $1, X0, (DI)(BX*1); \
	VEXTRACTPS   $2, X0, (DI)(BX*2); \
	VEXTRACTPS   $3, X0, (DI)(DX*1); \
	ADDQ         $4, DI; \
	ADDQ         R12, R8; \
	DECQ         R13; \
	JMP          row; \
qdone: \
	VZEROUPPER; \
	RET

// ADDQ1ARGS loads the arguments the one-query add kernels of 16-bit and Int8 rows
// (add*Q1x*) begin with: DI acc, SI w, R8 src, R12 stride, R13 n.
#define ADDQ1ARGS \
	MOVQ acc+0(FP), DI;      \
	MOVQ w+8(FP), SI;        \
	MOVQ src+16(FP), R8;     \
	MOVQ stride+24(FP), R12; \
	MOVQ n+32(FP), R13

// ADDQ1X64_16 is the body of addF16Q1x64 (see its declaration); it asks for the rows
// ahead as ADDQ1Z (addq1_amd64.h) does through PFSET and PFROW (PFNEXTSET and PFROW2,
// prefetch_amd64.h), or for none (NOPF1 for both).
#define ADDQ1X64_16(W16, PFSET, PFROW) \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS 64(DI), Y2; \
	VMOVUPS 96(DI), Y3; \
	VMOVUPS 128(DI), Y4; \
	VMOVUPS 160(DI), Y5; \
	VMOVUPS 192(DI), Y6; \
	VMOVUPS 224(DI), Y7; \
	PFSET(R10); \
	TESTQ   R13, R13; \
	JZ      adone; \
aloop: \
	PFROW(R10); \
	VBROADCASTSS (SI), Y8; \
	W16((R8), Y9); \
	W16(16(R8), Y10); \
	W16(32(R8), Y11); \
	W16(48(R8), Y12); \
	VFMADD231PS  Y8, Y9, Y0; \
	VFMADD231PS  Y8, Y10, Y1; \
	VFMADD231PS  Y8, Y11, Y2; \
	VFMADD231PS  Y8, Y12, Y3; \
	W16(64(R8), Y9); \
	W16(80(R8), Y10); \
	W16(96(R8), Y11); \
	W16(112(R8), Y12); \
	VFMADD231PS  Y8, Y9, Y4; \
	VFMADD231PS  Y8, Y10, Y5; \
	VFMADD231PS  Y8, Y11, Y6; \
	VFMADD231PS  Y8, Y12, Y7; \
	ADDQ         $4, SI; \
	ADDQ         R12, R8; \
	DECQ         R13; \
	JNZ          aloop; \
adone: \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	VMOVUPS Y4, 128(DI); \
	VMOVUPS Y5, 160(DI); \
	VMOVUPS Y6, 192(DI); \
	VMOVUPS Y7, 224(DI); \
	VZEROUPPER; \
	RET

// ADDQ1X16_16 is the body of addF16Q1x16 (see its declaration): each column's sum
// is one chain of FMAs in row order, as in the four-query kernels, so that a
// query's sums are the same bits alone or beside others and however its rows are
// split into calls (RowsQueriesIndependent). Two rows per iteration load ahead.
#define ADDQ1X16_16(W16) \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
sloop: \
	CMPQ         R13, $2; \
	JB           stail; \
	VBROADCASTSS (SI), Y8; \
	VBROADCASTSS 4(SI), Y9; \
	W16((R8), Y10); \
	W16(16(R8), Y11); \
	W16((R8)(R12*1), Y12); \
	W16(16(R8)(R12*1), Y13); \
	VFMADD231PS  Y8, Y10, Y0; \
	VFMADD231PS  Y8, Y11, Y1; \
	VFMADD231PS  Y9, Y12, Y0; \
	VFMADD231PS  Y9, Y13, Y1; \
	ADDQ         $8, SI; \
	LEAQ         (R8)(R12*2), R8; \
	SUBQ         $2, R13; \
	JMP          sloop; \
stail: \
	TESTQ        R13, R13; \
	JZ           sdone; \
	VBROADCASTSS (SI), Y8; \
	W16((R8), Y10); \
	W16(16(R8), Y11); \
	VFMADD231PS  Y8, Y10, Y0; \
	VFMADD231PS  Y8, Y11, Y1; \
sdone: \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VZEROUPPER; \
	RET

