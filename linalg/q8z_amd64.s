//go:build amd64

#include "textflag.h"
#include "blockz_amd64.h"

// Q8_0 products with AVX-512 VNNI (VPDPBUSD: four u8·s8 products summed into each int32
// lane) that compute dotQ8Scalar's sum bit for bit, for one token or many: per block b
// the exact integer dot I of the weight codes with the activation codes, then
// s = s + (d_w(b)·xd[b])·float32(I), block after block, three rounded float32
// operations (no FMA). Both kernels keep that order, so a token's result is the same
// whether it is multiplied alone (q8Rows1Z) or among many (q8TokensZ).

// TABLES8 unpacks the 8 rows' table entries of the block at BX (q8PrepZ) to the stack:
// their scales as float32 at 0(SP), their −128·Σcode at 32(SP).
#define TABLES8 \
	VMOVDQU32 (BX), Y25 \
	VPMOVDW   Y25, X26 \
	VCVTPH2PS X26, Y26 \
	VMOVUPS   Y26, 0(SP) \
	VPSRAD    $16, Y25, Y25 \
	VPSLLD    $7, Y25, Y25 \
	VMOVDQU32 Y25, 32(SP)

// TOKENS8(x, xd, a0, ..., a7, f0, ..., f7, t0, ..., t7, SG): the whole of q8Tokens8Z
// (on ZMMs, SG = STOREGROUP) and of q8Tokens8Y (on YMMs, SG = STOREGROUP8), the same
// instructions on either width, tile after tile (the tile's rows and outputs kept at
// 64 and 72(SP), the tiles left at 80(SP); BX, past one tile's table, is at the
// next's): the group's codes in x, its scales in xd, the 8 rows' int32 sums of a block
// in a0..a7 (started at the tables' −128·Σcode), their float32 sums in f0..f7, the
// transposes through t0..t3 into t4..t7 (the registers SG stores). R12 points at rows
// 4–7; R11 at the 8 rows after the next 8, prefetched pfstep (R10) bytes a block, and
// their tables at R9(BX): one line after each of the block's first six dwords, not all
// six at the block's start (2.5–4.3% less CPU time at 8, 16 and 32 tokens, llama-134m
// Q8_0). The registers are arguments (the assembler pastes no tokens); the labels are
// local to the TEXT that uses it. Defined before any TEXT, so that go vet does not
// check its frame references against another function's.
#define TOKENS8(x, xd, a0, a1, a2, a3, a4, a5, a6, a7, f0, f1, f2, f3, f4, f5, f6, f7, t0, t1, t2, t3, t4, t5, t6, t7, SG) \
	MOVQ w+16(FP), SI \
	MOVQ SI, 64(SP) \
	MOVQ tab+32(FP), BX \
	MOVQ out+0(FP), AX \
	MOVQ AX, 72(SP) \
	MOVQ tiles+80(FP), CX \
	MOVQ CX, 80(SP) \
tile: \
	MOVQ rowBytes+24(FP), DX \
	LEAQ (DX)(DX*2), R8 \
	MOVQ 64(SP), SI \
	LEAQ (SI)(DX*4), R12 \
	LEAQ (SI)(DX*8), R11 \
	LEAQ (R11)(DX*8), R11 \
	MOVQ pfstep+72(FP), R10 \
	MOVQ nb+56(FP), R9 \
	SHLQ $6, R9 \
	MOVQ xp+40(FP), DI \
	MOVQ xdp+48(FP), R15 \
	MOVQ nb+56(FP), CX \
	VPXORD f0, f0, f0 \
	VPXORD f1, f1, f1 \
	VPXORD f2, f2, f2 \
	VPXORD f3, f3, f3 \
	VPXORD f4, f4, f4 \
	VPXORD f5, f5, f5 \
	VPXORD f6, f6, f6 \
	VPXORD f7, f7, f7 \
