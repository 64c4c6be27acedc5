//go:build amd64

package quant

import (
	"math"
	"unsafe"
)

// Integer value sums of 4-bit and 2-bit Affine rows in groups of 32 (the q4 and q2
// cache types, KIVI's 2-bit values) for one query, the add counterpart of the integer
// scores (lossy_i8_amd64.go), in addi16_amd64.s. A float kernel spends per row and
// group a conversion and an FMA per 8 codes; here a run of blocks of four rows first
// gets its products p_i = w_i·scale_i, and per group k of the pair their largest
// magnitude m_k, and rounds them to int16 steps of it: π_i = round(p_i·32767/m_k).
// Then
//
//	acc_c += (m_k/32767)·Σ_i π_i·code_ic + Σ_i w_i·zero_i
//
// where the inner sum is exact in int32 (VPMADDWD, two rows per instruction). The
// rounding moves each term by at most m_k/65534 times its code: for a call of n rows
// at most n/65534 of the largest |w_i·scale_i|·levels per column, so at most
// 64/65534 of Σ_i |w_i|·range_i (AddRowsRounding; about 0.1% of the average range the
// sum weighs, √n/65534 of the largest term when the roundings do not line up),
// against the codec's own error of half a code step, a thirtieth (4-bit) or a sixth
// (2-bit) of a group's range. addI16Go is the twin, term for term.
//
// The kernels read each row twice, its parameters and then its codes; while adding,
// they prefetch the rows after their own, the next call's where a cache block's heads
// follow one another: without that, the first pass waited for memory that the float
// kernel's arithmetic had hidden (decode attention at 4k was slower).

// addI16Blocks is the most blocks of four rows one integer add call takes: its frame
// holds their products, and it bounds the rounding error.
const addI16Blocks = 16

