// Shared by lossy_asm_amd64.s and int8_i16_amd64.s: one step of a KIVI key block's
// pre-scaled query.

// CQHALF(off, qoff, y) widens the f16 scales and zeros of the 8 channels at off(DX)
// (scale, zero pairs), sets y to their pre-scaled query values q·scale (the query at
// qoff(SI)(AX*4)) and adds q·zero to Y7. It uses Y0..Y4.
#define CQHALF(off, qoff, y) \
	VCVTPH2PS   off(DX), Y0 \
	VCVTPH2PS   off+16(DX), Y1 \
	VSHUFPS     $0x88, Y1, Y0, Y2 \
	VSHUFPS     $0xdd, Y1, Y0, Y3 \
	VPERMPD     $0xd8, Y2, Y2 \
	VPERMPD     $0xd8, Y3, Y3 \
	VMOVUPS     qoff(SI)(AX*4), Y4 \
	VMULPS      Y2, Y4, y \
	VFMADD231PS Y3, Y4, Y7
