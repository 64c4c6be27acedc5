//go:build amd64

#include "textflag.h"
#include "lossy_consts_amd64.h"
#include "split16_amd64.h"
#include "prefetch_amd64.h"

// The four-query span kernels of the Affine and KIVI-key rows (declarations and
// contracts in lossy_q4_amd64.go): dot*Q4Inl, dot*Q4Plain and add*Q4W for 8, 4 and
// 2-bit codes. Each row's codes are unpacked once (shifts, masks, VCVTDQ2PS) for four
// queries. The dots widen each group's f16 scale and zero (VCVTPH2PS) where the row
// is read; the adds widen them per group of up to 64 rows into weighted scales and
// zero sums in their frame (A4WBUILD).

#define ZERO8 \
	VXORPS Y4, Y4, Y4    \
	VXORPS Y5, Y5, Y5    \
	VXORPS Y6, Y6, Y6    \
	VXORPS Y7, Y7, Y7    \
	VXORPS Y8, Y8, Y8    \
	VXORPS Y9, Y9, Y9    \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11

// Q4UNPACK4, Q4UNPACK2 and Q4UNPACK8 unpack the 16 codes at R14 into Y14 (the first 8)
// and Y15 (the next 8) as float32, in column order: each 8 codes from a broadcast
// word by lane shifts (Y12, and Y13 for 2 bits) and a mask (Y13; Y11 for 2 bits), or
// widened bytes. Q4CONST4 and Q4CONST2 load their constants.
#define Q4UNPACK4 \
	VPBROADCASTD (R14), Y14    \
	VPBROADCASTD 4(R14), Y15   \
	VPSRLVD      Y12, Y14, Y14 \
	VPSRLVD      Y12, Y15, Y15 \
	VPAND        Y13, Y14, Y14 \
	VPAND        Y13, Y15, Y15 \
	VCVTDQ2PS    Y14, Y14      \
	VCVTDQ2PS    Y15, Y15

#define Q4CONST4 \
	VMOVUPS sh4<>(SB), Y12 \
	VMOVUPS nib4<>(SB), Y13

#define Q4UNPACK2 \
	VPBROADCASTD (R14), Y14    \
	VPSRLVD      Y13, Y14, Y15 \
	VPSRLVD      Y12, Y14, Y14 \
	VPAND        Y11, Y14, Y14 \
	VPAND        Y11, Y15, Y15 \
	VCVTDQ2PS    Y14, Y14      \
	VCVTDQ2PS    Y15, Y15

#define Q4CONST2 \
	VMOVUPS sh2<>(SB), Y12 \
	VMOVUPS sh2<>+32(SB), Y13 \
	VMOVUPS two2<>(SB), Y11

#define Q4UNPACK8 \
	VPMOVZXBD (R14), Y14  \
	VPMOVZXBD 8(R14), Y15 \
	VCVTDQ2PS Y14, Y14    \
	VCVTDQ2PS Y15, Y15

#define Q4CONST8

// Q4SUMS writes the four queries' sums of each group k < np (gs values) to qs + 16k,
// lane r query r's (float32; for the zero terms of the Inl kernels).
#define Q4SUMS \
	MOVQ qs+80(FP), DX     \
	MOVQ np+88(FP), R13    \
	XORQ AX, AX            \
sgroup:                    \
	VXORPS Y0, Y0, Y0      \
	VXORPS Y1, Y1, Y1      \
	VXORPS Y2, Y2, Y2      \
	VXORPS Y3, Y3, Y3      \
	MOVQ gs+96(FP), SI     \
	SHLQ $2, SI            \
	ADDQ AX, SI            \
