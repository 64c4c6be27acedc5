// SPLIT16 and JOIN16: the even/odd split of 16 float32s that the 4-bit kernels of
// lossy_asm_amd64.s and lossy_q4_amd64.s share (Y14 and Y15 are their scratch).

// SPLIT16 loads the 16 floats at addr as their even (e) and odd (o) values, the
// order of 4-bit codes widened by VPMOVZXBD (byte & 15, byte >> 4): VSHUFPS picks the
// even (odd) lanes of two vectors within 128-bit halves and VPERMPD $0xD8 puts the
// halves' pairs in order.
#define SPLIT16(addr, addr32, e, o) \
	VMOVUPS addr, Y14            \
	VMOVUPS addr32, Y15          \
	VSHUFPS $0x88, Y15, Y14, e   \
	VSHUFPS $0xdd, Y15, Y14, o   \
	VPERMPD $0xd8, e, e          \
	VPERMPD $0xd8, o, o

// JOIN16 stores the split 16 floats e, o in column order at addr (addr32); e and o
// are clobbered.
#define JOIN16(e, o, addr, addr32) \
	VPERMPD   $0xd8, e, e    \
	VPERMPD   $0xd8, o, o    \
	VUNPCKLPS o, e, Y14      \
	VUNPCKHPS o, e, Y15      \
	VMOVUPS   Y14, addr      \
	VMOVUPS   Y15, addr32
