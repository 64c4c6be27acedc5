// Shared by int8_i16_amd64.s and int8_i16z_amd64.s: the frame and the end of a group
// of the one-query int16 scores of Int8 rows (dotInt8R4I16 and its ZMM twin), and
// SUMS4, which the Channel kernels use too.

// SUMS4 leaves in X0 the four int32 sums of the lanes of Y0..Y3 (lane r: Yr's),
// converted to float32.
#define SUMS4 \
	VPHADDD      Y1, Y0, Y0 \
	VPHADDD      Y3, Y2, Y2 \
	VPHADDD      Y2, Y0, Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPADDD       X1, X0, X0 \
	VCVTDQ2PS    X0, X0

// I16R4ARGS loads the arguments of dotInt8R4I16 (R4FRAME, r4frame_amd64.h) and X7,
// the query's D (after its d codes).
#define I16R4ARGS \
	R4FRAME                       \
	VBROADCASTSS (SI)(R14*2), X7

// I16R4GROUP starts a group of four rows (or jumps to done after the last): its
// accumulators Z0..Z3 zero (VEX zeroing clears the ZMM registers whole), BX, CX, DX
// its rows 1–3, their bytes ahead asked for (PREFETCH4, prefetch_amd64.h), AX the
// code index (the query's byte offset is 2·AX).
#define I16R4GROUP(done) \
	TESTQ R13, R13              \
	JZ    done                  \
	VPXOR Y0, Y0, Y0            \
	VPXOR Y1, Y1, Y1            \
	VPXOR Y2, Y2, Y2            \
	VPXOR Y3, Y3, Y3            \
	LEAQ  (R8)(R9*1), BX        \
	LEAQ  (R8)(R10*1), CX       \
	LEAQ  (R8)(R11*1), DX       \
	PREFETCH4(R8, BX, CX, DX)   \
	XORQ  AX, AX

// I16R4SCALE scales the four rows' sums X0 (rows R8, BX, CX, DX) by their f16 scales
// (lane r from row r) and then by D, stores them and steps to the next group.
#define I16R4SCALE \
	VPXOR     X1, X1, X1         \
	VPINSRW   $0, (R8), X1, X1   \
	VPINSRW   $1, (BX), X1, X1   \
	VPINSRW   $2, (CX), X1, X1   \
	VPINSRW   $3, (DX), X1, X1   \
	VCVTPH2PS X1, X1             \
	VMULPS    X1, X0, X0         \
	VMULPS    X7, X0, X0         \
	VMOVUPS   X0, (DI)           \
	ADDQ      $16, DI            \
	ADDQ      R12, R8            \
	DECQ      R13
