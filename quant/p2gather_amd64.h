// Shared by lossy_i8_amd64.s and addi16_amd64.s (file-local symbols, so each file
// that includes this has its own copy): the parameters of four rows' pairs of groups
// of 32, for the one-query kernels that take a row's two groups at once
// (dotU4RowsI8P2, add*Q1I16).

// P2SZ gathers the f16 scale and zero (the 4 bytes before a group's codes) of two
// groups of four rows, the first group's codes of row r at r0..r3 and the second's
// CX bytes after, and widens them: Y10 the scales, Y11 the zeros, each rows 0–3 of
// the first group in the low half and of the second in the high half (VSHUFPS picks
// the scales and the zeros of the two widened vectors, rows 0–1 and 2–3). X8, X9
// scratch.
#define P2SZ(r0, r1, r2, r3) \
	VMOVD     -4(r0), X8                \
	VPINSRD   $1, -4(r1), X8, X8        \
	VPINSRD   $2, -4(r0)(CX*1), X8, X8  \
	VPINSRD   $3, -4(r1)(CX*1), X8, X8  \
	VMOVD     -4(r2), X9                \
	VPINSRD   $1, -4(r3), X9, X9        \
	VPINSRD   $2, -4(r2)(CX*1), X9, X9  \
	VPINSRD   $3, -4(r3)(CX*1), X9, X9  \
	VCVTPH2PS X8, Y8                    \
	VCVTPH2PS X9, Y9                    \
	VSHUFPS   $0x88, Y9, Y8, Y10        \
	VSHUFPS   $0xdd, Y9, Y8, Y11

// VPERMPS/VPERMD indexes for a pair of groups k, k+1 whose values sit as
// [x_k y_k x_k+1 y_k+1] in the low four lanes: p2perm gives x_k four times in the low
// half and x_k+1 in the high half, p2perm+32 the same of y (the scores' scale and
// zero, the value sums' weights of row pairs 0–1 and 2–3).
DATA p2perm<>+0(SB)/8, $0x0000000000000000
DATA p2perm<>+8(SB)/8, $0x0000000000000000
DATA p2perm<>+16(SB)/8, $0x0000000200000002
DATA p2perm<>+24(SB)/8, $0x0000000200000002
DATA p2perm<>+32(SB)/8, $0x0000000100000001
DATA p2perm<>+40(SB)/8, $0x0000000100000001
DATA p2perm<>+48(SB)/8, $0x0000000300000003
DATA p2perm<>+56(SB)/8, $0x0000000300000003
GLOBL p2perm<>(SB), RODATA|NOPTR, $64
