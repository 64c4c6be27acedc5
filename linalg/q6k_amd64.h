// Macros shared by the Q6_K kernels (q6k_amd64.s, q6kz_amd64.s).

// Q6KCODES(k) leaves in Y4 the 6-bit codes of block k (0..3) of a half super-block
// whose low bits are in Y1 (bytes 0..31) and Y2 (32..63), high bits in Y3: low nibbles
// of Y1 (k = 0) or Y2 (k = 1), high nibbles of Y1 (k = 2) or Y2 (k = 3), with bits 2k,
// 2k+1 of Y3 as bits 4, 5. Y13: bytes 0x30, Y14: bytes 0x0f; Y7 scratch.
#define Q6KCODE0 \
	VPAND  Y14, Y1, Y4 \
	VPSLLW $4, Y3, Y7 \
	VPAND  Y13, Y7, Y7 \
	VPOR   Y7, Y4, Y4
#define Q6KCODE1 \
	VPAND  Y14, Y2, Y4 \
	VPSLLW $2, Y3, Y7 \
	VPAND  Y13, Y7, Y7 \
	VPOR   Y7, Y4, Y4
#define Q6KCODE2 \
	VPSRLW $4, Y1, Y4 \
	VPAND  Y14, Y4, Y4 \
	VPAND  Y13, Y3, Y7 \
	VPOR   Y7, Y4, Y4
#define Q6KCODE3 \
	VPSRLW $4, Y2, Y4 \
	VPAND  Y14, Y4, Y4 \
	VPSRLW $2, Y3, Y7 \
	VPAND  Y13, Y7, Y7 \
	VPOR   Y7, Y4, Y4

// Q6KLOAD(lo, hi) loads half a super-block at SI: its low bits from lo(SI) into Y1 and
// Y2, its high bits from hi(SI) into Y3.
#define Q6KLOAD(lo, hi) \
	VMOVDQU lo(SI), Y1 \
	VMOVDQU (lo+32)(SI), Y2 \
	VMOVDQU hi(SI), Y3
