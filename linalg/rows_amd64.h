// Macros shared by the weight-row kernels (q8_amd64.s, q45_amd64.s, q4k_amd64.s,
// q6k_amd64.s).

// ONES16 sets Y15 to sixteen int16 ones.
#define ONES16 \
	VPCMPEQW Y15, Y15, Y15 \
	VPSRLW   $15, Y15, Y15

// DWORDS8 sets y (x its low half) to 8 copies of the 32-bit value v (AX scratch).
#define DWORDS8(v, x, y) \
	MOVL         $(v), AX \
	VMOVD        AX, x \
	VPBROADCASTD x, y

// BYTES32 sets y (x its low half) to 32 copies of the byte b (AX scratch).
#define BYTES32(b, x, y) DWORDS8(b*0x01010101, x, y)

// HSUM leaves in x (y's low half) the sum of y's lanes; X1 is scratch.
#define HSUM(y, x) \
	VEXTRACTF128 $1, y, X1 \
	VADDPS       X1, x, x \
	VHADDPS      x, x, x \
	VHADDPS      x, x, x

// HSUM0 leaves in X0 the sum of Y0's lanes.
#define HSUM0 HSUM(Y0, X0)
