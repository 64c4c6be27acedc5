//go:build amd64

#include "textflag.h"
#include "lossy_consts_amd64.h"
#include "split16_amd64.h"
#include "chanquery_amd64.h"

// The one-query kernels of the Affine rows and KIVI key blocks (dot*RowsInl,
// dot*RowsPlain, add*Q1Inl) and channelQueryF16C; declarations and contracts in
// lossy_asm_amd64.go.
//
// 4-bit codes: VPMOVZXBD widens 8 code bytes into 8 dwords; byte & 15 is the even
// code and byte >> 4 the odd one, so a row's 16 codes come out as an even and an odd
// vector. The query (dot) or the accumulators (add) are split the same way: VSHUFPS
// picks the even (odd) lanes of two vectors within 128-bit halves and VPERMPD $0xD8
// puts the halves' pairs in order.

// U4ROW accumulates 16 4-bit codes at addr times the split query (Y12 even, Y13
// odd) into the chains ae (even) and ao (odd).
#define U4ROW(addr, ae, ao) \
	VPMOVZXBD   addr, Y14          \
	VPSRLD      $4, Y14, Y15       \
	VPAND       nib4<>(SB), Y14, Y14 \
	VCVTDQ2PS   Y14, Y14           \
	VCVTDQ2PS   Y15, Y15           \
	VFMADD231PS Y12, Y14, ae       \
	VFMADD231PS Y13, Y15, ao

// U2ROW accumulates 16 2-bit codes at addr times the query (Y12 the first 8
// values, Y13 the next 8) into the chains a0 and a1.
#define U2ROW(addr, a0, a1) \
	VPBROADCASTD addr, Y14            \
	VPSRLVD      sh2<>+32(SB), Y14, Y15 \
	VPSRLVD      sh2<>(SB), Y14, Y14 \
	VPAND        two2<>(SB), Y14, Y14 \
	VPAND        two2<>(SB), Y15, Y15 \
	VCVTDQ2PS    Y14, Y14             \
	VCVTDQ2PS    Y15, Y15             \
	VFMADD231PS  Y12, Y14, a0         \
	VFMADD231PS  Y13, Y15, a1

// U8ROW accumulates 16 8-bit codes, the first 8 at lo and the next 8 at hi, times the
// query (Y12 the first 8 values, Y13 the next 8) into the chains a0 and a1.
#define U8ROW(lo, hi, a0, a1) \
	VPMOVZXBD   lo, Y14      \
	VPMOVZXBD   hi, Y15      \
	VCVTDQ2PS   Y14, Y14     \
	VCVTDQ2PS   Y15, Y15     \
	VFMADD231PS Y12, Y14, a0 \
	VFMADD231PS Y13, Y15, a1

// ROWS4OUT stores to out (DI) lane r = the sum of Y_r's lanes.
#define ROWS4OUT \
	VHADDPS      Y1, Y0, Y0 \
	VHADDPS      Y3, Y2, Y2 \
	VHADDPS      Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVUPS      X0, (DI)

// ROWS4OUTB is ROWS4OUT with the float32 at (R12) added to each sum.
#define ROWS4OUTB \
	VHADDPS      Y1, Y0, Y0 \
	VHADDPS      Y3, Y2, Y2 \
	VHADDPS      Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VBROADCASTSS (R12), X1  \
	VADDPS       X1, X0, X0 \
	VMOVUPS      X0, (DI)

#define ZERO8 \
	VXORPS Y4, Y4, Y4    \
	VXORPS Y5, Y5, Y5    \
	VXORPS Y6, Y6, Y6    \
	VXORPS Y7, Y7, Y7    \
	VXORPS Y8, Y8, Y8    \
	VXORPS Y9, Y9, Y9    \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11

// ROWS4INL closes a group of four rows reading the group parameters from the rows:
// each group's f16 scale and zero are the 4 bytes before its codes (R8..R11), and the
// zero term is the zero times the query's lane sums of the group at (R12): Y_r +=
// (a_r0 + a_r1)·s_r + z_r·Σq; then steps to the next group.
#define ROWS4INL \
	VADDPS Y8, Y4, Y4   \
	VADDPS Y9, Y5, Y5   \
	VADDPS Y10, Y6, Y6  \
	VADDPS Y11, Y7, Y7  \
	INLROW(R8, Y4, Y0)  \
	INLROW(R9, Y5, Y1)  \
	INLROW(R10, Y6, Y2) \
	INLROW(R11, Y7, Y3) \
	ADDQ   CX, R8       \
	ADDQ   CX, R9       \
	ADDQ   CX, R10      \
	ADDQ   CX, R11      \
	ADDQ   $32, R12     \
	DECQ   R14

