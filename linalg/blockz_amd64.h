// Macros of the exact one-token kernels of the 32-value block types with AVX-512 VNNI
// (q8z_amd64.s, q45z_amd64.s): per block the exact integer dot I of the weight codes
// with the activation codes, then s = s + (d_w(b)·xd[b])·float32(I), three rounded
// float32 operations, block after block. The weights' codes are dotted unsigned
// (VPDPBUSD: u8 × s8) against the signed activation codes, and the codes' offset times
// the activation block's code sum xsum[b] taken off after: Σ (c+o)·x = I + o·xsum.
// A kernel keeps in R8 the row's next block, DI its activation codes, R13 their scales
// xd, R14 their code sums, X0 the row's sum.

// F16X4 leaves in R9 the four binary16 values at a, b, c and d, a's in bits 0–15 and
// d's in bits 48–63; R10 is scratch.
#define F16X4(a, b, c, d) \
	MOVWQZX a, R9 \
	MOVWQZX b, R10 \
	SHLQ    $16, R10 \
	ORQ     R10, R9 \
	MOVWQZX c, R10 \
	SHLQ    $32, R10 \
	ORQ     R10, R9 \
	MOVWQZX d, R10 \
	SHLQ    $48, R10 \
	ORQ     R10, R9

// ADD4SS adds X6's four lanes to X0 one after the other, lane 0 first; X7 is scratch.
#define ADD4SS \
	VADDSS    X6, X0, X0 \
	VMOVSHDUP X6, X7 \
	VADDSS    X7, X0, X0 \
	VPERMILPS $0xAA, X6, X7 \
	VADDSS    X7, X0, X0 \
	VPERMILPS $0xFF, X6, X7 \
	VADDSS    X7, X0, X0

// R1DOT(CODES, woff, xoff, dst): the eight partial sums of the block at woff(R8),
// whose unsigned codes CODES(woff) leaves in Y1, against the activation codes at
// xoff(DI), into dst.
#define R1DOT(CODES, woff, xoff, dst) \
	CODES(woff) \
	VPXOR    dst, dst, dst \
	VPDPBUSD xoff(DI), Y1, dst

// R1BLOCKS8(CODES, blk, shift): eight blocks of blk bytes added to X0: their dots by
// R1DOT into Y5..Y12, one transposing reduction to the eight blocks' sums, less
// xsum[b] << shift (the codes' offset is 1 << shift), converted and scaled in one
// vector, then added block after block; R8, DI, R13 and R14 moved past them. Y6, Y7,
// X13, R9 and R10 are scratch.
#define R1BLOCKS8(CODES, blk, shift) \
	PREFETCHT0   4096(R8) \
	PREFETCHT0   4160(R8) \
	PREFETCHT0   4224(R8) \
	PREFETCHT0   4288(R8) \
	PREFETCHT0   4352(R8) \
	R1DOT(CODES, 0, 0, Y5) \
	R1DOT(CODES, blk, 32, Y6) \
	R1DOT(CODES, (2*blk), 64, Y7) \
	R1DOT(CODES, (3*blk), 96, Y8) \
	R1DOT(CODES, (4*blk), 128, Y9) \
	R1DOT(CODES, (5*blk), 160, Y10) \
	R1DOT(CODES, (6*blk), 192, Y11) \
	R1DOT(CODES, (7*blk), 224, Y12) \
	VPHADDD      Y6, Y5, Y5 \
	VPHADDD      Y8, Y7, Y7 \
	VPHADDD      Y10, Y9, Y9 \
	VPHADDD      Y12, Y11, Y11 \
	VPHADDD      Y7, Y5, Y5 \
	VPHADDD      Y11, Y9, Y9 \
	VPERM2I128   $0x20, Y9, Y5, Y6 \
	VPERM2I128   $0x31, Y9, Y5, Y7 \
	VPADDD       Y7, Y6, Y6 \
	VMOVDQU      (R14), Y7 \
	VPSLLD       $shift, Y7, Y7 \
	VPSUBD       Y7, Y6, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	F16X4(0(R8), blk(R8), (2*blk)(R8), (3*blk)(R8)) \
	VMOVQ        R9, X13 \
	F16X4((4*blk)(R8), (5*blk)(R8), (6*blk)(R8), (7*blk)(R8)) \
	VPINSRQ      $1, R9, X13, X13 \
	VCVTPH2PS    X13, Y13 \
	VMULPS       (R13), Y13, Y13 \
	VMULPS       Y13, Y6, Y6 \
	ADD4SS \
	VEXTRACTF128 $1, Y6, X6 \
	ADD4SS \
	ADDQ         $(8*blk), R8 \
	ADDQ         $256, DI \
	ADDQ         $32, R13 \
	ADDQ         $32, R14

// R1BLOCK(CODES, blk, shift): R1BLOCKS8 for one block. Y2, Y3, X4, R9 and R10 are
// scratch.
#define R1BLOCK(CODES, blk, shift) \
	PREFETCHT0   4096(R8) \
	CODES(0) \
	VPXOR        Y2, Y2, Y2 \
	VPDPBUSD     (DI), Y1, Y2 \
	VEXTRACTI128 $1, Y2, X3 \
	VPADDD       X3, X2, X2 \
	VPSHUFD      $0x4E, X2, X3 \
	VPADDD       X3, X2, X2 \
	VPSHUFD      $0xB1, X2, X3 \
	VPADDD       X3, X2, X2 \
	VMOVD        X2, R9 \
	MOVL         (R14), R10 \
	SHLL         $shift, R10 \
	SUBL         R10, R9 \
	VCVTSI2SSL   R9, X3, X3 \
	MOVWQZX      (R8), R10 \
	VMOVD        R10, X4 \
	VCVTPH2PS    X4, X4 \
	VMULSS       (R13), X4, X4 \
	VMULSS       X4, X3, X3 \
	VADDSS       X3, X0, X0 \
	ADDQ         $blk, R8 \
	ADDQ         $32, DI \
	ADDQ         $4, R13 \
	ADDQ         $4, R14
