// ADDQ4Z is ADDQ4 (addq4_amd64.h) with ZMM registers over 64 columns: the 16
// accumulators of each query at DI, BX, CX, DX become 64 (Z0..Z15, four per query),
// ROW64 loads row i's 64 values at R8 as float32 into Z16..Z19, once for the four
// queries, and each takes 16 FMAs of 16 lanes where four ADDQ4 passes take 32 of 8
// and widen the row four times. Each column gets the same operations in the same
// order as in ADDQ4: the sums are the same bits. Q4ARGS loads the arguments; the
// kernels need AVX-512F (haveAVX512F). It ends with VZEROUPPER.
#define ADDQ4Z(ROW64) \
	VMOVUPS (DI), Z0; \
	VMOVUPS 64(DI), Z1; \
	VMOVUPS 128(DI), Z2; \
	VMOVUPS 192(DI), Z3; \
	VMOVUPS (BX), Z4; \
	VMOVUPS 64(BX), Z5; \
	VMOVUPS 128(BX), Z6; \
	VMOVUPS 192(BX), Z7; \
	VMOVUPS (CX), Z8; \
	VMOVUPS 64(CX), Z9; \
	VMOVUPS 128(CX), Z10; \
	VMOVUPS 192(CX), Z11; \
	VMOVUPS (DX), Z12; \
	VMOVUPS 64(DX), Z13; \
	VMOVUPS 128(DX), Z14; \
	VMOVUPS 192(DX), Z15; \
	XORQ    AX, AX; \
	TESTQ   R13, R13; \
	JZ      zdone; \
zloop: \
	ROW64; \
	VBROADCASTSS (SI)(AX*4), Z20; \
	VFMADD231PS  Z20, Z16, Z0; \
	VFMADD231PS  Z20, Z17, Z1; \
	VFMADD231PS  Z20, Z18, Z2; \
	VFMADD231PS  Z20, Z19, Z3; \
	VBROADCASTSS (R11)(AX*4), Z21; \
	VFMADD231PS  Z21, Z16, Z4; \
	VFMADD231PS  Z21, Z17, Z5; \
	VFMADD231PS  Z21, Z18, Z6; \
	VFMADD231PS  Z21, Z19, Z7; \
	VBROADCASTSS (R14)(AX*4), Z22; \
	VFMADD231PS  Z22, Z16, Z8; \
	VFMADD231PS  Z22, Z17, Z9; \
	VFMADD231PS  Z22, Z18, Z10; \
	VFMADD231PS  Z22, Z19, Z11; \
	VBROADCASTSS (R10)(AX*4), Z23; \
	VFMADD231PS  Z23, Z16, Z12; \
	VFMADD231PS  Z23, Z17, Z13; \
	VFMADD231PS  Z23, Z18, Z14; \
	VFMADD231PS  Z23, Z19, Z15; \
	ADDQ         R12, R8; \
	INCQ         AX; \
	CMPQ         AX, R13; \
	JB           zloop; \
zdone: \
	VMOVUPS Z0, (DI); \
	VMOVUPS Z1, 64(DI); \
	VMOVUPS Z2, 128(DI); \
	VMOVUPS Z3, 192(DI); \
	VMOVUPS Z4, (BX); \
	VMOVUPS Z5, 64(BX); \
	VMOVUPS Z6, 128(BX); \
	VMOVUPS Z7, 192(BX); \
	VMOVUPS Z8, (CX); \
	VMOVUPS Z9, 64(CX); \
	VMOVUPS Z10, 128(CX); \
	VMOVUPS Z11, 192(CX); \
	VMOVUPS Z12, (DX); \
	VMOVUPS Z13, 64(DX); \
	VMOVUPS Z14, 128(DX); \
	VMOVUPS Z15, 192(DX); \
	VZEROUPPER