// INLROW folds one row's group sum a into its score y: y += a·scale + zero·Σq, the
// f16 scale and zero in the 4 bytes before the group's codes at r.
#define INLROW(r, a, y) \
	VPBROADCASTW -4(r), X14    \
	VCVTPH2PS    X14, Y14      \
	VFMADD231PS  Y14, a, y     \
	VPBROADCASTW -2(r), X15    \
	VCVTPH2PS    X15, Y15      \
	VFMADD231PS  (R12), Y15, y

// ROWS4SUM closes a group of four rows whose scales are already in the query (KIVI
// key blocks): Y_r += a_r0 + a_r1; then steps to the next group.
#define ROWS4SUM \
	VADDPS Y8, Y4, Y4  \
	VADDPS Y9, Y5, Y5  \
	VADDPS Y10, Y6, Y6 \
	VADDPS Y11, Y7, Y7 \
	VADDPS Y4, Y0, Y0  \
	VADDPS Y5, Y1, Y1  \
	VADDPS Y6, Y2, Y2  \
	VADDPS Y7, Y3, Y3  \
	ADDQ   CX, R8      \
	ADDQ   CX, R9      \
	ADDQ   CX, R10     \
	ADDQ   CX, R11     \
	DECQ   R14

// INLARGS loads the arguments of the *RowsInl kernels: DI out, R15 the first row,
// DX stride, R13 the groups of four rows, CX gb, BX gs.
#define INLARGS \
	MOVQ gs+56(FP), BX     \
	MOVQ out+0(FP), DI     \
	MOVQ rows+16(FP), R15  \
	MOVQ stride+24(FP), DX \
	MOVQ ng+32(FP), R13    \
	MOVQ gb+64(FP), CX

// INLBLOCK starts four rows at R15: SI the query, R12 its group sums, R14 the
// groups, R8..R11 the rows' first codes, Y0..Y3 zero.
#define INLBLOCK \
	MOVQ   q+8(FP), SI             \
	MOVQ   qs+40(FP), R12          \
	MOVQ   np+48(FP), R14          \
	MOVQ   R15, R8                 \
	LEAQ   (R8)(DX*1), R9          \
	LEAQ   (R9)(DX*1), R10         \
	LEAQ   (R10)(DX*1), R11        \
	VXORPS Y0, Y0, Y0              \
	VXORPS Y1, Y1, Y1              \
	VXORPS Y2, Y2, Y2              \
	VXORPS Y3, Y3, Y3

// SPANU4 is the body of the one-query span kernels of 4-bit codes (dotU4RowsInl and
// dotU4RowsPlain), whose query is split by splitEvenOdd: blocks of four rows, END
// closing each group and OUT storing each block's sums.
#define SPANU4(END, OUT) \
block: \
	INLBLOCK \
group: \
	ZERO8 \
	XORQ AX, AX \
loop: \
	VMOVUPS  (SI)(AX*8), Y12 \
	VMOVUPS  32(SI)(AX*8), Y13 \
	U4ROW((R8)(AX*1), Y4, Y8) \
	U4ROW((R9)(AX*1), Y5, Y9) \
	U4ROW((R10)(AX*1), Y6, Y10) \
	U4ROW((R11)(AX*1), Y7, Y11) \
	ADDQ     $8, AX \
	CMPQ     AX, BX \
	JB       loop \
	LEAQ (SI)(BX*8), SI \
	END \
	JNZ  group \
	OUT \
	ADDQ $16, DI \
	LEAQ (R15)(DX*4), R15 \
	DECQ R13 \
	JNZ  block \
	VZEROUPPER \
	RET

// SPAN16 is the body of the one-query span kernels that read 16 codes of a row per
// step with ROW (U2ROWAT, U8ROWAT), STEP code bytes (dotU2RowsInl, dotU2RowsPlain,
// dotU8RowsInl, dotU8RowsPlain): blocks of four rows, END closing each group and OUT storing each block's sums.
#define SPAN16(ROW, STEP, END, OUT) \
block: \
	INLBLOCK \
group: \
	ZERO8 \
	XORQ AX, AX \
loop: \
	VMOVUPS (SI), Y12 \
	VMOVUPS 32(SI), Y13 \
	ROW(R8, Y4, Y8) \
	ROW(R9, Y5, Y9) \
	ROW(R10, Y6, Y10) \
	ROW(R11, Y7, Y11) \
	ADDQ    $64, SI \
	ADDQ    STEP, AX \
	CMPQ    AX, BX \
	JB      loop \
	END \
	JNZ group \
	OUT \
	ADDQ $16, DI \
	LEAQ (R15)(DX*4), R15 \
	DECQ R13 \
	JNZ  block \
	VZEROUPPER \
	RET

// U2ROWAT and U8ROWAT are U2ROW and U8ROW for the codes at AX in row r.
#define U2ROWAT(r, a0, a1) U2ROW((r)(AX*1), a0, a1)
#define U8ROWAT(r, a0, a1) U8ROW((r)(AX*1), 8(r)(AX*1), a0, a1)

