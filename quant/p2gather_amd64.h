// Shared by lossy_i8_amd64.s and addi16_amd64.s: the parameters of four rows' pairs
// of groups of 32, for the one-query kernels that take a row's two groups at once
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