sloop:                     \
	VADDPS (R8)(AX*1), Y0, Y0   \
	VADDPS (R9)(AX*1), Y1, Y1   \
	VADDPS (R10)(AX*1), Y2, Y2  \
	VADDPS (R11)(AX*1), Y3, Y3  \
	ADDQ   $32, AX              \
	CMPQ   AX, SI               \
	JB     sloop                \
	VHADDPS      Y1, Y0, Y0     \
	VHADDPS      Y3, Y2, Y2     \
	VHADDPS      Y2, Y0, Y0     \
	VEXTRACTF128 $1, Y0, X1     \
	VADDPS       X1, X0, X0     \
	VMOVUPS      X0, (DX)       \
	ADDQ         $16, DX        \
	DECQ         R13            \
	JNZ          sgroup

// Q4RINL starts a row of the Inl kernels: X8 (the four zero terms) 0, DX the group
// sums of group 0.
#define Q4RINL \
	VXORPS X8, X8, X8 \
	MOVQ   qs+80(FP), DX

// Q4GINL closes a group of the Inl kernels: Y_r += a_r·scale and X8 += zero·(the four
// queries' sums of the group at DX); BX is the group's codes, after its f16 scale and
// zero.
#define Q4GINL \
	VPBROADCASTW -4(BX), X9    \
	VCVTPH2PS    X9, Y9        \
	VFMADD231PS  Y9, Y4, Y0    \
	VFMADD231PS  Y9, Y5, Y1    \
	VFMADD231PS  Y9, Y6, Y2    \
	VFMADD231PS  Y9, Y7, Y3    \
	VPBROADCASTW -2(BX), X9    \
	VCVTPH2PS    X9, X9        \
	VFMADD231PS  (DX), X9, X8  \
	ADDQ         $16, DX

#define Q4NOSUMS

// Q4RPLAIN starts a row of the Plain kernels: X8 the four queries' terms b at qs.
#define Q4RPLAIN \
	MOVQ    qs+80(FP), DX \
	VMOVUPS (DX), X8

// Q4GPLAIN closes a group of the Plain kernels: Y_r += a_r (scales are in the queries).
#define Q4GPLAIN \
	VADDPS Y4, Y0, Y0 \
	VADDPS Y5, Y1, Y1 \
	VADDPS Y6, Y2, Y2 \
	VADDPS Y7, Y3, Y3

// Q4SPAN is the body of the four-query dot kernels: per row, lane r of Y0..Y3 the
// score of query r and Y4..Y7 its chain for the group (one chain per query: rows and
// groups are independent, so out-of-order execution overlaps them, and the registers
// left hold the unpacking constants). The queries are read from memory by the FMAs.
// SUMS prepares the rows' zero terms, CONST loads the constants of UNPACK, which reads 16 codes at R14, STEP bytes; RINIT
// starts a row, GEND closes a group (BX its codes). Each row's four scores (X0 + X8)
// go to out + 4i, one query's ldo bytes after the other's, the first nq of them.
#define Q4SPAN(SUMS, CONST, UNPACK, STEP, RINIT, GEND) \
	MOVQ q0+24(FP), R8     \
	MOVQ q1+32(FP), R9     \
	MOVQ q2+40(FP), R10    \
	MOVQ q3+48(FP), R11    \
	MOVQ rows+56(FP), DI   \
	MOVQ out+0(FP), CX     \
	MOVQ n+72(FP), R15     \
	SUMS                   \
	CONST                  \
row:                       \
	VXORPS Y0, Y0, Y0      \
	VXORPS Y1, Y1, Y1      \
	VXORPS Y2, Y2, Y2      \
	VXORPS Y3, Y3, Y3      \
	RINIT                  \
	MOVQ np+88(FP), R13    \
	MOVQ DI, BX            \
	XORQ AX, AX            \
group:                     \
	VXORPS Y4, Y4, Y4      \
	VXORPS Y5, Y5, Y5      \
	VXORPS Y6, Y6, Y6      \
	VXORPS Y7, Y7, Y7      \
	MOVQ gs+96(FP), SI     \
	SHLQ $2, SI            \
	ADDQ AX, SI            \
	MOVQ BX, R14           \