// addU4Q1I16 performs a[c] += Σ_{i<4·nb} w[i]·(scale_ik·code_ic + zero_ik) for the 64
// columns c of a pair of groups k of 32 4-bit codes, the first group's codes of row i
// at cp + i·stride, the second's gb bytes after, each group's f16 scale and zero in
// the 4 bytes before its codes, with the products w_i·scale_ik rounded to int16 steps
// (see the top of this file); 1 ≤ nb ≤ addI16Blocks.
//
//go:noescape
func addU4Q1I16(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addU2Q1I16 is addU4Q1I16 for 2-bit codes.
//
//go:noescape
func addU2Q1I16(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addU4Q1I16Z and addU2Q1I16Z are addU4Q1I16 and addU2Q1I16 with ZMM registers and
// VPDPWSSD (haveVNNI512), the same sums bit for bit (addi16z_amd64.s).
//
//go:noescape
func addU4Q1I16Z(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

//go:noescape
func addU2Q1I16Z(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addU2Q1I16ZC is addU2Q1I16Z for rows of one pair of groups (2·32 values) that
// follow one another (stride 24), with AVX-512 VBMI and GFNI as well
// (haveVBMIGFNI): the same sums bit for bit, with a block's codes and parameters
// permuted out of two loads (addi16z_amd64.s).
//
//go:noescape
func addU2Q1I16ZC(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addU4Q1I16ZC is addU2Q1I16ZC for 4-bit rows (stride 40), with AVX-512 VBMI.
//
//go:noescape
func addU4Q1I16ZC(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addU4Q4I16Z is addU4Q1I16 for four queries (accumulators a0..a3, weights
// w0..w3; a query may repeat, with its weights) with ZMM registers and VPDPWSSD
// (haveVNNI512): each query's columns get addU4Q1I16's sums bit for bit, while a row
// pair's codes are read and widened once for the four (addi16z_amd64.s). On 64 rows
// of 64 values in L1 it takes 2.7 ns per row against addU4Q4Z's 3.8: its VPDPWSSDs
// (half addU4Q4Z's FMAs) about 1.5, the pass over the products 0.8.
//
//go:noescape
func addU4Q4I16Z(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addU2Q4I16Z is addU4Q4I16Z for 2-bit codes, each query's sums addU2Q1I16's: 2.7
// ns per row in L1 against addU2Q4Z's 3.7.
//
//go:noescape
func addU2Q4I16Z(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)

// addInt8Q4I16Z performs a_r[c] += Σ_{i<4·nb} w_r[i]·scale_i·code_ic for the four
// queries r (accumulators a0..a3, weights w0..w3; a query may repeat, with its
// weights) and the d columns c (a multiple of 64) of Int8 rows, row i's f16 scale at
// rows + i·stride and its codes after it, 1 ≤ nb ≤ addI16Blocks, with ZMM registers
// and VPDPWSSD (haveVNNI512): per query the products p_i = w_r[i]·scale_i rounded to
// int16 steps of their largest magnitude m, π_i = round(p_i·32767/m), and then
//
//	a_r[c] += float(Σ_i π_i·code_ic)·P,  P = m/32767 (+ Σ_i p_i·0: NaN when a p_i is)
//
// as addI16Go does for one group of Affine rows, without zeros (addInt8I16Go is the
// twin, bit for bit). The rounding bound is addU4Q1I16's (AddRowsRounding).
//
//go:noescape
func addInt8Q4I16Z(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, nb, d int)

// addInt8I16Go is addInt8Q4I16Z in Go for one query: a gets the d columns of the n
// rows at rows (row i's f16 scale at rows[i·stride:], its codes after it) weighted
// by w; the same products, roundings and sums, bit for bit (where a product is not
// finite, both give NaN columns but may differ in π).
func addInt8I16Go(a, w []float32, rows []byte, stride, n, d int) {
	p := make([]float32, n)
	for i := range n {
		p[i] = w[i] * getF16(rows[i*stride:])
	}
	pi, P := roundI16(p)
	for c := range d {
		var acc int32
		for i := range n {
			acc += pi[i] * int32(int8(rows[i*stride+2+c]))
		}
		a[c] += float32(float32(acc) * P)
	}
}

// roundI16 returns the int16 roundings π_i = round(p_i·32767/m) of the products p
// (m their largest magnitude; all 0 when m < 2^-112, where 32767/m would overflow; a
// NaN product's −32768, as VCVTPS2DQ and a saturating pack give) and the factor P =
// m/32767 + Σ p_i·0 (NaN when a product is not finite), as the integer value kernels
// compute them.
func roundI16(p []float32) (pi []int32, P float32) {
	var m, flag float32
	for _, x := range p {
		flag += x * 0
		m = max(m, float32(math.Abs(float64(x))))
	}
	var inv float32
	if m >= 0x1p-112 {
		inv = 32767 / m
	}
	pi = make([]int32, len(p))
	for i, x := range p {
		pi[i] = -32768
		if y := float64(x * inv); !math.IsNaN(y) {
			pi[i] = int32(math.RoundToEven(y))
		}
	}
	return pi, m/32767 + flag
}

// addI16Go is addU4Q1I16 (bits 4) and addU2Q1I16 (bits 2) in Go, for n = 4·nb rows:
// a gets the 64 columns, row i's first group (f16 scale, f16 zero, codes) at
// rows[i·stride:] and its second gb bytes on. The products, their largest
// magnitudes, the int16 roundings and the integer sums are the kernel's, bit for bit
// (where a product is NaN, both give NaN sums, by P, but may differ in m and π: Go's
// max keeps a NaN, VMAXPS drops it); the float sums of the zero terms and of Σp·0
// are in another order (the kernel keeps four lanes per group and fuses the zero
// terms' multiply-adds).
func addI16Go(a, w []float32, rows []byte, stride, gb, n, bits int) {
	for k := range 2 {
		off := k * gb
		p := make([]float32, n)
		var z float32
		for i := range n {
			r := rows[i*stride+off:]
			p[i] = w[i] * getF16(r)
			z += float32(w[i] * getF16(r[2:]))
		}
		pi, P := roundI16(p)
		var acc [32]int32
		levels := int32(1)<<bits - 1
		for i := range n {
			codes := rows[i*stride+off+4:]
			for c := range 32 {
				acc[c] += pi[i] * (int32(codes[c*bits/8]>>(c*bits%8)) & levels)
			}
		}
		for c := range 32 {
			t := float32(float32(acc[c]) * P)
			t = float32(t + z)
			a[32*k+c] += t
		}
	}
}
