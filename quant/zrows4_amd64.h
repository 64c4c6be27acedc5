// Shared by the ZMM four-query score kernels (lossy_i8z_amd64.s, int8_i16z_amd64.s,
// rows_fp8z_amd64.s), the one-query 2-bit ZMM scores (lossy_i8_amd64.s: ztr4) and
// the ZMM integer adds (addi16z_amd64.s: Z16ZERO8); file-local symbols, so each file
// that includes this has its own copy. The blocks of four rows of the four-query
// score kernels in int8_i16z and rows_fp8z: rows R8, R15, CX, DX (stride R12), scores
// to DI + q·BX (ldb).

// ztr4 is the VPERMPS index of the 4×4 transpose of a ZMM register's dwords: lane r
// holding row r's scores of four queries becomes lane q holding query q's scores of
// the four rows, ready to store per query.
DATA ztr4<>+0(SB)/8, $0x0000000400000000
DATA ztr4<>+8(SB)/8, $0x0000000c00000008
DATA ztr4<>+16(SB)/8, $0x0000000500000001
DATA ztr4<>+24(SB)/8, $0x0000000d00000009
DATA ztr4<>+32(SB)/8, $0x0000000600000002
DATA ztr4<>+40(SB)/8, $0x0000000e0000000a
DATA ztr4<>+48(SB)/8, $0x0000000700000003
DATA ztr4<>+56(SB)/8, $0x0000000f0000000b
GLOBL ztr4<>(SB), RODATA|NOPTR, $64

// zspread4 is the VPERMPS index that spreads four floats, one per row, to their lanes
// (x_r four times in lane r).
DATA zspread4<>+0(SB)/8, $0x0000000000000000
DATA zspread4<>+8(SB)/8, $0x0000000000000000
DATA zspread4<>+16(SB)/8, $0x0000000100000001
DATA zspread4<>+24(SB)/8, $0x0000000100000001
DATA zspread4<>+32(SB)/8, $0x0000000200000002
DATA zspread4<>+40(SB)/8, $0x0000000200000002
DATA zspread4<>+48(SB)/8, $0x0000000300000003
DATA zspread4<>+56(SB)/8, $0x0000000300000003
GLOBL zspread4<>(SB), RODATA|NOPTR, $64

// ZREDUCE4 leaves in out the sums of the four dwords of each lane of q0..q3 (the
// four queries' accumulators), lane l = [q0 q1 q2 q3] of lane l: two levels of
// unpacking and adding (ZREDUCEOP with VPADDD).
#define ZREDUCE4(q0, q1, q2, q3, out) ZREDUCEOP(VPADDD, q0, q1, q2, q3, out)

// ZREDUCEOP is ZREDUCE4 with the operation OP (VPADDD, VADDPS, VMAXPS) for the adds.
// Z12, Z13 scratch.
#define ZREDUCEOP(OP, q0, q1, q2, q3, out) \
	VPUNPCKLDQ  q1, q0, Z12   \
	VPUNPCKHDQ  q1, q0, Z13   \
	OP          Z13, Z12, Z12 \
	VPUNPCKLDQ  q3, q2, Z13   \
	VPUNPCKHDQ  q3, q2, out   \
	OP          out, Z13, Z13 \
	VPUNPCKLQDQ Z13, Z12, out \
	VPUNPCKHQDQ Z13, Z12, Z12 \
	OP          Z12, out, out

// ZROWS4 points R15, CX and DX at the three rows after R8 (R12 bytes apart).
#define ZROWS4 \
	LEAQ (R8)(R12*1), R15 \
	LEAQ (R15)(R12*1), CX \
	LEAQ (CX)(R12*1), DX

// ZROWF16 leaves in z the f16 at off of each of the four rows, widened and spread to
// the row's lane by the index spread (zspread4); x is z's low quarter.
#define ZROWF16(off, x, z, spread) \
	VPXOR     x, x, x              \
	VPINSRW   $0, off(R8), x, x    \
	VPINSRW   $1, off(R15), x, x   \
	VPINSRW   $2, off(CX), x, x    \
	VPINSRW   $3, off(DX), x, x    \
	VCVTPH2PS x, x                 \
	VPERMPS   z, spread, z

// ZSTORE4 transposes z (lane r: row r's scores of four queries; x its low quarter) by
// tr (ztr4), stores lane q to DI + q·BX and steps DI and R8 to the next block of four
// rows. AX scratch.
#define ZSTORE4(x, z, tr) \
	VPERMPS       z, tr, z          \
	LEAQ          (BX)(BX*2), AX    \
	VMOVUPS       x, (DI)           \
	VEXTRACTF32X4 $1, z, (DI)(BX*1) \
	VEXTRACTF32X4 $2, z, (DI)(BX*2) \
	VEXTRACTF32X4 $3, z, (DI)(AX*1) \
	ADDQ          $16, DI           \
	LEAQ          (R8)(R12*4), R8

// Z16ZERO8 clears Z16..Z23.
#define Z16ZERO8 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23