loop:                      \
	UNPACK                 \
	VFMADD231PS (R8)(AX*1), Y14, Y4    \
	VFMADD231PS (R9)(AX*1), Y14, Y5    \
	VFMADD231PS (R10)(AX*1), Y14, Y6   \
	VFMADD231PS (R11)(AX*1), Y14, Y7   \
	VFMADD231PS 32(R8)(AX*1), Y15, Y4  \
	VFMADD231PS 32(R9)(AX*1), Y15, Y5  \
	VFMADD231PS 32(R10)(AX*1), Y15, Y6 \
	VFMADD231PS 32(R11)(AX*1), Y15, Y7 \
	ADDQ STEP, R14         \
	ADDQ $64, AX           \
	CMPQ AX, SI            \
	JB   loop              \
	GEND                   \
	ADDQ gb+104(FP), BX    \
	DECQ R13               \
	JNZ  group             \
	VHADDPS      Y1, Y0, Y0 \
	VHADDPS      Y3, Y2, Y2 \
	VHADDPS      Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VADDPS       X8, X0, X0 \
	MOVQ         ldo+8(FP), SI \
	VMOVSS       X0, (CX)   \
	CMPQ         nq+16(FP), $1 \
	JLE          stored     \
	VEXTRACTPS   $1, X0, (CX)(SI*1) \
	LEAQ         (CX)(SI*2), R12 \
	CMPQ         nq+16(FP), $2 \
	JLE          stored     \
	VEXTRACTPS   $2, X0, (R12) \
	CMPQ         nq+16(FP), $3 \
	JLE          stored     \
	VEXTRACTPS   $3, X0, (R12)(SI*1) \
stored:                    \
	ADDQ $4, CX            \
	ADDQ stride+64(FP), DI \
	DECQ R15               \
	JNZ  row               \
	VZEROUPPER             \
	RET

// A4LOADSPLIT loads the 16 accumulators of each query at DI, R10, R11, R12 split into
// even (Y0, Y2, Y4, Y6) and odd (Y1, Y3, Y5, Y7) columns, the order of 4-bit codes
// unpacked by VPMOVZXBD; Y15 the nibble mask.
#define A4LOADSPLIT \
	SPLIT16((DI), 32(DI), Y0, Y1)   \
	SPLIT16((R10), 32(R10), Y2, Y3) \
	SPLIT16((R11), 32(R11), Y4, Y5) \
	SPLIT16((R12), 32(R12), Y6, Y7) \
	VMOVUPS nib4<>(SB), Y15

// A4STORESPLIT stores the accumulators of A4LOADSPLIT back in column order (a repeated
// query's accumulators hold the same sums: any store order is right).
#define A4STORESPLIT \
	JOIN16(Y6, Y7, (R12), 32(R12)) \
	JOIN16(Y4, Y5, (R11), 32(R11)) \
	JOIN16(Y2, Y3, (R10), 32(R10)) \
	JOIN16(Y0, Y1, (DI), 32(DI))

// A4LOAD loads the 16 accumulators of each query at DI, R10, R11, R12 in column order
// into Y(2r), Y(2r+1); Y15 the mask of 2-bit codes.
#define A4LOAD \
	VMOVUPS (DI), Y0     \
	VMOVUPS 32(DI), Y1   \
	VMOVUPS (R10), Y2    \
	VMOVUPS 32(R10), Y3  \
	VMOVUPS (R11), Y4    \
	VMOVUPS 32(R11), Y5  \
	VMOVUPS (R12), Y6    \
	VMOVUPS 32(R12), Y7  \
	VMOVUPS two2<>(SB), Y15

// A4STORE stores the accumulators of A4LOAD.
#define A4STORE \
	VMOVUPS Y6, (R12)   \
	VMOVUPS Y7, 32(R12) \
	VMOVUPS Y4, (R11)   \
	VMOVUPS Y5, 32(R11) \
	VMOVUPS Y2, (R10)   \
	VMOVUPS Y3, 32(R10) \
	VMOVUPS Y0, (DI)    \
	VMOVUPS Y1, 32(DI)

