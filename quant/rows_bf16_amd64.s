//go:build amd64

#include "textflag.h"
#include "prefetch_amd64.h"
#include "r4frame_amd64.h"
#include "rows16_amd64.h"

// BF16 row kernels: the F16 kernels' bodies (rows16_amd64.h) with each 8 bfloat16
// values widened by VPMOVZXWD and a shift into the high halves of float32s (exact),
// for CPUs with AVX2 and FMA. Declarations and contracts in rows_bf16_amd64.go.

// func dotBF16R4asm(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)
// Per group k < ng of four rows (at p = src + k·gstep, p + o1, p + o2, p + o3):
// out[4k+r] = q · row r, d values (a multiple of 16). Two accumulators per row.
TEXT ·dotBF16R4asm(SB), NOSPLIT, $0-72
	R4FRAME
	DOTR4_16(BF16W16, PREFETCH4X2)

// func dotBF16Q4asm(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)
// Per row i < n (at src + i·stride) and query r < 4 (at q + r·qs bytes):
// out[i + r·ldb/4] = q_r · row i, d values (a multiple of 16). Two accumulators per
// query.
TEXT ·dotBF16Q4asm(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldb+8(FP), BX
	MOVQ q+16(FP), SI
	MOVQ qs+24(FP), CX
	MOVQ src+32(FP), R8
	MOVQ stride+40(FP), R12
	MOVQ n+48(FP), R13
	MOVQ d+56(FP), R14
	DOTQ4_16(BF16W16)

// func addBF16Q1x64asm(acc, w, src unsafe.Pointer, stride uintptr, n int)
// acc[c] += Σ_{i<n} w[i]·row_i[c] for c < 64, row i's bfloat16 values at
// src + i·stride: the 64 sums stay in eight registers while the rows stream by.
TEXT ·addBF16Q1x64asm(SB), NOSPLIT, $0-40
	ADDQ1ARGS
	ADDQ1X64_16(BF16W16, PFNEXTSET, PFROW2)

// func addBF16Q1x16asm(acc, w, src unsafe.Pointer, stride uintptr, n int)
// acc[c] += Σ_{i<n} w[i]·row_i[c] for c < 16, rows as addF16Q1x64's; each
// column's sum one chain of FMAs in row order (ADDQ1X16_16).
TEXT ·addBF16Q1x16asm(SB), NOSPLIT, $0-40
	ADDQ1ARGS
	ADDQ1X16_16(BF16W16)
