// Shared by addi16_amd64.s and addi16z_amd64.s: the row loop of the integer value
// sums of 4-bit and 2-bit rows.

// I16LOOP runs BLOCK over the nb blocks of four rows from R9 (R10 stride, R11 nb),
// R12 at their rounded weights from PI(SP) on, STEP bytes per block; BLOCK moves R9
// to the block's row 2 and leaves R13 at its row 3. Meanwhile it prefetches (PF, from
// R8: I16PF3 or I16PF5 lines per block) as many rows as there are, twice their bytes
// past them or PFNEXT bytes if nearer (prefetch_amd64.h): the call after the next's
// rows when a cache block's heads follow one another, so that the pass over the
// products of the calls to come does not wait for them. label is the expansion's
// own. Clobbers DX, R8, R12, R13.
#define I16LOOP(PI, STEP, PF, BLOCK, label) \
	LEAQ    PI(SP), R12    \
	MOVQ    R10, R8        \
	IMULQ   R11, R8        \
	SHLQ    $3, R8         \
	MOVQ    $PFNEXT, DX    \
	CMPQ    R8, DX         \
	CMOVQHI DX, R8         \
	ADDQ    R9, R8         \
	MOVQ    R11, DX        \
label:                   \
	PF                          \
	LEAQ       (R8)(R10*4), R8  \
	LEAQ       (R9)(R10*1), R13 \
	BLOCK                       \
	LEAQ       (R13)(R10*1), R9 \
	ADDQ       $STEP, R12       \
	DECQ       DX               \
	JNZ        label

// I16PF3 and I16PF5 ask for the 3 or 5 lines from R8: four rows of 4-bit or 2-bit
// codes of 64 values (up to 160 bytes), or of Int8 ones (264 bytes).
#define I16PF3 \
	PREFETCHT0 (R8)    \
	PREFETCHT0 64(R8)  \
	PREFETCHT0 128(R8)

#define I16PF5 \
	I16PF3             \
	PREFETCHT0 192(R8) \
	PREFETCHT0 256(R8)