// A4CODES4, A4CODES2 and A4CODES8 unpack row BX's 16 codes at R14 into Y8 and Y9
// (integers): the even and odd codes (4 bits), or the first and the next 8.
#define A4CODES4 \
	VPMOVZXBD (R14)(BX*1), Y8 \
	VPSRLD    $4, Y8, Y9      \
	VPAND     Y15, Y8, Y8

#define A4CODES2 \
	VPBROADCASTD (R14)(BX*1), Y8      \
	VPSRLVD      sh2<>+32(SB), Y8, Y9  \
	VPSRLVD      sh2<>(SB), Y8, Y8  \
	VPAND        Y15, Y8, Y8          \
	VPAND        Y15, Y9, Y9

#define A4CODES8 \
	VPMOVZXBD (R14)(BX*1), Y8 \
	VPMOVZXBD 8(R14)(BX*1), Y9

// A4WQUERIES weights scales S by the four queries' weights at R9..R12 + 4·AX into
// the frame (query r at 256r) and adds the weights times the zeros X11 to the zero
// sums X4..X7: MUL, MOV and FMA are the packed forms (four rows) or the scalar ones
// (one row). X12 scratch.
#define A4WQUERIES(MUL, MOV, FMA, S) \
	MUL (R9)(AX*4), S, X12;  MOV X12, (SP)(AX*4);     FMA (R9)(AX*4), X11, X4;  \
	MUL (R10)(AX*4), S, X12; MOV X12, 256(SP)(AX*4);  FMA (R10)(AX*4), X11, X5; \
	MUL (R11)(AX*4), S, X12; MOV X12, 512(SP)(AX*4);  FMA (R11)(AX*4), X11, X6; \
	MUL (R12)(AX*4), S, X12; MOV X12, 768(SP)(AX*4);  FMA (R12)(AX*4), X11, X7

// A4WBUILD fills the frame for the group whose first row's scale and zero are at R15
// (rows DX bytes apart, n of them): at 256r + 4i the weighted scale w_r[i]·scale_i of
// query r and row i, at 1024 + 4r Σ_i w_r[i]·zero_i. Four rows at a time, their
// scales and zeros gathered (VPINSRD), widened together and separated (VSHUFPS);
// then the last n mod 4 rows one by one. Each query's zero sum gathers in the lanes
// of X4..X7 (a row's lane, then lane 0 for the last rows) and the lanes are added
// at the end. It is the first to read the rows, so it prefetches ahead of each four
// (prefetch_amd64.h).
#define A4WBUILD \
	MOVQ   w0+32(FP), R9   \
	MOVQ   w1+40(FP), R10  \
	MOVQ   w2+48(FP), R11  \
	MOVQ   w3+56(FP), R12  \
	VXORPS X4, X4, X4      \
	VXORPS X5, X5, X5      \
	VXORPS X6, X6, X6      \
	VXORPS X7, X7, X7      \
	XORQ   AX, AX          \
	MOVQ   R15, BX         \
	MOVQ   n+80(FP), R13   \
	CMPQ   R13, $4         \
	JB     wtail           \
wblock:                    \
	LEAQ         (BX)(DX*2), DI          \
	PREFETCHT0   PFDIST(BX)              \
	PREFETCHT0   PFDIST(BX)(DX*1)        \
	PREFETCHT0   PFDIST(DI)              \
	PREFETCHT0   PFDIST(DI)(DX*1)        \
	VMOVD        (BX), X8                \
	VPINSRD      $1, (BX)(DX*1), X8, X8  \
	VPINSRD      $2, (DI), X8, X8        \
	VPINSRD      $3, (DI)(DX*1), X8, X8  \
	VCVTPH2PS    X8, Y8                  \
	VEXTRACTF128 $1, Y8, X9              \
	VSHUFPS      $0x88, X9, X8, X10      \
	VSHUFPS      $0xdd, X9, X8, X11      \
	A4WQUERIES(VMULPS, VMOVUPS, VFMADD231PS, X10) \
	LEAQ         (DI)(DX*2), BX          \
	ADDQ         $4, AX                  \
	SUBQ         $4, R13                 \
	CMPQ         R13, $4                 \
	JAE          wblock                  \