// AINLARGS loads the arguments of the add*Q1Inl kernels: DI a, SI w, R8 hp, R9 cp,
// R10 stride, R11 n.
#define AINLARGS \
	MOVQ a+0(FP), DI        \
	MOVQ w+8(FP), SI        \
	MOVQ hp+16(FP), R8      \
	MOVQ cp+24(FP), R9      \
	MOVQ stride+32(FP), R10 \
	MOVQ n+40(FP), R11

// AINLROW reads row AX's weight (Y12) and the scale and zero of its group at BX in R8:
// Y13 = weight·scale, Y15 += weight·zero.
#define AINLROW \
	VBROADCASTSS (SI)(AX*4), Y12  \
	VPBROADCASTW (R8)(BX*1), X13  \
	VCVTPH2PS    X13, Y13         \
	VMULPS       Y12, Y13, Y13    \
	VPBROADCASTW 2(R8)(BX*1), X14 \
	VCVTPH2PS    X14, Y14         \
	VFMADD231PS  Y14, Y12, Y15

// AINLSTORE adds the zero terms (Y15) to the 32 columns in order in Y0..Y3 and
// stores them to a.
#define AINLSTORE \
	VADDPS  Y15, Y0, Y0 \
	VADDPS  Y15, Y1, Y1 \
	VADDPS  Y15, Y2, Y2 \
	VADDPS  Y15, Y3, Y3 \
	VMOVUPS Y0, (DI)    \
	VMOVUPS Y1, 32(DI)  \
	VMOVUPS Y2, 64(DI)  \
	VMOVUPS Y3, 96(DI)  \
	VZEROUPPER          \
	RET

// AINLLOAD loads the 32 columns at a in order into Y0..Y3 and zeroes Y15 and the row
// (AX) and its byte offset (BX).
#define AINLLOAD \
	VMOVUPS (DI), Y0      \
	VMOVUPS 32(DI), Y1    \
	VMOVUPS 64(DI), Y2    \
	VMOVUPS 96(DI), Y3    \
	VXORPS  Y15, Y15, Y15 \
	XORQ    AX, AX        \
	XORQ    BX, BX

// AINLNEXT adds the row's codes Y8..Y11 (integers), times Y13, into Y0..Y3 and loops
// to label for the next row.
#define AINLNEXT(label) \
	VCVTDQ2PS   Y8, Y8      \
	VCVTDQ2PS   Y9, Y9      \
	VCVTDQ2PS   Y10, Y10    \
	VCVTDQ2PS   Y11, Y11    \
	VFMADD231PS Y13, Y8, Y0 \
	VFMADD231PS Y13, Y9, Y1 \
	VFMADD231PS Y13, Y10, Y2 \
	VFMADD231PS Y13, Y11, Y3 \
	ADDQ        R10, BX     \
	INCQ        AX          \
	CMPQ        AX, R11     \
	JB          label

// U4LOAD loads the 32 accumulators at DI split as the 4-bit kernels need them: Y0/Y1
// the even and odd columns of the first 16, Y2/Y3 those of the next 16.
#define U4LOAD \
	SPLIT16((DI), 32(DI), Y0, Y1) \
	SPLIT16(64(DI), 96(DI), Y2, Y3)

// U4STORE stores Y0..Y3, split as by U4LOAD, to DI in column order (the pairs of each
// half in place, then even and odd lanes interleaved) and returns.
#define U4STORE \
	JOIN16(Y0, Y1, (DI), 32(DI))   \
	JOIN16(Y2, Y3, 64(DI), 96(DI)) \
	VZEROUPPER                     \
	RET

// func dotU4RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU4RowsInl(SB), NOSPLIT, $0-72
	INLARGS
	SHRQ $1, BX // code bytes of a group
	SPANU4(ROWS4INL, ROWS4OUT)

// func dotU4RowsPlain(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU4RowsPlain(SB), NOSPLIT, $0-72
	INLARGS
	SHRQ $1, BX // code bytes of a group
	SPANU4(ROWS4SUM, ROWS4OUTB)

// func dotU2RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2RowsInl(SB), NOSPLIT, $0-72
	INLARGS
	SHRQ $2, BX // code bytes of a group
	SPAN16(U2ROWAT, $4, ROWS4INL, ROWS4OUT)

// func dotU2RowsPlain(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2RowsPlain(SB), NOSPLIT, $0-72
	INLARGS
	SHRQ $2, BX // code bytes of a group
	SPAN16(U2ROWAT, $4, ROWS4SUM, ROWS4OUTB)

// func dotU8RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU8RowsInl(SB), NOSPLIT, $0-72
	INLARGS
	SPAN16(U8ROWAT, $16, ROWS4INL, ROWS4OUT)

