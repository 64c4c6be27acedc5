// Shared by rows_fp8_amd64.s, rows_fp8z_amd64.s and rows_f16c_amd64.s: the FP8
// one-query add kernels' argument loader and weight steps, and ADDQ1Z, the ZMM loop of
// the 64-column FP8 and Int8 ones.

// Q1ARGS loads the arguments of the add*Q1x* kernels: DI acc, SI w, R8 src, R12
// stride, R13 n, R9 so, X13 mul.
#define Q1ARGS \
	MOVQ         acc+0(FP), DI      \
	MOVQ         w+8(FP), SI        \
	MOVQ         src+16(FP), R8     \
	MOVQ         stride+24(FP), R12 \
	MOVQ         n+32(FP), R13      \
	MOVQ         so+40(FP), R9      \
	VBROADCASTSS mul+48(FP), X13

// Weight steps of the FP8 add*Q1 kernels: W(woff, sa, x, y) broadcasts into y the
// weight at SI + woff times X13 (the multiplier) and, for WROW, times the row's f16
// scale at sa (x scratch, y's low half in the YMM kernels; uses AX).
#define WROW(woff, sa, x, y) \
	MOVWLZX      sa, AX; \
	VMOVD        AX, x; \
	VCVTPH2PS    x, x; \
	VMULSS       woff(SI), x, x; \
	VMULSS       X13, x, x; \
	VBROADCASTSS x, y

#define WTENSOR(woff, sa, x, y) \
	VMULSS       woff(SI), X13, x; \
	VBROADCASTSS x, y

// ADDQ1Z(W, ROW64) is the loop of the one-query adds over 64 columns with ZMM
// registers (AVX-512F), the twin of the YMM add*Q1x64 kernels: DI acc, SI w, R8 the
// first row, R12 stride, R13 n; the 64 sums in Z0..Z3. Per row, W leaves its weight
// broadcast in Z20 (it may use AX and X8, and read the row's scale at R8 + R9), ROW64
// its 64 values as float32 in Z16..Z19 (ADDQ4Z's loaders), and four FMAs add them;
// meanwhile it asks for the row's two lines as far ahead as ADDQ4Z does (R10).
// Each column gets the same FMAs in the same order as in the YMM kernel, so the sums
// are the same bits. It ends with VZEROUPPER.
#define ADDQ1Z(W, ROW64) \
	ADDQ1ZLOOP(W, ROW64); \
	ADDQ1ZSTORE

// ADDQ1ZLOOP is ADDQ1Z up to the store: the 64 sums left in Z0..Z3.
#define ADDQ1ZLOOP(W, ROW64) ADDQ1ZLOOPPF(W, ROW64, PFNEXTSET, PFROW2)

// ADDQ1ZLOOPPF is ADDQ1ZLOOP asking for the rows ahead through PFSET and PFROW
// (PFNEXTSET and PFROW2, or NOPF1 for none: prefetch_amd64.h).
#define ADDQ1ZLOOPPF(W, ROW64, PFSET, PFROW) \
	VMOVUPS (DI), Z0; \
	VMOVUPS 64(DI), Z1; \
	VMOVUPS 128(DI), Z2; \
	VMOVUPS 192(DI), Z3; \
	PFSET(R10); \
	TESTQ   R13, R13; \
	JZ      z1done; \
z1loop: \
	PFROW(R10); \
	W; \
	ROW64; \
	VFMADD231PS Z20, Z16, Z0; \
	VFMADD231PS Z20, Z17, Z1; \
	VFMADD231PS Z20, Z18, Z2; \
	VFMADD231PS Z20, Z19, Z3; \
	ADDQ        $4, SI; \
	ADDQ        R12, R8; \
	DECQ        R13; \
	JNZ         z1loop; \
z1done:

// ADDQ1ZSTORE stores ADDQ1ZLOOP's sums and ends with VZEROUPPER.
#define ADDQ1ZSTORE \
	VMOVUPS Z0, (DI); \
	VMOVUPS Z1, 64(DI); \
	VMOVUPS Z2, 128(DI); \
	VMOVUPS Z3, 192(DI); \
	VZEROUPPER
