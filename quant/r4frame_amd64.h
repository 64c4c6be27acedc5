// Shared by the files of the one-query score kernels of four rows at a time (the
// r4Kernel frame of rows_glue_amd64.go: dotF16R4, dotBF16R4asm, dotInt8R4I16 and
// the FP8 dot*R4 kernels, which take two more arguments after it).

// R4FRAME loads the r4Kernel arguments: DI out, SI q, R8 the first group's first row,
// R9..R11 the offsets of its other rows, R12 the step between groups, R13 the groups,
// R14 d. go vet does not check names and offsets inside macros: the kernels' tests
// against their twins are what would catch a wrong one.
#define R4FRAME \
	MOVQ out+0(FP), DI     \
	MOVQ q+8(FP), SI       \
	MOVQ src+16(FP), R8    \
	MOVQ o1+24(FP), R9     \
	MOVQ o2+32(FP), R10    \
	MOVQ o3+40(FP), R11    \
	MOVQ gstep+48(FP), R12 \
	MOVQ ng+56(FP), R13    \
	MOVQ d+64(FP), R14
