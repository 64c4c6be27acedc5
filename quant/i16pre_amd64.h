// Shared by addi16_amd64.s and addi16z_amd64.s: the prologue of the integer one-query
// value sums of 4-bit and 2-bit rows (addU4Q1I16, addU2Q1I16 and their ZMM twins),
// which fills their frame.
//
// Frame (hardware SP): the products p, 32 bytes per block of four rows, at 0; their
// int16 roundings π, as the weight vectors of the block's two row pairs (U4PAIR), 64
// bytes per block, at I16PI; the two groups' factors P and zero sums Z, 8 float32s
// each (lanes 0–3 the first group's, 4–7 the second's), at I16P and I16Z.

#define I16PI 512
#define I16P 1536
#define I16Z 1568

DATA i16abs<>+0(SB)/8, $0x7fffffff7fffffff
DATA i16abs<>+8(SB)/8, $0x7fffffff7fffffff
DATA i16abs<>+16(SB)/8, $0x7fffffff7fffffff
DATA i16abs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL i16abs<>(SB), RODATA|NOPTR, $32

// 32767 and the smallest largest-product that gets code terms (2^-112: below 2^-113,
// 32767/m would overflow).
DATA i16c<>+0(SB)/4, $0x46fffe00
DATA i16c<>+4(SB)/4, $0x07800000
GLOBL i16c<>(SB), RODATA|NOPTR, $8

// HALVES leaves in every lane of each 128-bit half of y the OP (VMAXPS, VADDPS) of
// the half's four lanes: per group of the pair, its largest product or its sum.
// Clobbers Y8.
#define HALVES(OP, y) \
	VPERMILPS $0x4e, y, Y8 \
	OP        Y8, y, y     \
	VPERMILPS $0xb1, y, Y8 \
	OP        Y8, y, y

// I16ARGS loads the arguments: DI a, SI w, R9 cp, R10 stride, R11 nb, CX gb.
#define I16ARGS \
	MOVQ a+0(FP), DI        \
	MOVQ w+8(FP), SI        \
	MOVQ cp+16(FP), R9      \
	MOVQ stride+24(FP), R10 \
	MOVQ nb+32(FP), R11     \
	MOVQ gb+40(FP), CX

// I16PRE fills the frame from the nb blocks of four rows (I16ARGS's registers): per
// block, the rows' scales and zeros of both groups (P2SZ) times their weights give
// the products p (stored) and the zero sums (Y15, per lane); then per group m =
// max|p|, P = m/32767 plus Σp·0 (NaN when a product is not finite), Z = the zero sum,
// and π = round(p·32767/m) (0 when m < 2^-112). Leaves R9 = cp; clobbers BX, DX, R8,
// R12..R14, Y6..Y15.
#define I16PRE I16PREX(P2SZ)

// I16PREX is I16PRE with GATHER(r0, r1, r2, r3) in P2SZ's place (the same registers
// out; it may read R9 alone).
#define I16PREX(GATHER) \
	I16PASS1(GATHER) \
	I16ROUND

// I16PASS1 is I16PRE up to the roundings: it leaves Y10 = 32767/m (lanes 0–3 the
// first group's, 4–7 the second's; 0 when m < 2^-112) for the products at 0(SP).
#define I16PASS1(GATHER) \
	MOVQ   R9, R14        \
	MOVQ   R11, DX        \
	MOVQ   SP, R8         \
	VXORPS Y7, Y7, Y7     \
	VXORPS Y13, Y13, Y13  \
	VXORPS Y14, Y14, Y14  \
	VXORPS Y15, Y15, Y15  \
i16blk:                   \
	LEAQ           (R9)(R10*1), R13      \
	LEAQ           (R13)(R10*1), R12     \
	LEAQ           (R12)(R10*1), BX      \
	GATHER(R9, R13, R12, BX)             \
	VBROADCASTF128 (SI), Y12             \
	VMULPS         Y12, Y10, Y10         \
	VFMADD231PS    Y12, Y11, Y15         \
	VFMADD231PS    Y7, Y10, Y13          \
	VMOVUPS        Y10, (R8)             \
	VANDPS         i16abs<>(SB), Y10, Y10 \
	VMAXPS         Y10, Y14, Y14         \
	LEAQ           (BX)(R10*1), R9       \
	ADDQ           $16, SI               \
	ADDQ           $32, R8               \
	DECQ           DX                    \
	JNZ            i16blk                \
	MOVQ           R14, R9               \
	HALVES(VMAXPS, Y14)                  \
	HALVES(VADDPS, Y13)                  \
	HALVES(VADDPS, Y15)                  \
	VMOVUPS        Y15, I16Z(SP)         \
	VBROADCASTSS   i16c<>(SB), Y9        \
	VDIVPS         Y9, Y14, Y11          \
	VADDPS         Y13, Y11, Y11         \
	VMOVUPS        Y11, I16P(SP)         \
	VDIVPS         Y14, Y9, Y10          \
	VBROADCASTSS   i16c<>+4(SB), Y9      \
	VCMPPS         $0x1d, Y9, Y14, Y8    \
	VANDPS         Y8, Y10, Y10

// I16ROUND stores the roundings π = round(p·Y10) of the products as the weight
// vectors of each block's two row pairs (U4PAIR: 64 bytes per block) at I16PI.
#define I16ROUND \
	VMOVDQU        p2perm<>(SB), Y6      \
	VMOVDQU        p2perm<>+32(SB), Y7   \
	MOVQ           R11, DX               \
	MOVQ           SP, R8                \
	LEAQ           I16PI(SP), R12        \
i16round:                                \
	VMULPS         (R8), Y10, Y8         \
	VCVTPS2DQ      Y8, Y8                \
	VEXTRACTI128   $1, Y8, X9            \
	VPACKSSDW      X9, X8, X8            \
	VPERMD         Y8, Y6, Y9            \
	VPERMD         Y8, Y7, Y8            \
	VMOVDQU        Y9, (R12)             \
	VMOVDQU        Y8, 32(R12)           \
	ADDQ           $32, R8               \
	ADDQ           $64, R12              \
	DECQ           DX                    \
	JNZ            i16round