wtail:                     \
	TESTQ       R13, R13                 \
	JZ          wsum                     \
	VMOVD       (BX), X8                 \
	VCVTPH2PS   X8, X8                   \
	VMOVSHDUP   X8, X11                  \
	A4WQUERIES(VMULSS, VMOVSS, VFMADD231SS, X8) \
	ADDQ        DX, BX                   \
	INCQ        AX                       \
	DECQ        R13                      \
	JMP         wtail                    \
wsum:                      \
	VHADDPS X5, X4, X4     \
	VHADDPS X7, X6, X6     \
	VHADDPS X6, X4, X4     \
	VMOVUPS X4, 1024(SP)

// A4WZERO adds query r's zero sum (frame 1024 + 4r) to its accumulators.
#define A4WZERO \
	VBROADCASTSS 1024(SP), Y12 \
	VADDPS       Y12, Y0, Y0   \
	VADDPS       Y12, Y1, Y1   \
	VBROADCASTSS 1028(SP), Y13 \
	VADDPS       Y13, Y2, Y2   \
	VADDPS       Y13, Y3, Y3   \
	VBROADCASTSS 1032(SP), Y12 \
	VADDPS       Y12, Y4, Y4   \
	VADDPS       Y12, Y5, Y5   \
	VBROADCASTSS 1036(SP), Y13 \
	VADDPS       Y13, Y6, Y6   \
	VADDPS       Y13, Y7, Y7

// A4CHUNK points DI, R10, R11, R12 at the four queries' accumulators of a chunk
// (a_r + SI), loads them (LOAD) and sets up the row loop: R13 n, AX the row, BX its
// offset in bytes.
#define A4CHUNK(LOAD) \
	MOVQ a0+0(FP), DI  \
	ADDQ SI, DI        \
	MOVQ a1+8(FP), R10 \
	ADDQ SI, R10       \
	MOVQ a2+16(FP), R11 \
	ADDQ SI, R11       \
	MOVQ a3+24(FP), R12 \
	ADDQ SI, R12       \
	LOAD               \
	MOVQ n+80(FP), R13 \
	XORQ AX, AX        \
	XORQ BX, BX

// A4WSPAN is the body of the four-query add kernels with weighted scales: per group,
// A4WBUILD's frame, then for each chunk of 16 columns of the group (nc in all, gs per
// group) the accumulators of the four queries (LOAD: from DI, R10, R11, R12) take
// every row's 16 codes (CODES, as integers, converted once) times each query's
// weighted scale from the frame, then the zero sums (A4WZERO); STORE puts them back.
// CB is the code bytes of a chunk; SI the chunk's byte offset in the accumulators.
#define A4WSPAN(LOAD, CODES, STORE, CB) \
	MOVQ rows+64(FP), R15  \
	MOVQ stride+72(FP), DX \
	MOVQ nc+88(FP), R8     \
	XORQ SI, SI            \
wgroup:                    \
	A4WBUILD               \
	MOVQ gs+96(FP), CX     \
	LEAQ 4(R15), R14       \
wchunk:                    \
	A4CHUNK(LOAD)          \
wrow:                      \
	CODES                  \
	VCVTDQ2PS    Y8, Y8    \
	VCVTDQ2PS    Y9, Y9    \
	VBROADCASTSS (SP)(AX*4), Y12    \
	VFMADD231PS  Y12, Y8, Y0        \
	VFMADD231PS  Y12, Y9, Y1        \
	VBROADCASTSS 256(SP)(AX*4), Y13 \
	VFMADD231PS  Y13, Y8, Y2        \
	VFMADD231PS  Y13, Y9, Y3        \
	VBROADCASTSS 512(SP)(AX*4), Y12 \
	VFMADD231PS  Y12, Y8, Y4        \
	VFMADD231PS  Y12, Y9, Y5        \
	VBROADCASTSS 768(SP)(AX*4), Y13 \
	VFMADD231PS  Y13, Y8, Y6        \
	VFMADD231PS  Y13, Y9, Y7        \
	ADDQ DX, BX            \
	INCQ AX                \
	CMPQ AX, R13           \
	JB   wrow              \
	A4WZERO                \
	STORE                  \
	ADDQ $64, SI           \
	ADDQ CB, R14           \
	DECQ R8                \
	JZ   wdone             \
	SUBQ $16, CX           \
	JNZ  wchunk            \
	ADDQ gb+104(FP), R15   \
	JMP  wgroup            \