// func dotU8RowsPlain(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU8RowsPlain(SB), NOSPLIT, $0-72
	INLARGS
	SPAN16(U8ROWAT, $16, ROWS4SUM, ROWS4OUTB)

// func channelQueryF16C(qs, b, q, block unsafe.Pointer, nq, d int)
TEXT ·channelQueryF16C(SB), NOSPLIT, $0-48
	MOVQ qs+0(FP), DI
	MOVQ b+8(FP), R8
	MOVQ q+16(FP), SI
	MOVQ nq+32(FP), R9
	MOVQ d+40(FP), R10

cquery:
	MOVQ   block+24(FP), DX
	XORQ   AX, AX // channel
	VXORPS Y7, Y7, Y7

cchan:
	CQHALF(0, 0, Y5)
	VMOVUPS      Y5, (DI)(AX*4)
	ADDQ         $32, DX
	ADDQ         $8, AX
	CMPQ         AX, R10
	JB           cchan

	VEXTRACTF128 $1, Y7, X6
	VADDPS       X6, X7, X7
	VHADDPS      X7, X7, X7
	VHADDPS      X7, X7, X7
	VMOVSS       X7, (R8)
	LEAQ         (SI)(R10*4), SI
	LEAQ         (DI)(R10*4), DI
	ADDQ         $4, R8
	DECQ         R9
	JNZ          cquery
	VZEROUPPER
	RET

// func addU4Q1Inl(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)
// Y0/Y1 hold the even and odd columns of the first 16, Y2/Y3 those of the next 16
// (the 4-bit split); Y15 sums w_i·zero_i, added to every column at the end.
TEXT ·addU4Q1Inl(SB), NOSPLIT, $0-48
	AINLARGS

	U4LOAD
	VXORPS  Y15, Y15, Y15
	XORQ    AX, AX // row index
	XORQ    BX, BX // byte offset of the row

ainl4:
	AINLROW
	VPMOVZXBD    (R9)(BX*1), Y8
	VPMOVZXBD    8(R9)(BX*1), Y10
	VPSRLD       $4, Y8, Y9
	VPSRLD       $4, Y10, Y11
	VPAND        nib4<>(SB), Y8, Y8
	VPAND        nib4<>(SB), Y10, Y10
	AINLNEXT(ainl4)

	VADDPS    Y15, Y0, Y0
	VADDPS    Y15, Y1, Y1
	VADDPS    Y15, Y2, Y2
	VADDPS    Y15, Y3, Y3
	U4STORE

// func addU2Q1Inl(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)
// Y0..Y3 hold the 32 columns in order; Y15 sums w_i·zero_i, added to every column at
// the end.
TEXT ·addU2Q1Inl(SB), NOSPLIT, $0-48
	AINLARGS
	AINLLOAD

ainl2:
	AINLROW
	VPBROADCASTD (R9)(BX*1), Y8
	VPBROADCASTD 4(R9)(BX*1), Y10
	VPSRLVD      sh2<>+32(SB), Y8, Y9
	VPSRLVD      sh2<>(SB), Y8, Y8
	VPSRLVD      sh2<>+32(SB), Y10, Y11
	VPSRLVD      sh2<>(SB), Y10, Y10
	VPAND        two2<>(SB), Y8, Y8
	VPAND        two2<>(SB), Y9, Y9
	VPAND        two2<>(SB), Y10, Y10
	VPAND        two2<>(SB), Y11, Y11
	AINLNEXT(ainl2)

	AINLSTORE

// func addU8Q1Inl(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)
// Y0..Y3 hold the 32 columns in order; Y15 sums w_i·zero_i, added to every column at
// the end.
TEXT ·addU8Q1Inl(SB), NOSPLIT, $0-48
	AINLARGS
	AINLLOAD

ainl8:
	AINLROW
	VPMOVZXBD    (R9)(BX*1), Y8
	VPMOVZXBD    8(R9)(BX*1), Y9
	VPMOVZXBD    16(R9)(BX*1), Y10
	VPMOVZXBD    24(R9)(BX*1), Y11
	AINLNEXT(ainl8)

	AINLSTORE

// func splitEvenOdd(dst, src unsafe.Pointer, n16 int)
TEXT ·splitEvenOdd(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n16+16(FP), CX

split16:
	SPLIT16((SI), 32(SI), Y12, Y13)
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     split16
	VZEROUPPER
	RET

// func groupLaneSums(dst, q unsafe.Pointer, groups, vecs int)
TEXT ·groupLaneSums(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ vecs+24(FP), BX

lsgroup:
	VMOVUPS (SI), Y0
	ADDQ    $32, SI
	MOVQ    BX, DX
	DECQ    DX
	JZ      lsstore

lsvec:
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   DX
	JNZ    lsvec

lsstore:
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     lsgroup
	VZEROUPPER
	RET
