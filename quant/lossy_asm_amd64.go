//go:build amd64

package quant

import "unsafe"

// The one-query kernels of the Affine rows and KIVI key blocks (contracts below; the
// four-query ones are in lossy_q4_amd64.go), in lossy_asm_amd64.s: dot*RowsInl and
// dot*RowsPlain score four rows per step over a whole span, add*Q1Inl adds a span of
// rows into 32 columns of one group, and channelQueryF16C pre-scales queries with a
// KIVI block's scales. They read f16 parameters with VCVTPH2PS, which archsimd lacks,
// and keep every accumulator, the query and the unpacked codes in the 16 YMM
// registers. Codes are unpacked exactly (integer shifts and masks, VCVTDQ2PS) and
// multiplied with float32 FMAs; only the order of the float sums differs from the
// decoded reference (two chains per row).
//
// 4-bit kernels split each 16 codes into even and odd codes (VPMOVZXBD of the code
// bytes, then mask and shift) and the query or accumulators alike, which took fewer
// instructions and measured faster than a broadcast and variable shift per 8 codes;
// the 2-bit ones read 16 codes from one broadcast word.

// dotU4RowsInl stores to out[4b+r] (float32 bits) the dot of the query at q (split by
// splitEvenOdd) with the 4-bit Affine row 4b+r for the ng blocks b of four rows, row
// i's first codes at rows + i·stride (np groups of gs values, gb bytes apart). Each
// group's f16 scale and zero
// are read from the 4 bytes before its codes and widened by VCVTPH2PS; the zero term
// is the zero times the lane sums of the query's group k, the 8 float32s at qs + 32k
// (any split of the group's sum over the lanes).
//
//go:noescape
func dotU4RowsInl(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// splitEvenOdd writes the n16 ≥ 1 runs of 16 float32s at src to dst, each as its 8
// even-indexed values then its 8 odd-indexed ones: the order of the 4-bit codes
// (dotU4RowsInl, dotU4RowsPlain) as their kernels unpack them. dst may be src.
//
//go:noescape
func splitEvenOdd(dst, src unsafe.Pointer, n16 int)

// groupLaneSums writes to dst[8k+l] the sum, in order, of q[k·8·vecs + l + 8i] for
// i < vecs, for each of the groups ≥ 1 groups k of 8·vecs float32s at q (vecs ≥ 1):
// the lane sums of the *RowsInl kernels' zero terms.
//
//go:noescape
func groupLaneSums(dst, q unsafe.Pointer, groups, vecs int)

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
