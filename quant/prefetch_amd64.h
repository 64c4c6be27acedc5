// Shared by the kernels that read a span's KV rows first (file-local macros): the
// ZMM score kernels (lossy_i8z_amd64.s, int8_i16z_amd64.s, rows_fp8z_amd64.s), the
// one-query scores of f16, bf16, FP8 and Int8 rows (DOTR4_16, rows16_amd64.h; DOT_R4,
// rows_fp8_amd64.s; dotInt8R4I16) and of 4-bit and 2-bit rows (I8BLOCK,
// lossy_i8_amd64.s), the four-query adds' frame of 4-bit and 2-bit rows (A4WBUILD,
// lossy_q4_amd64.s), the scale folding of Int8 and FP8 rows (foldRowScales,
// rows_fp8_amd64.s), the q8 integer adds' pass over the products (addi16z_amd64.s)
// and the YMM four-query scores of f16 and bf16 rows (DOTQ4_16, rows16_amd64.h);
// PFNEXT by the adds that prefetch the calls to come (I16LOOP, i16loop_amd64.h;
// ADDQ4Z, addq4z_amd64.h; ADDQ1Z, addq1_amd64.h). The one-query kernels (the only
// ones of models without grouped-query attention) took 2–3 times less time per row
// with them in BenchmarkRowsStream (g=1): f16 scores 12.5 → 4.6 ns, q8 5.9 → 2.7,
// fp8e4m3 10.2 → 3.7 (with the ZMM kernel); adds 10.6 → 6.7, 12.1 → 4.3, 15.2 → 4.9.

// PREFETCH4 asks for the bytes PFDIST ahead of each of the four rows r0..r3 (one
// line each; rows of up to 64 bytes leave no line of a span unasked). A cache block
// stores a side's heads back to back, so past a call's last rows lie the next call's:
// without it, the hardware prefetchers, which restart at each block, left the kernels
// waiting for memory (decode attention at 32k took 7–18% longer per kernel family).
// PFDIST is 4096: against 2048, a step at 32k with 128-token blocks took 3–8% less
// time with the score kernels of q4, q2, q8, KIVI's 2-bit keys and f16, and about
// the same with FP8 and bf16; 8192 gained nothing for q4 and took 6–7% longer for q2.
#define PREFETCH4(r0, r1, r2, r3) \
	PREFETCHT0 PFDIST(r0) \
	PREFETCHT0 PFDIST(r1) \
	PREFETCHT0 PFDIST(r2) \
	PREFETCHT0 PFDIST(r3)

// PREFETCH4X2 is PREFETCH4 for rows of up to 128 bytes (f16 rows of 64 values): two
// lines each.
#define PREFETCH4X2(r0, r1, r2, r3) \
	PREFETCH4(r0, r1, r2, r3) \
	PREFETCHT0 PFDIST+64(r0) \
	PREFETCHT0 PFDIST+64(r1) \
	PREFETCHT0 PFDIST+64(r2) \
	PREFETCHT0 PFDIST+64(r3)

#define PFDIST 4096

// NOPF4 and NOPF1 stand for PREFETCH4X2 and for PFNEXTSET or PFROW2 in the twins of
// the kernels that ask for nothing ahead: a caller runs them over the rows whose
// lines ahead it will not read next (quant.aheadRows).
#define NOPF4(r0, r1, r2, r3)
#define NOPF1(r)

// PFNEXT caps how far ahead the adds that prefetch the calls to come (I16LOOP,
// ADDQ4Z) ask for rows: twice a call's bytes past its rows (where a cache block's
// heads follow one another, the call after the next), or PFNEXT bytes when that is
// nearer. Against asking for the next call's rows, a step of decode attention at 32k
// took 7–15% less time with the 4-bit and KIVI integer adds, about 4% with q8, 2–7%
// with FP8 and 0–4% with 2-bit rows; f16 values (calls of 128 rows, 16 KiB) took 3–6%
// less 8 KiB ahead and 7% more 32 KiB ahead.
#define PFNEXT 8192

// PFNEXTSET(r) leaves in r how far ahead an add that prefetches the calls to come
// asks for its rows (R13 of them, R12 bytes apart): twice their bytes, at most
// PFNEXT. Clobbers AX.
#define PFNEXTSET(r) \
	MOVQ    R13, r   \
	IMULQ   R12, r   \
	SHLQ    $1, r    \
	MOVQ    $PFNEXT, AX \
	CMPQ    r, AX    \
	CMOVQHI AX, r

// PFROW2(r) asks for the two lines r bytes past the row at R8 (rows of up to 128
// bytes).
#define PFROW2(r) \
	PREFETCHT0 (R8)(r*1) \
	PREFETCHT0 64(R8)(r*1)

// PFNEXTROWS asks, into the L2 cache (PREFETCHT1), for every line of the four rows
// r0..r3 moved next+72(FP) bytes on (R14: the rows' bytes; AX is free before
// DOTR4_16's loop): the rows the caller reads next. Asked for into L1 (PREFETCHT0)
// instead, a step of f16 decode attention of 16 sequences of 64 tokens
// (BenchmarkStepAttention) took about as long as asking for nothing, 5.8–6.3 ms
// against 5.42–6.22, where into L2 it took 3.71–3.82 (d6ec16f).
#define PFNEXTROWS(r0, r1, r2, r3) \
	MOVQ       next+72(FP), AX; \
	ADDQ       AX, r0; \
	ADDQ       AX, r1; \
	ADDQ       AX, r2; \
	ADDQ       AX, r3; \
	XORQ       AX, AX; \
pfrows: \
	PREFETCHT1 (r0)(AX*1); \
	PREFETCHT1 (r1)(AX*1); \
	PREFETCHT1 (r2)(AX*1); \
	PREFETCHT1 (r3)(AX*1); \
	ADDQ       $64, AX; \
	CMPQ       AX, R14; \
	JB         pfrows; \
	MOVQ       next+72(FP), AX; \
	SUBQ       AX, r0; \
	SUBQ       AX, r1; \
	SUBQ       AX, r2; \
	SUBQ       AX, r3

// NEXTSET(r) loads into r how far on from a row addF16Q1x64Next asks for lines.
#define NEXTSET(r) MOVQ next+40(FP), r

// NEXTSET48(r) is NEXTSET for the kernels with one more argument before next (so).
#define NEXTSET48(r) MOVQ next+48(FP), r

// PFROW2L2(r) is PFROW2 into the L2 cache (see PFNEXTROWS).
#define PFROW2L2(r) \
	PREFETCHT1 (R8)(r*1); \
	PREFETCHT1 64(R8)(r*1)
