// Shared by rows_f16c_amd64.s, rows_bf16_amd64.s and rows_fp8_amd64.s: the
// accumulators of the one-query score kernels (dot*R4, four rows at a time) in their
// YMM form (two per row, Y0..Y7: values 0–7 and 8–15 of every 16) and their ZMM form
// (one per row, Z0..Z3, whose halves are those two), for the kernel bodies' ZERO and
// FOLD steps.

// R4YZERO, R4ZZERO: the YMM and the ZMM accumulators cleared.
#define R4YZERO \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

#define R4ZZERO \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3

// R4YFOLD adds each row's second accumulator to its first; R4ZFOLD first moves the
// high halves of the ZMM accumulators to Y4..Y7.
#define R4YFOLD \
	VADDPS Y4, Y0, Y0; \
	VADDPS Y5, Y1, Y1; \
	VADDPS Y6, Y2, Y2; \
	VADDPS Y7, Y3, Y3

#define R4ZFOLD \
	VEXTRACTF64X4 $1, Z0, Y4; \
	VEXTRACTF64X4 $1, Z1, Y5; \
	VEXTRACTF64X4 $1, Z2, Y6; \
	VEXTRACTF64X4 $1, Z3, Y7; \
	R4YFOLD
