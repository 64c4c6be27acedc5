// ADDQ4Z is ADDQ4 (addq4_amd64.h) with ZMM registers over 64 columns: the 16
// accumulators of each query at DI, BX, CX, DX become 64 (Z0..Z15, four per query),
// ROW64 loads row i's 64 values at R8 as float32 into Z16..Z19, once for the four
// queries, and each takes 16 FMAs of 16 lanes where four ADDQ4 passes take 32 of 8
// and widen the row four times. Each column gets the same operations in the same
// order as in ADDQ4: the sums are the same bits. Q4ARGS loads the arguments; the
// kernels need AVX-512F (haveAVX512F). It ends with VZEROUPPER.
//
// While adding row i it asks for the two lines 2n rows on, or PFNEXT bytes on if
// nearer (R9; prefetch_amd64.h): the rows of the call after the next where a cache
// block's heads follow one another. Decode attention at 32k took 10% less time per
// step with the next call's rows asked for (n rows on) for f16 and fp8e4m3 values.
#define ADDQ4Z(ROW64) \
	ZQ4LOAD(DI, Z0, Z1, Z2, Z3); \
	ZQ4LOAD(BX, Z4, Z5, Z6, Z7); \
	ZQ4LOAD(CX, Z8, Z9, Z10, Z11); \
	ZQ4LOAD(DX, Z12, Z13, Z14, Z15); \
	PFNEXTSET(R9); \
	XORQ    AX, AX; \
	TESTQ   R13, R13; \
	JZ      zdone; \
zloop: \
	PFROW2(R9); \
	ROW64; \
	ZQ4FMA(SI, Z20, Z0, Z1, Z2, Z3); \
	ZQ4FMA(R11, Z21, Z4, Z5, Z6, Z7); \
	ZQ4FMA(R14, Z22, Z8, Z9, Z10, Z11); \
	ZQ4FMA(R10, Z23, Z12, Z13, Z14, Z15); \
	ADDQ    R12, R8; \
	INCQ    AX; \
	CMPQ    AX, R13; \
	JB      zloop; \
zdone: \
	ZQ4STORE(DI, Z0, Z1, Z2, Z3); \
	ZQ4STORE(BX, Z4, Z5, Z6, Z7); \
	ZQ4STORE(CX, Z8, Z9, Z10, Z11); \
	ZQ4STORE(DX, Z12, Z13, Z14, Z15); \
	VZEROUPPER

// ZQ4LOAD and ZQ4STORE move one query's 64 accumulators at p to and from a0..a3.
#define ZQ4LOAD(p, a0, a1, a2, a3) \
	VMOVUPS (p), a0; \
	VMOVUPS 64(p), a1; \
	VMOVUPS 128(p), a2; \
	VMOVUPS 192(p), a3

#define ZQ4STORE(p, a0, a1, a2, a3) \
	VMOVUPS a0, (p); \
	VMOVUPS a1, 64(p); \
	VMOVUPS a2, 128(p); \
	VMOVUPS a3, 192(p)

// ZQ4FMA adds row AX's 64 values (Z16..Z19) times one query's weight, at w + 4·AX
// (broadcast into wz), to its accumulators a0..a3.
#define ZQ4FMA(w, wz, a0, a1, a2, a3) \
	VBROADCASTSS (w)(AX*4), wz; \
	VFMADD231PS  wz, Z16, a0; \
	VFMADD231PS  wz, Z17, a1; \
	VFMADD231PS  wz, Z18, a2; \
	VFMADD231PS  wz, Z19, a3