wdone:                     \
	VZEROUPPER             \
	RET


// The kernels (macros above; a label's scope is its function).

// func dotU4Q4Inl(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU4Q4Inl(SB), NOSPLIT, $0-112
	Q4SPAN(Q4SUMS, Q4CONST4, Q4UNPACK4, $8, Q4RINL, Q4GINL)

// func dotU2Q4Inl(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2Q4Inl(SB), NOSPLIT, $0-112
	Q4SPAN(Q4SUMS, Q4CONST2, Q4UNPACK2, $4, Q4RINL, Q4GINL)

// func dotU8Q4Inl(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU8Q4Inl(SB), NOSPLIT, $0-112
	Q4SPAN(Q4SUMS, Q4CONST8, Q4UNPACK8, $16, Q4RINL, Q4GINL)

// func dotU4Q4Plain(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU4Q4Plain(SB), NOSPLIT, $0-112
	Q4SPAN(Q4NOSUMS, Q4CONST4, Q4UNPACK4, $8, Q4RPLAIN, Q4GPLAIN)

// func dotU2Q4Plain(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2Q4Plain(SB), NOSPLIT, $0-112
	Q4SPAN(Q4NOSUMS, Q4CONST2, Q4UNPACK2, $4, Q4RPLAIN, Q4GPLAIN)

// func dotU8Q4Plain(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU8Q4Plain(SB), NOSPLIT, $0-112
	Q4SPAN(Q4NOSUMS, Q4CONST8, Q4UNPACK8, $16, Q4RPLAIN, Q4GPLAIN)

// func addU4Q4W(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
TEXT ·addU4Q4W(SB), 0, $1040-112
	A4WSPAN(A4LOADSPLIT, A4CODES4, A4STORESPLIT, $8)

// func addU2Q4W(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
TEXT ·addU2Q4W(SB), 0, $1040-112
	A4WSPAN(A4LOAD, A4CODES2, A4STORE, $4)

// func addU8Q4W(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
TEXT ·addU8Q4W(SB), 0, $1040-112
	A4WSPAN(A4LOAD, A4CODES8, A4STORE, $16)


// The ZMM four-query add kernels' tables: VPERMT2PS indexes that split 32 float32s
// into odd columns (zodd; the even ones' indexes 0, 2, …, 30 are sh2's bytes, the
// 2-bit codes' shifts, lossy_consts_amd64.h) and join them back (zlo, zhi: the first
// and last 16 columns).
DATA zodd<>+0(SB)/8, $0x0000000300000001
DATA zodd<>+8(SB)/8, $0x0000000700000005
DATA zodd<>+16(SB)/8, $0x0000000b00000009
DATA zodd<>+24(SB)/8, $0x0000000f0000000d
DATA zodd<>+32(SB)/8, $0x0000001300000011
DATA zodd<>+40(SB)/8, $0x0000001700000015
DATA zodd<>+48(SB)/8, $0x0000001b00000019
DATA zodd<>+56(SB)/8, $0x0000001f0000001d
GLOBL zodd<>(SB), RODATA|NOPTR, $64

DATA zlo<>+0(SB)/8, $0x0000001000000000
DATA zlo<>+8(SB)/8, $0x0000001100000001
DATA zlo<>+16(SB)/8, $0x0000001200000002
DATA zlo<>+24(SB)/8, $0x0000001300000003
DATA zlo<>+32(SB)/8, $0x0000001400000004
DATA zlo<>+40(SB)/8, $0x0000001500000005
DATA zlo<>+48(SB)/8, $0x0000001600000006
DATA zlo<>+56(SB)/8, $0x0000001700000007
GLOBL zlo<>(SB), RODATA|NOPTR, $64

