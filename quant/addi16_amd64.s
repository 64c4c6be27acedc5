//go:build amd64

#include "textflag.h"
#include "p2gather_amd64.h"
#include "prefetch_amd64.h"
#include "i16loop_amd64.h"
#include "i16pre_amd64.h"

// The integer one-query value sums of 4-bit and 2-bit Affine rows in pairs of groups
// of 32 (addU4Q1I16, addU2Q1I16); declarations, contracts and the Go twin in
// addi16_amd64.go; their frame and prologue (I16PRE) in i16pre_amd64.h.

// Word masks of a 4-bit and a 2-bit code.
DATA nib16<>+0(SB)/8, $0x000f000f000f000f
DATA nib16<>+8(SB)/8, $0x000f000f000f000f
DATA nib16<>+16(SB)/8, $0x000f000f000f000f
DATA nib16<>+24(SB)/8, $0x000f000f000f000f
GLOBL nib16<>(SB), RODATA|NOPTR, $32

DATA two16<>+0(SB)/8, $0x0003000300030003
DATA two16<>+8(SB)/8, $0x0003000300030003
DATA two16<>+16(SB)/8, $0x0003000300030003
DATA two16<>+24(SB)/8, $0x0003000300030003
GLOBL two16<>(SB), RODATA|NOPTR, $32

// U4PAIR adds the codes of rows A and B times the weight vector at W (the pair's
// [π_A, π_B] of the first group in the low half, of the second in the high half)
// into Y0..Y7, as int32: each row's two groups of 16 code bytes are loaded into the
// two halves of a vector, VPUNPCK*BW interleaves the rows' bytes and then widens them
// to words (unpacking with the zero Y15), the low and high nibbles are the even and
// odd columns, and VPMADDWD sums both rows' terms per column. Y2j and Y2j+1 get the
// even and odd columns of 8j..8j+7, the first group's in the low half.
#define U4PAIR(A, B, W) \
	VMOVDQU     (A), X8               \
	VINSERTI128 $1, (A)(CX*1), Y8, Y8 \
	VMOVDQU     (B), X9               \
	VINSERTI128 $1, (B)(CX*1), Y9, Y9 \
	VPUNPCKHBW  Y9, Y8, Y10           \
	VPUNPCKLBW  Y9, Y8, Y8            \
	VPUNPCKHBW  Y15, Y8, Y9           \
	VPUNPCKLBW  Y15, Y8, Y8           \
	VPUNPCKHBW  Y15, Y10, Y11         \
	VPUNPCKLBW  Y15, Y10, Y10         \
	U4NIBBLES(Y8, W, Y0, Y1)          \
	U4NIBBLES(Y9, W, Y2, Y3)          \
	U4NIBBLES(Y10, W, Y4, Y5)         \
	U4NIBBLES(Y11, W, Y6, Y7)

// U4NIBBLES adds the low and high nibbles of the words in x, times the weights at W,
// into ae and ao. Clobbers x, Y12, Y13.
#define U4NIBBLES(x, W, ae, ao) \
	VPAND    nib16<>(SB), x, Y12 \
	VPSRLW   $4, x, Y13          \
	VPMADDWD W, Y12, Y12         \
	VPMADDWD W, Y13, Y13         \
	VPADDD   Y12, ae, ae         \
	VPADDD   Y13, ao, ao

// U2PAIR adds the codes of one group of rows A and B (8 bytes each) times the
// weight pair [π_A, π_B] broadcast from W into a0..a3, as int32: VPUNPCKLBW
// interleaves the two rows' code bytes and VPMOVZXBW widens them to words, word j
// holding codes 4j+m at bits 2m, so a_m's lane j sums column 4j+m.
#define U2PAIR(A, B, W, a0, a1, a2, a3) \
	VPBROADCASTD W, Y12              \
	VMOVQ      A, X8                 \
	VMOVQ      B, X9                 \
	VPUNPCKLBW X9, X8, X8            \
	VPMOVZXBW  X8, Y8                \
	VPAND      two16<>(SB), Y8, Y9   \
	VPSRLW     $2, Y8, Y10           \
	VPAND      two16<>(SB), Y10, Y10 \
	VPSRLW     $4, Y8, Y11           \
	VPAND      two16<>(SB), Y11, Y11 \
	VPSRLW     $6, Y8, Y8            \
	VPMADDWD   Y12, Y9, Y9           \
	VPMADDWD   Y12, Y10, Y10         \
	VPMADDWD   Y12, Y11, Y11         \
	VPMADDWD   Y12, Y8, Y8           \
	VPADDD     Y9, a0, a0            \
	VPADDD     Y10, a1, a1           \
	VPADDD     Y11, a2, a2           \
	VPADDD     Y8, a3, a3

// U4BLOCK and U2BLOCK add a block's two row pairs (R9, R13; then R9 moved to row 2
// and R13 to row 3) with their weight vectors at R12 and R12+32.
#define U4BLOCK \
	U4PAIR(R9, R13, (R12))          \
	LEAQ   (R13)(R10*1), R9         \
	LEAQ   (R9)(R10*1), R13         \
	U4PAIR(R9, R13, 32(R12))

#define U2BLOCK \
	LEAQ    (R9)(CX*1), AX                         \
	LEAQ    (R13)(CX*1), BX                        \
	U2PAIR((R9), (R13), (R12), Y0, Y1, Y2, Y3)     \
	U2PAIR((AX), (BX), 16(R12), Y4, Y5, Y6, Y7)    \
	LEAQ    (R13)(R10*1), R9                       \
	LEAQ    (R9)(R10*1), R13                       \
	LEAQ    (R9)(CX*1), AX                         \
	LEAQ    (R13)(CX*1), BX                        \
	U2PAIR((R9), (R13), 32(R12), Y0, Y1, Y2, Y3)   \
	U2PAIR((AX), (BX), 48(R12), Y4, Y5, Y6, Y7)

