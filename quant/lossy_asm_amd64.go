//go:build amd64 && goexperiment.simd

package quant

import "unsafe"

// Assembly versions of the 4-bit and 2-bit Affine kernels (lossyKernels, contracts
// in fused_lossy_amd64.go), in lossy_asm_amd64.s: rows4, q4, addQ1 and addQ4 for both
// widths; the one-query kernels over whole spans for 8, 4 and 2 bits (dot*RowsInl,
// dot*RowsPlain), and the param table's widening (affineParamsF16C). The compiled archsimd loops of the same kernels keep their vectors in too
// few registers (spills, broadcast words reloaded); these keep every accumulator,
// the query and the unpacked codes in the 16 YMM registers.
// Codes are unpacked exactly (integer shifts and masks, VCVTDQ2PS) and multiplied
// with float32 FMAs, the group scale applied lane-wise as in the archsimd kernels;
// only the order of the float sums differs (two chains per row, query or column).
//
// 4-bit rows4, addQ1 and addQ4 split each 16 codes into even and odd codes
// (VPMOVZXBD of the code bytes, then mask and shift) and the query or accumulators
// alike, which took fewer instructions and measured faster than a broadcast and
// variable shift per 8 codes. The 4-bit q4 reads four queries per row and keeps the
// broadcast form (splitting four queries per row would cost more than it saves), as
// do the 2-bit kernels (16 codes in one broadcast word).

// dotU4Rows4asm is rows4 for 4-bit codes.
//
//go:noescape
func dotU4Rows4asm(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)

// dotU2Rows4asm is rows4 for 2-bit codes.
//
//go:noescape
func dotU2Rows4asm(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)

// addU4Q1asm is addQ1 for 4-bit codes.
//
//go:noescape
func addU4Q1asm(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)

// addU2Q1asm is addQ1 for 2-bit codes.
//
//go:noescape
func addU2Q1asm(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)

// dotU4Q4asm is q4 for 4-bit codes.
//
//go:noescape
func dotU4Q4asm(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr)

// addU4Q4asm is addQ4 for 4-bit codes.
//
//go:noescape
func addU4Q4asm(a0p, a1p, a2p, a3p, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int)

// dotU2Q4asm is q4 for 2-bit codes.
//
//go:noescape
func dotU2Q4asm(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr)

// addU2Q4asm is addQ4 for 2-bit codes.
//
//go:noescape
func addU2Q4asm(a0p, a1p, a2p, a3p, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int)

// affineParamsF16C is lossyParams for Affine rows on CPUs with F16C: for the rows i <
// mr at rows + min(i, m−1)·stride (m ≥ 1) and their groups k < p (p ≥ 1) gb bytes
// apart, each headed by its f16 scale and zero, it stores the float32 scale at tab +
// k·kstep + 4i and the zero zoff bytes after it, widened by VCVTPH2PS (exactly, as
// F16ToF32).
//
//go:noescape
func affineParamsF16C(tab, rows unsafe.Pointer, stride uintptr, m, mr, p int, gb, zoff, kstep uintptr)

// dotU4RowsInl stores to out[4b+r] (float32 bits) the dot of the query at q with the
// 4-bit Affine row 4b+r for the ng blocks b of four rows, row i's first codes at rows
// + i·stride (np groups of gs values, gb bytes apart). Each group's f16 scale and zero
// are read from the 4 bytes before its codes and widened by VCVTPH2PS; the zero term
// is the zero times the lane sums of the query's group k, the 8 float32s at qs + 32k
// (any split of the group's sum over the lanes).
//
//go:noescape
func dotU4RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU2RowsInl is dotU4RowsInl for 2-bit codes.
//
//go:noescape
func dotU2RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU4RowsPlain is dotU4RowsInl for code rows with no parameters (KIVI key blocks,
// whose scales are in the query): the plain dot of the query with the codes plus the
// float32 at qs (the block's zero term) for each row.
//
//go:noescape
func dotU4RowsPlain(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU2RowsPlain is dotU4RowsPlain for 2-bit codes.
//
//go:noescape
func dotU2RowsPlain(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU8RowsInl is dotU4RowsInl for 8-bit codes.
//
//go:noescape
func dotU8RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU8RowsPlain is dotU4RowsPlain for 8-bit codes.
//
//go:noescape
func dotU8RowsPlain(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// channelQueryF16C is channelQuery with the block's scales and zeros widened by
// VCVTPH2PS where each query reads them (nq ≥ 1 queries, d a multiple of 8):
// qs[j·d+c] = q[j·d+c]·scale_c and b[j] = Σ_c q[j·d+c]·zero_c (float32 bits).
//
//go:noescape
func channelQueryF16C(qs, b, q, block unsafe.Pointer, nq, d int)

// addU4Q1Inl performs a[c] += Σ_{i<n} w[i]·(scale_i·code_ic + zero_i) for the 32
// columns c of one group's 32 4-bit codes of each row i, at cp + i·stride, the group's
// f16 scale and zero at hp + i·stride (widened by VCVTPH2PS in the kernel: no param
// table, no weights pass); n ≥ 1.
//
//go:noescape
func addU4Q1Inl(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)

// addU2Q1Inl is addU4Q1Inl for 2-bit codes.
//
//go:noescape
func addU2Q1Inl(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)

// addU8Q1Inl is addU4Q1Inl for 8-bit codes.
//
//go:noescape
func addU8Q1Inl(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)