DATA zhi<>+0(SB)/8, $0x0000001800000008
DATA zhi<>+8(SB)/8, $0x0000001900000009
DATA zhi<>+16(SB)/8, $0x0000001a0000000a
DATA zhi<>+24(SB)/8, $0x0000001b0000000b
DATA zhi<>+32(SB)/8, $0x0000001c0000000c
DATA zhi<>+40(SB)/8, $0x0000001d0000000d
DATA zhi<>+48(SB)/8, $0x0000001e0000000e
DATA zhi<>+56(SB)/8, $0x0000001f0000000f
GLOBL zhi<>(SB), RODATA|NOPTR, $64


// ZSPLIT loads the 32 accumulators at R split into even (e) and odd (o) columns, the
// order of 4-bit codes widened by VPMOVZXBD (byte & 15, byte >> 4); Z20 and Z21 the
// even (sh2) and odd (zodd) indexes.
#define ZSPLIT(R, e, o) \
	VMOVUPS   (R), e          \
	VMOVUPS   (R), o          \
	VPERMT2PS 64(R), Z20, e   \
	VPERMT2PS 64(R), Z21, o

// ZJOIN stores the split accumulators e, o at R in column order (e clobbered, Z16
// scratch).
#define ZJOIN(e, o, R) \
	VMOVAPS   e, Z16          \
	VPERMT2PS o, Z22, Z16     \
	VPERMT2PS o, Z23, e       \
	VMOVUPS   Z16, (R)        \
	VMOVUPS   e, 64(R)

// Z4LOAD and Z4STORE: the accumulators of the 4-bit kernel, query r's even columns
// in Z(2r) and odd ones in Z(2r+1) (a repeated query's accumulators hold the same
// sums: any store order is right); Z24 the nibble mask.
#define Z4LOAD \
	ZSPLIT(DI, Z0, Z1)  \
	ZSPLIT(R10, Z2, Z3) \
	ZSPLIT(R11, Z4, Z5) \
	ZSPLIT(R12, Z6, Z7)

#define Z4STORE \
	ZJOIN(Z6, Z7, R12) \
	ZJOIN(Z4, Z5, R11) \
	ZJOIN(Z2, Z3, R10) \
	ZJOIN(Z0, Z1, DI)

// Z2LOAD and Z2STORE: the accumulators of the 2-bit kernel in column order, query r's
// first 16 in Z(2r), the next in Z(2r+1).
#define Z2LOAD \
	VMOVUPS (DI), Z0     \
	VMOVUPS 64(DI), Z1   \
	VMOVUPS (R10), Z2    \
	VMOVUPS 64(R10), Z3  \
	VMOVUPS (R11), Z4    \
	VMOVUPS 64(R11), Z5  \
	VMOVUPS (R12), Z6    \
	VMOVUPS 64(R12), Z7

#define Z2STORE \
	VMOVUPS Z6, (R12)    \
	VMOVUPS Z7, 64(R12)  \
	VMOVUPS Z4, (R11)    \
	VMOVUPS Z5, 64(R11)  \
	VMOVUPS Z2, (R10)    \
	VMOVUPS Z3, 64(R10)  \
	VMOVUPS Z0, (DI)     \
	VMOVUPS Z1, 64(DI)

// Z4CODES and Z2CODES unpack row BX's 32 codes at R14 into Z8 and Z9 (integers): the
// even and odd codes (4 bits, 16 bytes), or the first and the next 16 (2 bits, 8
// bytes; Z20 the shifts, sh2, Z24 the mask).
#define Z4CODES \
	VPMOVZXBD (R14)(BX*1), Z8 \
	VPSRLD    $4, Z8, Z9      \
	VPANDD    Z24, Z8, Z8