// I16ROWS runs BLOCK over the nb blocks of four rows (I16LOOP, i16loop_amd64.h)
// with Y0..Y7 zeroed first and Y15 zero. Clobbers AX, BX, DX, R8, R12, R13,
// Y8..Y13.
#define I16ROWS(BLOCK) \
	VPXOR Y0, Y0, Y0     \
	VPXOR Y1, Y1, Y1     \
	VPXOR Y2, Y2, Y2     \
	VPXOR Y3, Y3, Y3     \
	VPXOR Y4, Y4, Y4     \
	VPXOR Y5, Y5, Y5     \
	VPXOR Y6, Y6, Y6     \
	VPXOR Y7, Y7, Y7     \
	VPXOR Y15, Y15, Y15  \
	I16LOOP(I16PI, 64, I16PF3, BLOCK, i16blk2)

// I16OUT adds float(acc)·P + Z, with P and Z the group's (Y12, Y13), to the float32s
// in x.
#define I16OUT(acc, x) \
	VCVTDQ2PS acc, acc     \
	VMULPS    Y12, acc, acc \
	VADDPS    Y13, acc, acc \
	VADDPS    acc, x, x

// I16GROUP broadcasts lane l of P and Z into Y12 and Y13.
#define I16GROUP(l) \
	VBROADCASTSS I16P+4*l(SP), Y12 \
	VBROADCASTSS I16Z+4*l(SP), Y13

// U4OUT adds U4PAIR's sums of columns off/4 .. off/4+7 (ae, ao: even and odd, the
// first group's in the low half) to the float32s at off(DI) and, the second group's,
// off+128(DI): scaled by P and shifted by Z per half (Y12, Y13), interleaved, and
// the halves split.
#define U4OUT(ae, ao, off) \
	VCVTDQ2PS  ae, ae               \
	VCVTDQ2PS  ao, ao               \
	VMULPS     Y12, ae, ae          \
	VMULPS     Y12, ao, ao          \
	VADDPS     Y13, ae, ae          \
	VADDPS     Y13, ao, ao          \
	VUNPCKLPS  ao, ae, Y8           \
	VUNPCKHPS  ao, ae, Y9           \
	VPERM2F128 $0x20, Y9, Y8, Y10   \
	VPERM2F128 $0x31, Y9, Y8, Y11   \
	VADDPS     off(DI), Y10, Y10    \
	VADDPS     off+128(DI), Y11, Y11 \
	VMOVUPS    Y10, off(DI)         \
	VMOVUPS    Y11, off+128(DI)

// func addU4Q1I16(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU4Q1I16(SB), $1600-48
	I16ARGS
	I16PRE
	I16ROWS(U4BLOCK)
	VMOVUPS I16P(SP), Y12
	VMOVUPS I16Z(SP), Y13
	U4OUT(Y0, Y1, 0)
	U4OUT(Y2, Y3, 32)
	U4OUT(Y4, Y5, 64)
	U4OUT(Y6, Y7, 96)
	VZEROUPPER
	RET

// U2COLS puts U2PAIR's sums a0..a3 (lane j of a_m is column 4j+m) in column order
// into Y8..Y11 (columns 0–7, 8–15, 16–23, 24–31).
#define U2COLS(a0, a1, a2, a3) \
	VPUNPCKLDQ  a1, a0, Y8   \
	VPUNPCKHDQ  a1, a0, Y9   \
	VPUNPCKLDQ  a3, a2, Y10  \
	VPUNPCKHDQ  a3, a2, Y11  \
	VPUNPCKLQDQ Y10, Y8, a0  \
	VPUNPCKHQDQ Y10, Y8, a1  \
	VPUNPCKLQDQ Y11, Y9, a2  \
	VPUNPCKHQDQ Y11, Y9, a3  \
	VPERM2I128  $0x20, a1, a0, Y8  \
	VPERM2I128  $0x20, a3, a2, Y9  \
	VPERM2I128  $0x31, a1, a0, Y10 \
	VPERM2I128  $0x31, a3, a2, Y11

// U2GROUPOUT adds the 32 columns of U2COLS (Y8..Y11) to the float32s at off(DI).
#define U2GROUPOUT(off) \
	VMOVUPS off(DI), Y0    \
	VMOVUPS off+32(DI), Y1 \
	VMOVUPS off+64(DI), Y2 \
	VMOVUPS off+96(DI), Y3 \
	I16OUT(Y8, Y0)         \
	I16OUT(Y9, Y1)         \
	I16OUT(Y10, Y2)        \
	I16OUT(Y11, Y3)        \
	VMOVUPS Y0, off(DI)    \
	VMOVUPS Y1, off+32(DI) \
	VMOVUPS Y2, off+64(DI) \
	VMOVUPS Y3, off+96(DI)

// func addU2Q1I16(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
TEXT ·addU2Q1I16(SB), $1600-48
	I16ARGS
	I16PRE
	I16ROWS(U2BLOCK)
	I16GROUP(0)
	U2COLS(Y0, Y1, Y2, Y3)
	U2GROUPOUT(0)
	I16GROUP(4)
	U2COLS(Y4, Y5, Y6, Y7)
	U2GROUPOUT(128)
	VZEROUPPER
	RET