block: \
	TABLES8 \
	VPBROADCASTD 32(SP), a0 \
	VPBROADCASTD 36(SP), a1 \
	VPBROADCASTD 40(SP), a2 \
	VPBROADCASTD 44(SP), a3 \
	VPBROADCASTD 48(SP), a4 \
	VPBROADCASTD 52(SP), a5 \
	VPBROADCASTD 56(SP), a6 \
	VPBROADCASTD 60(SP), a7 \
	TOK8(0, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	PREFETCHT1   (R11) \
	TOK8(1, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	PREFETCHT1   64(R11) \
	TOK8(2, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	PREFETCHT1   128(R11) \
	TOK8(3, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	PREFETCHT1   192(R11) \
	TOK8(4, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	PREFETCHT1   256(R11) \
	TOK8(5, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	PREFETCHT1   (BX)(R9*1) \
	TOK8(6, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	TOK8(7, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	VMOVUPS (R15), xd \
	FSCALEM(a0, f0, 0(SP), xd, t0) \
	FSCALEM(a1, f1, 4(SP), xd, t0) \
	FSCALEM(a2, f2, 8(SP), xd, t0) \
	FSCALEM(a3, f3, 12(SP), xd, t0) \
	FSCALEM(a4, f4, 16(SP), xd, t0) \
	FSCALEM(a5, f5, 20(SP), xd, t0) \
	FSCALEM(a6, f6, 24(SP), xd, t0) \
	FSCALEM(a7, f7, 28(SP), xd, t0) \
	ADDQ $34, SI \
	ADDQ $34, R12 \
	ADDQ R10, R11 \
	ADDQ $32, BX \
	ADDQ $512, DI \
	ADDQ $64, R15 \
	DECQ CX \
	JNE  block \
	MOVQ ldo+8(FP), R13 \
	SHLQ $2, R13 \
	MOVQ 72(SP), AX \
	MOVQ last+64(FP), R12 \
	TRANSPOSEW(f1, f0, f3, f2, t0, t1, t2, t3, t4, t5, t6, t7) \
	SG(half) \
half: \
	MOVQ 72(SP), AX \
	ADDQ $16, AX \
	MOVQ last+64(FP), R12 \
	TRANSPOSEW(f5, f4, f7, f6, t0, t1, t2, t3, t4, t5, t6, t7) \
	SG(done) \
done: \
	MOVQ rowBytes+24(FP), DX \
	SHLQ $3, DX \
	ADDQ DX, 64(SP) \
	ADDQ $32, 72(SP) \
	DECQ 80(SP) \
	JNE  tile \
	VZEROUPPER \
	RET

// func q8PrepZ(tab *uint32, w *byte, rowBytes, rows, nb int)
// For the Q8_0 rows at w+r·rowBytes, r < rows (a multiple of 4), in 8-row tiles: for
// row i of a tile and block b, at (tile·nb + b)·8 + i of tab, the block's binary16
// scale in the low 16 bits and −Σ_j code_j (in [−4064, 4096]) in the high 16 bits
// (q8TokensZ's and q8Tokens8Z's tables; a last tile of 4 rows leaves entries 4–7
// unwritten). Eight rows at a time: Σ(code+128) of each row by VPDPBUSD against bytes
// of 1, two rows to a ZMM, and one transposing reduction of the four ZMMs, the scales
// gathered by scalar loads; a last tile of 4 rows a row at a time (VPSADBW).
TEXT ·q8PrepZ(SB), NOSPLIT, $0-40
	MOVQ         tab+0(FP), AX
	MOVQ         w+8(FP), SI
	MOVQ         rowBytes+16(FP), DX
	MOVQ         rows+24(FP), R11
	LEAQ         (DX)(DX*2), R8
	MOVL         $0x80808080, R9
	VPBROADCASTD R9, Z17
	MOVL         $0x01010101, R9
	VPBROADCASTD R9, Z16
	MOVL         $4096, R9
	VPBROADCASTD R9, Y12

pgroup:
	CMPQ R11, $8
	JL   ptile
	MOVQ SI, DI
	LEAQ (SI)(DX*4), BX
	MOVQ nb+32(FP), CX

pblock8:
	VMOVDQU      2(DI), Y0
	VINSERTI64X4 $1, 2(BX), Z0, Z0
	VMOVDQU      2(DI)(DX*1), Y1
	VINSERTI64X4 $1, 2(BX)(DX*1), Z1, Z1
	VMOVDQU      2(DI)(DX*2), Y2
	VINSERTI64X4 $1, 2(BX)(DX*2), Z2, Z2
	VMOVDQU      2(DI)(R8*1), Y3
	VINSERTI64X4 $1, 2(BX)(R8*1), Z3, Z3
	VPXORD       Z17, Z0, Z0
	VPXORD       Z17, Z1, Z1
	VPXORD       Z17, Z2, Z2
	VPXORD       Z17, Z3, Z3
	VPXORD       Z4, Z4, Z4
	VPXORD       Z5, Z5, Z5
	VPXORD       Z6, Z6, Z6
	VPXORD       Z7, Z7, Z7
	VPDPBUSD     Z16, Z0, Z4
	VPDPBUSD     Z16, Z1, Z5
	VPDPBUSD     Z16, Z2, Z6
	VPDPBUSD     Z16, Z3, Z7
	VPUNPCKLDQ   Z5, Z4, Z8
	VPUNPCKHDQ   Z5, Z4, Z9
	VPADDD       Z9, Z8, Z8
	VPUNPCKLDQ   Z7, Z6, Z10
	VPUNPCKHDQ   Z7, Z6, Z11
	VPADDD       Z11, Z10, Z10
	VPUNPCKLQDQ  Z10, Z8, Z9
	VPUNPCKHQDQ  Z10, Z8, Z11
	VPADDD       Z11, Z9, Z9
	VSHUFI32X4   $0xD8, Z9, Z9, Z9
	VEXTRACTI64X4 $1, Z9, Y10
	VPADDD       Y10, Y9, Y9
	VPSUBD       Y9, Y12, Y9
	VPSLLD       $16, Y9, Y9

	F16X4((DI), (DI)(DX*1), (DI)(DX*2), (DI)(R8*1))
	VMOVQ     R9, X13
	F16X4((BX), (BX)(DX*1), (BX)(DX*2), (BX)(R8*1))
	VPINSRQ   $1, R9, X13, X13
	VPMOVZXWD X13, Y13
	VPOR      Y13, Y9, Y9
	VMOVDQU   Y9, (AX)

	ADDQ $34, DI
	ADDQ $34, BX
	ADDQ $32, AX
	DECQ CX
	JNE  pblock8

	LEAQ (SI)(DX*8), SI
	SUBQ $8, R11
	JMP  pgroup

ptile:
	VPXOR Y14, Y14, Y14
	TESTQ R11, R11
	JE    pdone
	MOVQ  SI, DI
	MOVQ  nb+32(FP), CX

pblock:
	MOVQ DI, R10
	MOVQ $4, R13

prow:
	VMOVDQU      2(R10), Y0
	VPXORD       Y17, Y0, Y0
	VPSADBW      Y14, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDQ       X1, X0, X0
	VMOVD        X0, R9
	NEGL         R9
	ADDL         $4096, R9
	SHLL         $16, R9
	MOVWLZX      (R10), R12
	ORL          R12, R9
	MOVL         R9, (AX)
	ADDQ         $4, AX
	ADDQ         DX, R10
	DECQ         R13
	JNE          prow

	ADDQ $16, AX // past the entries of the rows the tile lacks
	ADDQ $34, DI
	DECQ CX
	JNE  pblock

pdone:
	VZEROUPPER
	RET

// func q8UnpackZ(dst *uint32, tab *uint32, n int)
// For each 4 entries of a q8PrepZ table at tab (n of them, a multiple of 4), at twice
// their offset in dst: their scales as float32, then their −128·Σcode as int32
// (q8TokensZ's tables).
TEXT ·q8UnpackZ(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ tab+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JE   udone

uloop:
	VMOVDQU   (SI), X0
	VPMOVDW   X0, X1
	VCVTPH2PS X1, X1
	VMOVUPS   X1, (DI)
	VPSRAD    $16, X0, X0
	VPSLLD    $7, X0, X0
	VMOVDQU   X0, 16(DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNE       uloop

udone:
	RET

// TOK2(k): dword k of the block against two 16-token groups: the groups' codes (+128)
// in Z16, Z17; each of the 4 rows' dword (signed) broadcast into Z21..Z24 once for both.
#define TOK2(k) \
	VMOVDQU32    (64*k)(DI), Z16 \
	VMOVDQU32    (64*k)(DI)(R9*1), Z17 \
	VPBROADCASTD (2+4*k)(SI), Z21 \
	VPBROADCASTD (2+4*k)(SI)(DX*1), Z22 \
	VPBROADCASTD (2+4*k)(SI)(DX*2), Z23 \
	VPBROADCASTD (2+4*k)(SI)(R8*1), Z24 \
	VPDPBUSD     Z21, Z16, Z0 \
	VPDPBUSD     Z21, Z17, Z1 \
	VPDPBUSD     Z22, Z16, Z2 \
	VPDPBUSD     Z22, Z17, Z3 \
	VPDPBUSD     Z23, Z16, Z4 \
	VPDPBUSD     Z23, Z17, Z5 \
	VPDPBUSD     Z24, Z16, Z6 \
	VPDPBUSD     Z24, Z17, Z7

// TOK1(k, a0, a1, a2, a3): TOK2 for one group, into the rows' accumulators a0..a3: even
// and odd dwords go to separate accumulators (two dependency chains per row, added at
// the end of the block: integer sums, so exactly the same).
#define TOK1(k, a0, a1, a2, a3) \
	VMOVDQU32     (64*k)(DI), Z16 \
	VPDPBUSD.BCST (2+4*k)(SI), Z16, a0 \
	VPDPBUSD.BCST (2+4*k)(SI)(DX*1), Z16, a1 \
	VPDPBUSD.BCST (2+4*k)(SI)(DX*2), Z16, a2 \
	VPDPBUSD.BCST (2+4*k)(SI)(R8*1), Z16, a3

// FSCALEM(acc, facc, dw, xd, t): facc = facc + (xd·d_w)·float32(acc), d_w of the row
// at dw, t scratch: on ZMMs for 16 tokens, on YMMs for 8.
#define FSCALEM(acc, facc, dw, xd, t) \
	VCVTDQ2PS   acc, acc \
	VMULPS.BCST dw, xd, t \
	VMULPS      t, acc, acc \
	VADDPS      acc, facc, facc

// FSCALE(acc, facc, xdreg, off): FSCALEM with the row's d_w at off(BX) (the tile's tables
// as q8UnpackZ unpacks them).
#define FSCALE(acc, facc, xdreg, off) FSCALEM(acc, facc, off(BX), xdreg, Z20)

// INIT(acc, off): acc = the row's −128·Σcode at (16+off)(BX), in every lane.
#define INIT(acc, off) VPBROADCASTD (16+off)(BX), acc

// STORE4(u, lane, done): token t's 4 rows (128-bit lane of u) to (AX), then the next
// token, unless the group's valid tokens (R12) are done: then on at done.
#define STORE4(u, lane, done) \
	DECQ          R12 \
	JL            done \
	VEXTRACTF32X4 $lane, u, (AX) \
	ADDQ          R13, AX

// TRANSPOSEW(b, a, d, c, t0, t1, t2, t3, u0, u1, u2, u3): rows a, b, c, d (lane t: token
// t) to tokens: lane l of u_j holds token 4l+j's 4 rows; t0..t3 scratch. On ZMMs for 16
// tokens, on YMMs for 8.
#define TRANSPOSEW(a, b, c, d, t0, t1, t2, t3, u0, u1, u2, u3) \
	VUNPCKLPS a, b, t0 \
	VUNPCKHPS a, b, t1 \
	VUNPCKLPS c, d, t2 \
	VUNPCKHPS c, d, t3 \
	VUNPCKLPD t2, t0, u0 \
	VUNPCKHPD t2, t0, u1 \
	VUNPCKLPD t3, t1, u2 \
	VUNPCKHPD t3, t1, u3

// TRANSPOSE(b, a, d, c): TRANSPOSEW of 16 tokens into Z24..Z27.
#define TRANSPOSE(a, b, c, d) TRANSPOSEW(a, b, c, d, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27)

// STORE8(u0, u1, u2, u3, l, m, done): STORE4 of the 8 tokens in lanes l and m of the
// transposed u0..u3.
#define STORE8(u0, u1, u2, u3, l, m, done) \
	STORE4(u0, l, done) \
	STORE4(u1, l, done) \
	STORE4(u2, l, done) \
	STORE4(u3, l, done) \
	STORE4(u0, m, done) \
	STORE4(u1, m, done) \
	STORE4(u2, m, done) \
	STORE4(u3, m, done)

// STOREGROUP(done) stores the transposed group (Z24..Z27), valid tokens in R12, from AX
// with a token stride of R13 bytes; when the valid tokens run out first, it goes on at
// done.
#define STOREGROUP(done) \
	STORE8(Z24, Z25, Z26, Z27, 0, 1, done) \
	STORE8(Z24, Z25, Z26, Z27, 2, 3, done)

// STOREGROUP8(done): STOREGROUP of 8 tokens, transposed by TRANSPOSEW into Y24..Y27.
#define STOREGROUP8(done) STORE8(Y24, Y25, Y26, Y27, 0, 1, done)


// func q8TokensZ(out *float32, ldo int, w *byte, rowBytes int, tab *uint32, xp *uint32, xdp *float32, nb, groups, last int)
// The 4-row tile of Q8_0 rows at w (row stride rowBytes; their table entries as
// q8UnpackZ unpacks them at tab, 64 bytes a block: the scales as float32, then
// −128·Σcode) against groups 16-token groups packed by packTokens (xp,
// xdp): row i of token 16g+t to out[(16g+t)·ldo+i], for every t of a group but the
// last, of which only its first last tokens are stored. Groups go two at a time,
// tokens in the lanes: per block and dword, each row's four codes broadcast against
// the tokens' codes by one VPDPBUSD per group, the int32 sums started at the
// correction, then per block scaled and added as q8Rows1Z does.
TEXT ·q8TokensZ(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), AX
	MOVQ ldo+8(FP), R13
	SHLQ $2, R13
	MOVQ rowBytes+24(FP), DX
	LEAQ (DX)(DX*2), R8
	MOVQ nb+56(FP), R9
	SHLQ $9, R9            // bytes of one group's packed codes
	MOVQ nb+56(FP), R10
	SHLQ $6, R10           // bytes of one group's packed scales
	MOVQ xp+40(FP), DI
	MOVQ xdp+48(FP), R15
	MOVQ groups+64(FP), R11

tpair:
	CMPQ    R11, $2
	JL      tsingle
	MOVQ    w+16(FP), SI
	MOVQ    tab+32(FP), BX
	MOVQ    nb+56(FP), CX
	VPXORD  Z8, Z8, Z8
	VPXORD  Z9, Z9, Z9
	VPXORD  Z10, Z10, Z10
	VPXORD  Z11, Z11, Z11
	VPXORD  Z12, Z12, Z12
	VPXORD  Z13, Z13, Z13
	VPXORD  Z14, Z14, Z14
	VPXORD  Z15, Z15, Z15
	LEAQ    (SI)(DX*4), R12 // the next tile's rows, prefetched block by block

tblock2:
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(DX*1)
	PREFETCHT0 (R12)(DX*2)
	PREFETCHT0 (R12)(R8*1)
	ADDQ       $34, R12
	INIT(Z0, 0)
	INIT(Z2, 4)
	INIT(Z4, 8)
	INIT(Z6, 12)
	VMOVDQA32 Z0, Z1
	VMOVDQA32 Z2, Z3
	VMOVDQA32 Z4, Z5
	VMOVDQA32 Z6, Z7
	TOK2(0)
	TOK2(1)
	TOK2(2)
	TOK2(3)
	TOK2(4)
	TOK2(5)
	TOK2(6)
	TOK2(7)
	VMOVUPS   (R15), Z18
	VMOVUPS   (R15)(R10*1), Z19
	FSCALE(Z0, Z8, Z18, 0)
	FSCALE(Z1, Z9, Z19, 0)
	FSCALE(Z2, Z10, Z18, 4)
	FSCALE(Z3, Z11, Z19, 4)
	FSCALE(Z4, Z12, Z18, 8)
	FSCALE(Z5, Z13, Z19, 8)
	FSCALE(Z6, Z14, Z18, 12)
	FSCALE(Z7, Z15, Z19, 12)
	ADDQ      $34, SI
	ADDQ      $64, BX
	ADDQ      $512, DI
	ADDQ      $64, R15
	DECQ      CX
	JNE       tblock2

	// Both groups are whole unless the second is the last one.
	MOVQ $16, R12
	TRANSPOSE(Z10, Z8, Z14, Z12)
	STOREGROUP(tstored)
	MOVQ $16, R12
	CMPQ R11, $2
	JNE  tsecond
	MOVQ last+72(FP), R12

tsecond:
	TRANSPOSE(Z11, Z9, Z15, Z13)
	STOREGROUP(tstored)
	ADDQ R9, DI            // past the second group
	ADDQ R10, R15
	SUBQ $2, R11
	JMP  tpair

tsingle:
	TESTQ   R11, R11
	JE      tstored
	MOVQ    w+16(FP), SI
	MOVQ    tab+32(FP), BX
	MOVQ    nb+56(FP), CX
	VPXORD  Z8, Z8, Z8
	VPXORD  Z10, Z10, Z10
	VPXORD  Z12, Z12, Z12
	VPXORD  Z14, Z14, Z14
	LEAQ    (SI)(DX*4), R12 // the next tile's rows, prefetched block by block

tblock1:
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(DX*1)
	PREFETCHT0 (R12)(DX*2)
	PREFETCHT0 (R12)(R8*1)
	ADDQ       $34, R12
	INIT(Z0, 0)
	INIT(Z2, 4)
	INIT(Z4, 8)
	INIT(Z6, 12)
	VPXORD    Z1, Z1, Z1
	VPXORD    Z3, Z3, Z3
	VPXORD    Z5, Z5, Z5
	VPXORD    Z7, Z7, Z7
	TOK1(0, Z0, Z2, Z4, Z6)
	TOK1(1, Z1, Z3, Z5, Z7)
	TOK1(2, Z0, Z2, Z4, Z6)
	TOK1(3, Z1, Z3, Z5, Z7)
	TOK1(4, Z0, Z2, Z4, Z6)
	TOK1(5, Z1, Z3, Z5, Z7)
	TOK1(6, Z0, Z2, Z4, Z6)
	TOK1(7, Z1, Z3, Z5, Z7)
	VPADDD    Z1, Z0, Z0
	VPADDD    Z3, Z2, Z2
	VPADDD    Z5, Z4, Z4
	VPADDD    Z7, Z6, Z6
	VMOVUPS   (R15), Z18
	FSCALE(Z0, Z8, Z18, 0)
	FSCALE(Z2, Z10, Z18, 4)
	FSCALE(Z4, Z12, Z18, 8)
	FSCALE(Z6, Z14, Z18, 12)
	ADDQ      $34, SI
	ADDQ      $64, BX
	ADDQ      $512, DI
	ADDQ      $64, R15
	DECQ      CX
	JNE       tblock1

	MOVQ last+72(FP), R12
	TRANSPOSE(Z10, Z8, Z14, Z12)
	STOREGROUP(tstored)

tstored:
	VZEROUPPER
	RET

// TOK8(k, x, a0, ..., a7): dword k of the block against one group (its codes + 128
// loaded into x: a ZMM for 16 tokens, a YMM for the first 8), each of the 8 rows' dword
// (signed) broadcast from memory into its VPDPBUSD, into the rows' accumulators a0..a7:
// rows 0–3 from SI, 4–7 from R12.
#define TOK8(k, x, a0, a1, a2, a3, a4, a5, a6, a7) \
	VMOVDQU32     (64*k)(DI), x \
	VPDPBUSD.BCST (2+4*k)(SI), x, a0 \
	VPDPBUSD.BCST (2+4*k)(SI)(DX*1), x, a1 \
	VPDPBUSD.BCST (2+4*k)(SI)(DX*2), x, a2 \
	VPDPBUSD.BCST (2+4*k)(SI)(R8*1), x, a3 \
	VPDPBUSD.BCST (2+4*k)(R12), x, a4 \
	VPDPBUSD.BCST (2+4*k)(R12)(DX*1), x, a5 \
	VPDPBUSD.BCST (2+4*k)(R12)(DX*2), x, a6 \
	VPDPBUSD.BCST (2+4*k)(R12)(R8*1), x, a7

// func q8Tokens8Z(out *float32, ldo int, w *byte, rowBytes int, tab *uint32, xp *uint32, xdp *float32, nb, last, pfstep, tiles int)
// q8TokensZ for tiles 8-row tiles (the 8-row tiles of q8PrepZ's tables from tab, 32
// bytes a block; tiles ≥ 1), one after the other in one call, and one group, of which
// the first last tokens are stored: a weight dword broadcast serves only one group, so
// 8 rows share each load of the group's codes, and 8 accumulators each take one
// VPDPBUSD per dword. The 8 rows after the next 8, which it reads once, are prefetched
// to L2 in memory order, pfstep bytes a block, and their tables with them. Each token's
// sums are q8TokensZ's, bit for bit.
TEXT ·q8Tokens8Z(SB), NOSPLIT, $88-88
	TOKENS8(Z16, Z18, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, STOREGROUP)

// func q8Tokens8Y(out *float32, ldo int, w *byte, rowBytes int, tab *uint32, xp *uint32, xdp *float32, nb, last, pfstep, tiles int)
// q8Tokens8Z for a group of at most 8 tokens (last ≤ 8), on YMM registers: its first
// 8 lanes, so that a VPDPBUSD does no work for the empty ones (two YMM VPDPBUSD issue
// in the time of one ZMM). Each token's sums are q8Tokens8Z's, bit for bit.
TEXT ·q8Tokens8Y(SB), NOSPLIT, $88-88
	TOKENS8(Y16, Y18, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, Y20, Y21, Y22, Y23, Y24, Y25, Y26, Y27, STOREGROUP8)

// Q8CODES(off): the codes + 128 of the Q8_0 block at off(R8) in Y1 (Y15: bytes 0x80).
#define Q8CODES(off) \
	VMOVDQU (off+2)(R8), Y1 \
	VPXOR   Y15, Y1, Y1

// func q8Rows1Z(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nb int)
// out[r] = Σ_b (d_w(r,b)·xd[b])·I(r,b) for the rows at w+r·rowBytes, r < rows, one token
// (xsum[b]: the sum of activation block b's codes): the rows one after the other in
// memory order (one stream, prefetched 4 KiB ahead as q8DotRows does; eight rows at a
// time in the lanes of a register read eight streams and decoded llama-134m 17-35%
// slower). Blocks go eight at a time: each block's partial sums by one VPDPBUSD on a
// YMM (codes + 128 against the signed activations), one transposing reduction to the
// eight blocks' sums, less 128·xsum[b], converted and scaled in one vector, then added
// to the row's float32 sum block after block; the blocks left one at a time.
TEXT ·q8Rows1Z(SB), NOSPLIT, $0-64
	MOVQ         out+0(FP), AX
	MOVQ         w+8(FP), SI
	MOVQ         rows+24(FP), R11
	MOVL         $0x80808080, R9
	VMOVD        R9, X15
	VPBROADCASTD X15, Y15

r1row:
	TESTQ  R11, R11
	JE     r1done
	MOVQ   SI, R8
	MOVQ   xq+32(FP), DI
	MOVQ   xd+40(FP), R13
	MOVQ   xsum+48(FP), R14
	MOVQ   nb+56(FP), CX
	VXORPS X0, X0, X0

r1block8:
	CMPQ CX, $8
	JL   r1block
	R1BLOCKS8(Q8CODES, 34, 7)
	SUBQ $8, CX
	JMP  r1block8

r1block:
	TESTQ CX, CX
	JE    r1end
	R1BLOCK(Q8CODES, 34, 7)
	DECQ  CX
	JMP   r1block

r1end:
	VMOVSS X0, (AX)
	ADDQ   $4, AX
	ADDQ   rowBytes+16(FP), SI
	DECQ   R11
	JMP    r1row

r1done:
	VZEROUPPER
	RET
