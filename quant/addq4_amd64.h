// Shared by rows_f16c_amd64.s and rows_fp8_amd64.s: the four-query add kernels
// (add*Q4*), whose Go declarations all read
//
//	func(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)
//
// For the queries r < 4, the 16 accumulators at acc + r·as get Σ_{i<n} w_r[i]·row_i,
// w_r at w + r·ws, row i's 16 values at codes + i·stride. A kernel is
//
//	Q4ARGS; [constants its loader needs;] ADDQ4(ROW16); RET

// Q4ARGS loads the arguments: DI, BX, CX, DX the accumulators of queries 0..3, SI,
// R11, R14, R10 their weights, R8 the first row, R12 the stride, R13 n.
#define Q4ARGS \
	MOVQ acc+0(FP), DI; \
	MOVQ as+8(FP), R9; \
	MOVQ w+16(FP), SI; \
	MOVQ ws+24(FP), R10; \
	MOVQ codes+32(FP), R8; \
	MOVQ stride+40(FP), R12; \
	MOVQ n+48(FP), R13; \
	LEAQ (DI)(R9*1), BX; \
	LEAQ (BX)(R9*1), CX; \
	LEAQ (CX)(R9*1), DX; \
	LEAQ (SI)(R10*1), R11; \
	LEAQ (R11)(R10*1), R14; \
	LEAQ (R14)(R10*1), R10

// ADDQ4(ROW16) is the loop: ROW16 loads row i's 16 values at R8 as float32 into Y8
// and Y9, once for the four queries; it may use Y12..Y15 (constants the kernel set
// up before ADDQ4) and must leave every other register alone (AX is the row index).
// It ends with VZEROUPPER.
#define ADDQ4(ROW16) \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS (BX), Y2; \
	VMOVUPS 32(BX), Y3; \
	VMOVUPS (CX), Y4; \
	VMOVUPS 32(CX), Y5; \
	VMOVUPS (DX), Y6; \
	VMOVUPS 32(DX), Y7; \
	XORQ    AX, AX; \
	TESTQ   R13, R13; \
	JZ      pdone; \
ploop: \
	ROW16; \
	VBROADCASTSS (SI)(AX*4), Y10; \
	VFMADD231PS  Y10, Y8, Y0; \
	VFMADD231PS  Y10, Y9, Y1; \
	VBROADCASTSS (R11)(AX*4), Y11; \
	VFMADD231PS  Y11, Y8, Y2; \
	VFMADD231PS  Y11, Y9, Y3; \
	VBROADCASTSS (R14)(AX*4), Y10; \
	VFMADD231PS  Y10, Y8, Y4; \
	VFMADD231PS  Y10, Y9, Y5; \
	VBROADCASTSS (R10)(AX*4), Y11; \
	VFMADD231PS  Y11, Y8, Y6; \
	VFMADD231PS  Y11, Y9, Y7; \
	ADDQ         R12, R8; \
	INCQ         AX; \
	CMPQ         AX, R13; \
	JB           ploop; \
pdone: \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, (BX); \
	VMOVUPS Y3, 32(BX); \
	VMOVUPS Y4, (CX); \
	VMOVUPS Y5, 32(CX); \
	VMOVUPS Y6, (DX); \
	VMOVUPS Y7, 32(DX); \
	VZEROUPPER
