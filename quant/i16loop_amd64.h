// Shared by addi16_amd64.s and addi16z_amd64.s: the row loop of the integer value
// sums of 4-bit and 2-bit rows.

// I16LOOP runs BLOCK over the nb blocks of four rows from R9 (R10 stride, R11 nb),
// R12 at their rounded weights from PI(SP) on, 64 bytes per block; BLOCK moves R9 to
// the block's row 2 and leaves R13 at its row 3. Meanwhile it prefetches as many
// bytes past the last row as the rows span: the next call's rows when a cache
// block's heads follow one another, so that the next call's pass over the products
// does not wait for them. label is the expansion's own. Clobbers DX, R8, R12, R13.
#define I16LOOP(PI, BLOCK, label) \
	MOVQ  R11, DX        \
	LEAQ  PI(SP), R12    \
	MOVQ  R10, R8        \
	IMULQ R11, R8        \
	SHLQ  $2, R8         \
	ADDQ  R9, R8         \
label:                   \
	PREFETCHT0 (R8)            \
	PREFETCHT0 64(R8)          \
	PREFETCHT0 128(R8)         \
	LEAQ       (R8)(R10*4), R8 \
	LEAQ       (R9)(R10*1), R13 \
	BLOCK                      \
	LEAQ       (R13)(R10*1), R9 \
	ADDQ       $64, R12        \
	DECQ       DX              \
	JNZ        label
