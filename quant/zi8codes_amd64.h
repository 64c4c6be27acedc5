// Shared by lossy_i8z_amd64.s and lossy_i8_amd64.s (file-local symbols, so each file
// that includes this has its own copy): the reading of four rows' 4-bit and 2-bit
// codes into ZMM registers, one row per 128-bit lane, for the ZMM integer score
// kernels (the four-query ones and the one-query twins).

// zi8nib and zi8two: the 4-bit and the 2-bit code masks, broadcast to Z1.
DATA zi8nib<>+0(SB)/4, $0x0f0f0f0f
GLOBL zi8nib<>(SB), RODATA|NOPTR, $4

DATA zi8two<>+0(SB)/4, $0x03030303
GLOBL zi8two<>(SB), RODATA|NOPTR, $4

// zi8sh2 holds the 2-bit codes' qword spread (VPERMQ: row r's 8 code bytes to both
// qwords of lane r) and shifts (VPSRLVQ: 0 and 2, then 4 and 6).
DATA zi8sh2<>+0(SB)/8, $0
DATA zi8sh2<>+8(SB)/8, $0
DATA zi8sh2<>+16(SB)/8, $1
DATA zi8sh2<>+24(SB)/8, $1
DATA zi8sh2<>+32(SB)/8, $2
DATA zi8sh2<>+40(SB)/8, $2
DATA zi8sh2<>+48(SB)/8, $3
DATA zi8sh2<>+56(SB)/8, $3
DATA zi8sh2<>+64(SB)/8, $0
DATA zi8sh2<>+72(SB)/8, $2
DATA zi8sh2<>+80(SB)/8, $0
DATA zi8sh2<>+88(SB)/8, $2
DATA zi8sh2<>+96(SB)/8, $0
DATA zi8sh2<>+104(SB)/8, $2
DATA zi8sh2<>+112(SB)/8, $0
DATA zi8sh2<>+120(SB)/8, $2
DATA zi8sh2<>+128(SB)/8, $4
DATA zi8sh2<>+136(SB)/8, $6
DATA zi8sh2<>+144(SB)/8, $4
DATA zi8sh2<>+152(SB)/8, $6
DATA zi8sh2<>+160(SB)/8, $4
DATA zi8sh2<>+168(SB)/8, $6
DATA zi8sh2<>+176(SB)/8, $4
DATA zi8sh2<>+184(SB)/8, $6
GLOBL zi8sh2<>(SB), RODATA|NOPTR, $192

// ZI8CODES4 leaves in Z3 the low nibbles and in Z4 the high nibbles of the 16 code
// bytes at off of each of the four rows R8..R11, row r in lane r (Z1: byte masks
// 0x0f).
#define ZI8CODES4(off) \
	VMOVDQU      off(R8), X3          \
	VINSERTI32X4 $1, off(R9), Z3, Z3  \
	VINSERTI32X4 $2, off(R10), Z3, Z3 \
	VINSERTI32X4 $3, off(R11), Z3, Z3 \
	VPSRLW       $4, Z3, Z4           \
	VPANDD       Z1, Z3, Z3           \
	VPANDD       Z1, Z4, Z4

// ZI8CODES2 leaves in lane r of Z3 the codes of shifts 0 and 2 and in lane r of Z4
// those of shifts 4 and 6 of the 8 code bytes at off of row r (R8..R11): UNPACK2's
// order, 8 bytes per shift. Z1: byte masks 0x03; Z19 the qword spread, Z20 and Z21
// the shifts (zi8sh2); X5, X6 scratch.
#define ZI8CODES2(off) \
	VMOVQ       off(R8), X5          \
	VPINSRQ     $1, off(R9), X5, X5  \
	VMOVQ       off(R10), X6         \
	VPINSRQ     $1, off(R11), X6, X6 \
	VINSERTI128 $1, X6, Y5, Y5       \
	VPERMQ      Z5, Z19, Z5          \
	VPSRLVQ     Z20, Z5, Z3          \
	VPSRLVQ     Z21, Z5, Z4          \
	VPANDD      Z1, Z3, Z3           \
	VPANDD      Z1, Z4, Z4