#define Z2CODES \
	VPBROADCASTD (R14)(BX*1), Z8  \
	VPBROADCASTD 4(R14)(BX*1), Z9 \
	VPSRLVD      Z20, Z8, Z8      \
	VPSRLVD      Z20, Z9, Z9      \
	VPANDD       Z24, Z8, Z8      \
	VPANDD       Z24, Z9, Z9

// A4ZSPAN is A4WSPAN with ZMM registers and chunks of 32 columns: per group,
// A4WBUILD's frame, then for each chunk (nc/2 in all) the four queries' accumulators
// (LOAD) take every row's 32 codes (CODES, converted once) times each query's
// weighted scale, then the zero sums; STORE puts them back. Each column takes the
// same operations in the same order as in A4WSPAN, so the sums are the same bits.
// CB is the code bytes of a chunk; SI the chunk's byte offset in the accumulators.
#define A4ZSPAN(LOAD, CODES, STORE, CB, MASK) \
	VMOVUPS      sh2<>(SB), Z20   \
	VMOVUPS      zodd<>(SB), Z21  \
	VMOVUPS      zlo<>(SB), Z22   \
	VMOVUPS      zhi<>(SB), Z23   \
	VPBROADCASTD MASK, Z24        \
	MOVQ rows+64(FP), R15  \
	MOVQ stride+72(FP), DX \
	MOVQ nc+88(FP), R8     \
	SHRQ $1, R8            \
	XORQ SI, SI            \
zgroup:                    \
	A4WBUILD               \
	MOVQ gs+96(FP), CX     \
	LEAQ 4(R15), R14       \
zchunk:                    \
	A4CHUNK(LOAD)          \
zrow:                      \
	CODES                  \
	VCVTDQ2PS    Z8, Z8    \
	VCVTDQ2PS    Z9, Z9    \
	VBROADCASTSS (SP)(AX*4), Z12    \
	VFMADD231PS  Z12, Z8, Z0        \
	VFMADD231PS  Z12, Z9, Z1        \
	VBROADCASTSS 256(SP)(AX*4), Z13 \
	VFMADD231PS  Z13, Z8, Z2        \
	VFMADD231PS  Z13, Z9, Z3        \
	VBROADCASTSS 512(SP)(AX*4), Z12 \
	VFMADD231PS  Z12, Z8, Z4        \
	VFMADD231PS  Z12, Z9, Z5        \
	VBROADCASTSS 768(SP)(AX*4), Z13 \
	VFMADD231PS  Z13, Z8, Z6        \
	VFMADD231PS  Z13, Z9, Z7        \
	ADDQ DX, BX            \
	INCQ AX                \
	CMPQ AX, R13           \
	JB   zrow              \
	VBROADCASTSS 1024(SP), Z12 \
	VADDPS       Z12, Z0, Z0   \
	VADDPS       Z12, Z1, Z1   \
	VBROADCASTSS 1028(SP), Z13 \
	VADDPS       Z13, Z2, Z2   \
	VADDPS       Z13, Z3, Z3   \
	VBROADCASTSS 1032(SP), Z12 \
	VADDPS       Z12, Z4, Z4   \
	VADDPS       Z12, Z5, Z5   \
	VBROADCASTSS 1036(SP), Z13 \
	VADDPS       Z13, Z6, Z6   \
	VADDPS       Z13, Z7, Z7   \
	STORE                  \
	ADDQ $128, SI          \
	ADDQ CB, R14           \
	DECQ R8                \
	JZ   zdone             \
	SUBQ $32, CX           \
	JNZ  zchunk            \
	ADDQ gb+104(FP), R15   \
	JMP  zgroup            \
zdone:                     \
	VZEROUPPER             \
	RET

// func addU4Q4Z(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
TEXT ·addU4Q4Z(SB), 0, $1040-112
	A4ZSPAN(Z4LOAD, Z4CODES, Z4STORE, $16, nib4<>(SB))

// func addU2Q4Z(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
TEXT ·addU2Q4Z(SB), 0, $1040-112
	A4ZSPAN(Z2LOAD, Z2CODES, Z2STORE, $8, two2<>(SB))
