//go:build amd64

package quant

import (
	"math"
	"unsafe"
)

// The FP8 row kernels in rows_fp8_amd64.s, used by the amd64 kernel set on CPUs
// with F16C (haveF16C). An FP8 row with a per-row scale has the Int8 row layout (f16
// scale, then d one-byte codes) and a tensor-scale row is the codes alone, so the
// kernels are the Int8 F16C kernels with another widening of the codes: E5M2 codes
// are the high bytes of binary16 values, E4M3 codes become binary16 values of
// value·2⁻⁸ after a sign extension, a shift and a mask; VCVTPH2PS widens both
// exactly. The 2⁸ is folded into the scale (dot) or the weight (add). Products are
// float32 FMAs, so results equal FP8.Dot and FP8.AddScaled (the decoded reference)
// up to the order of the float sums, with one exception: the E4M3 NaN codes 0x7F and
// 0xFF count as ±480 (times the scale) instead of NaN. FP8.Encode writes them only
// for NaN inputs (finite values and ±Inf saturate to ±448), so rows encoded from
// finite values score and add as the reference does; a NaN in an E4M3 row is not
// propagated by these kernels (an exact blend of the NaN codes measured 10–15%
// slower in BenchmarkRowKernels). E5M2 keeps NaN and ±Inf.
//
// On AVX-512 CPUs the E4M3 one-query kernels and four-query scores have twins (the
// *D kernels) that widen codes straight to float32 value·2⁻¹²⁰, skipping VCVTPH2PS,
// which bounded these loops (20–25% fewer ns per row in L1), against queries or
// weights times 2¹¹²: the same products, so the same bits. Where a multiple would
// overflow the kernels above run instead.

// fp8Kernels are the row kernels of one FP8 format, and the factor between the
// value of a code and its widened binary16 (2⁸ for E4M3, 1 for E5M2). The add*Q1
// kernels come in two kinds: with each row's f16 scale (rows with a header) and
// without (tensor scale).
type fp8Kernels struct {
	dotR4, dotR4Z         fp8R4Kernel
	dotQ4, dotQ4Z         fp8DotQ4Kernel
	addQ4, addQ4Z         q4AddKernel
	addQ1x64, addQ1x16    fp8Q1Kernel // rows with a header
	addQ1x64T, addQ1x16T  fp8Q1Kernel // tensor scale
	addQ1x64Z, addQ1x64TZ fp8Q1Kernel // the ZMM twins of addQ1x64 and addQ1x64T
	unit                  float32
	// dotR4D and dotQ4D are dotR4Z and dotQ4Z widening the codes straight to float32,
	// against queries times 2¹¹² (dotE4M3R4ZD, dotE4M3Q4ZD); addQ1x64ZD and addQ1x64TZD
	// are addQ1x64Z and addQ1x64TZ widening them so, reporting false where they cannot
	// (addE4M3Q1x64ZD). Nil for E5M2.
	dotR4D                  fp8R4Kernel
	dotQ4D                  fp8DotQ4Kernel
	addQ1x64ZD, addQ1x64TZD func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool
}

// fp8R4Kernel is the shape of the one-query FP8 score kernels (dotE4M3R4F16C).
type fp8R4Kernel func(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)

// fp8DotQ4Kernel is the shape of the four-query FP8 score kernels (dotE4M3Q4F16C).
type fp8DotQ4Kernel func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// fp8Q1Kernel is the shape of the add*Q1x64 (add*Q1x16) kernels: acc[c] += Σ_{i<n}
// (w[i]·s_i·mul)·code_i[c] for c < 64 (16), row i's codes at src + i·stride, its
// f16 scale s_i at src + i·stride + so (so < 0), or s_i = 1 for the tensor-scale
// kernels (so unused).
type fp8Q1Kernel func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

var (
	fp8E4M3Kernels = fp8Kernels{dotE4M3R4F16C, dotE4M3R4Z, dotE4M3Q4F16C, dotE4M3Q4Z, addE4M3Q4F16C, addE4M3Q4Z,
		addE4M3Q1x64F16C, addE4M3Q1x16F16C, addE4M3Q1x64TF16C, addE4M3Q1x16TF16C, addE4M3Q1x64Z, addE4M3Q1x64TZ, 256, dotE4M3R4ZD, dotE4M3Q4ZD, addE4M3Q1x64ZD, addE4M3Q1x64TZD}
	fp8E5M2Kernels = fp8Kernels{dotE5M2R4F16C, dotE5M2R4Z, dotE5M2Q4F16C, dotE5M2Q4Z, addE5M2Q4F16C, addE5M2Q4Z,
		addE5M2Q1x64F16C, addE5M2Q1x16F16C, addE5M2Q1x64TF16C, addE5M2Q1x16TF16C, addE5M2Q1x64Z, addE5M2Q1x64TZ, 1, nil, nil, nil, nil}
)

// f16One is the binary16 1.0: the scale source of tensor-scale rows in foldRowScales.
var f16One = [2]byte{0x00, 0x3c}

// fp8Geom returns the kernels of rows of c (validated), the bytes before a row's
// codes (2: its f16 scale; 0 with a tensor scale) and the multiplier of the kernels:
// the format's unit, times the tensor scale if any. ok is false when that product
// overflows float32 (a tensor scale beyond about 1.3e36 for E4M3).
func fp8Geom(c FP8) (k *fp8Kernels, hdr uintptr, mul float32, ok bool) {
	k = &fp8E4M3Kernels
	if c.Format == E5M2 {
		k = &fp8E5M2Kernels
	}
	if c.TensorScale == 0 {
		return k, 2, k.unit, true
	}
	mul = c.TensorScale * k.unit
	return k, 0, mul, !math.IsInf(float64(mul), 0)
}

// dotFP8Rows is the dot kernel of FP8 rows with d a multiple of 16, on CPUs with
// F16C: dotRowsFused over the format's kernels. It reports false, having done
// nothing, for the shapes it leaves to tiles (see fp8Geom). With AVX-512, E4M3 rows
// go through the kernels that widen codes straight to float32 (dotE4M3R4ZD, and
// dotE4M3Q4ZD with VBMI) against the queries times 2¹¹²: pq, prepared once
// (RowPlan.PrepareQuery), or else scaled into tmp when they fit there; otherwise, or
// where a query is out of their range, through the others, with the same scores.
func dotFP8Rows(c FP8, scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	k, hdr, mul, ok := fp8Geom(c)
	if !ok {
		return false
	}
	// qd: the queries times 2¹¹², at the offsets of q; nil where the direct
	// kernels do not run.
	var qd unsafe.Pointer
	if k.dotR4D != nil && haveAVX512F {
		switch {
		case pq != nil:
			qd = unsafe.Pointer(&pq[0])
		case g*d <= len(tmp) && scaleQuery112(unsafe.Pointer(&tmp[0]), unsafe.Pointer(&q[0]), g*d):
			qd = unsafe.Pointer(&tmp[0])
		}
	}
	direct := func(qp unsafe.Pointer) unsafe.Pointer {
		return unsafe.Add(qd, uintptr(qp)-uintptr(unsafe.Pointer(&q[0])))
	}
	y := func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
		k.dotQ4(out, ldb, q, qs, src, stride, n, d, hdr, mul)
	}
	z := func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
		if qd != nil && haveVBMIGFNI {
			k.dotQ4D(out, ldb, direct(q), qs, src, stride, n, d, hdr, mul)
			return
		}
		k.dotQ4Z(out, ldb, q, qs, src, stride, n, d, hdr, mul)
	}
	q4 := func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
		quadDot(y, z, out, ldb, q, qs, src, stride, n, d)
	}
	dotR4 := k.dotR4
	if haveAVX512F {
		dotR4 = k.dotR4Z
	}
	r4 := func(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr) {
		if qd != nil {
			k.dotR4D(out, direct(q), src, o1, o2, o3, gstep, ng, d, hdr, mul)
			return
		}
		dotR4(out, q, src, o1, o2, o3, gstep, ng, d, hdr, mul)
	}
	dotRowsFused(q4, r4, scores, ld, q, g, src, stride, n, d)
	return true
}

// fp8FoldRows is the most rows addFP8Rows folds the scales of before the four-query
// kernel adds them: folding reads each row's first bytes and the kernel then passes
// over the batch d/16 times, all of it in L1 (with 2048 rows per batch, each row
// came from memory at least twice: foldRowScales took 16% of fp8e4m3 decode at 4k
// context).
const fp8FoldRows = 64

// addFP8Rows is the add kernel of FP8 rows with d a multiple of 16, on CPUs with
// F16C: groups of four queries through the add*Q4 kernel, the weights of a batch of
// rows times their scales (and the format's unit) in tmp first (foldRowScales); the
// queries left over through the add*Q1 kernels, which fold the scales themselves. It
// reports false, having done nothing, when tmp cannot hold the weights of four
// queries, or for the shapes fp8Geom leaves to tiles.
func addFP8Rows(c FP8, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	k, hdr, mul, ok := fp8Geom(c)
	g4 := g &^ 3
	if !ok || len(tmp) < g4 {
		return false
	}
	sp, ap := unsafe.Pointer(&src[0]), unsafe.Pointer(&acc[0])
	us, ab := uintptr(stride), uintptr(4*d)
	if g4 > 0 {
		var q4z q4AddKernel // the ZMM adds need AVX-512 BW
		if haveVNNI512 {
			q4z = k.addQ4Z
		}
		step := min(len(tmp)/g4, fp8FoldRows)
		for i0 := 0; i0 < n; i0 += step {
			m := min(step, n-i0)
			ws := tmp[:g4*m]
			_ = w[(g4-1)*ld+i0+m-1]
			rows := unsafe.Add(sp, i0*stride)
			sc, ss := rows, us // the rows' scales
			if hdr == 0 {
				sc, ss = unsafe.Pointer(&f16One), 0
			}
			foldRowScales(unsafe.Pointer(&ws[0]), unsafe.Pointer(&w[i0]), uintptr(4*ld), sc, ss, m, g4, mul)
			// g4 queries: addRowsFused runs only its four-query kernels.
			addRowsFused(k.addQ4, q4z, nil, nil, acc, unsafe.Pointer(&ws[0]), uintptr(4*m), g4, unsafe.Add(rows, hdr), stride, m, d, 1)
		}
	}
	k64, k16 := k.addQ1x64, k.addQ1x16
	if hdr == 0 {
		k64, k16 = k.addQ1x64T, k.addQ1x16T
	}
	var k64D func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool
	if haveVNNI512 { // the ZMM widening needs AVX-512 BW
		k64, k64D = k.addQ1x64Z, k.addQ1x64ZD
		if hdr == 0 {
			k64, k64D = k.addQ1x64TZ, k.addQ1x64TZD
		}
	}
	codes := unsafe.Add(sp, hdr)
	for j := g4; j < g; j++ {
		_ = w[j*ld+n-1]
		a, wj := unsafe.Add(ap, uintptr(j)*ab), unsafe.Pointer(&w[j*ld])
		c := 0
		for ; c+64 <= d; c += 64 {
			if k64D == nil || !k64D(unsafe.Add(a, 4*c), wj, unsafe.Add(codes, c), us, n, -(2+c), mul) {
				k64(unsafe.Add(a, 4*c), wj, unsafe.Add(codes, c), us, n, -(2 + c), mul)
			}
		}
		for ; c < d; c += 16 {
			k16(unsafe.Add(a, 4*c), wj, unsafe.Add(codes, c), us, n, -(2 + c), mul)
		}
	}
	return true
}

// dotE4M3R4F16C is the r4Kernel of E4M3 rows with two more arguments: out[4k+r] =
// (s_r·(q · value·2⁻⁸ of row r's codes))·mul, where a row's codes start hdr bytes
// into it and s_r is its f16 scale (the row's first two bytes) when hdr is 2, 1
// when hdr is 0.
//
//go:noescape
func dotE4M3R4F16C(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)

// dotE4M3R4Z and dotE5M2R4Z are dotE4M3R4F16C and dotE5M2R4F16C with one ZMM
// accumulator per row (AVX-512F), the same scores bit for bit: each lane takes the
// same FMAs in the same order.
//
//go:noescape
func dotE4M3R4Z(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)

//go:noescape
func dotE5M2R4Z(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)

// dotE4M3Q4ZD is dotE4M3Q4Z (AVX-512 BW and VBMI) with each 16 codes of a row pair
// widened straight to float32 in dotE4M3Q4Z's lanes (two zero-masked byte permutes put
// the codes in the top bytes of dwords; an arithmetic shift and a mask make them
// value·2⁻¹²⁰: no VCVTPH2PS), against the four queries times 2¹¹² (scaleQuery112):
// every product, and so every score, is dotE4M3Q4Z's with the queries themselves, bit
// for bit.
//
//go:noescape
func dotE4M3Q4ZD(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// dotE4M3R4ZD is dotE4M3R4Z (AVX-512F) with each 16 codes widened straight to
// float32 (value·2⁻¹²⁰: three instructions, no VCVTPH2PS), against the query times
// 2¹¹² (scaleQuery112): every product, and so every score, is dotE4M3R4Z's with the
// query itself, bit for bit.
//
//go:noescape
func dotE4M3R4ZD(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)

// scaleQuery112 writes the n values at q (n a positive multiple of 16) times 2¹¹² to
// dst, the queries of dotE4M3R4ZD and dotE4M3Q4ZD (AVX-512F), and reports whether
// every |q| < 2¹⁶ (NaN counts as below), whose multiples are then exact; where it
// reports false those kernels must not run.
//
//go:noescape
func scaleQuery112(dst, q unsafe.Pointer, n int) bool

// dotE5M2R4F16C is dotE4M3R4F16C for E5M2 rows (codes widened to their value).
//
//go:noescape
func dotE5M2R4F16C(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d, hdr uintptr, mul float32)

// dotE4M3Q4F16C is dotF16Q4 for E4M3 rows, scaled as dotE4M3R4F16C: out + 4i + r·ldb gets
// (s_i·(q_r · value·2⁻⁸ of row i's codes))·mul for the query at q + r·qs and the row
// at src + i·stride, i < n, r < 4.
//
//go:noescape
func dotE4M3Q4F16C(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// dotE4M3Q4Z and dotE5M2Q4Z are dotE4M3Q4F16C and dotE5M2Q4F16C with ZMM registers
// (AVX-512 BW: haveVNNI512) for n a multiple of 4 (n ≥ 4), the same scores bit for bit: each
// score takes the same float operations in the same order.
//
//go:noescape
func dotE4M3Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

//go:noescape
func dotE5M2Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// dotE5M2Q4F16C is dotE4M3Q4F16C for E5M2 rows.
//
//go:noescape
func dotE5M2Q4F16C(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// addE4M3Q1x64F16C is the fp8Q1Kernel of E4M3 codes (widened to value·2⁻⁸; mul holds
// the 2⁸) over 64 columns, rows with a header.
//
//go:noescape
func addE4M3Q1x64F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE4M3Q1x64ZD and addE4M3Q1x64TZD are addE4M3Q1x64Z and addE4M3Q1x64TZ (AVX-512 BW)
// with each 16 codes widened straight to float32 (value·2⁻¹²⁰: three instructions, no
// VCVTPH2PS) and each row's weight scaled by 2¹¹² to match, so that every product is
// theirs. A weight whose multiple overflows leaves a sum that is not finite: they
// store the sums, and report true, only when all 64 are finite (and their total
// too), and otherwise report false with acc untouched, the caller then running
// addE4M3Q1x64Z (addE4M3Q1x64TZ), which gives the same sums bit for bit wherever
// they report true.
//
//go:noescape
func addE4M3Q1x64ZD(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool

//go:noescape
func addE4M3Q1x64TZD(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool

// addE4M3Q1x64Z, addE4M3Q1x64TZ, addE5M2Q1x64Z and addE5M2Q1x64TZ are the 64-column
// FP8 adds with ZMM registers (AVX-512 BW: haveVNNI512), the same sums as their YMM
// twins (add*Q1x64F16C, add*Q1x64TF16C) bit for bit.
//
//go:noescape
func addE4M3Q1x64Z(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

//go:noescape
func addE4M3Q1x64TZ(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

//go:noescape
func addE5M2Q1x64Z(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

//go:noescape
func addE5M2Q1x64TZ(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE4M3Q1x64TF16C is addE4M3Q1x64F16C for E4M3 codes, 64 columns, tensor scale.
//
//go:noescape
func addE4M3Q1x64TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE4M3Q1x16F16C is addE4M3Q1x64F16C for E4M3 codes, 16 columns, rows with a header.
//
//go:noescape
func addE4M3Q1x16F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE4M3Q1x16TF16C is addE4M3Q1x64F16C for E4M3 codes, 16 columns, tensor scale.
//
//go:noescape
func addE4M3Q1x16TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE5M2Q1x64F16C is addE4M3Q1x64F16C for E5M2 codes (no 2⁸ in mul), 64 columns, rows with a header.
//
//go:noescape
func addE5M2Q1x64F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE5M2Q1x64TF16C is addE4M3Q1x64F16C for E5M2 codes (no 2⁸ in mul), 64 columns, tensor scale.
//
//go:noescape
func addE5M2Q1x64TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE5M2Q1x16F16C is addE4M3Q1x64F16C for E5M2 codes (no 2⁸ in mul), 16 columns, rows with a header.
//
//go:noescape
func addE5M2Q1x16F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE5M2Q1x16TF16C is addE4M3Q1x64F16C for E5M2 codes (no 2⁸ in mul), 16 columns, tensor scale.
//
//go:noescape
func addE5M2Q1x16TF16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)

// addE4M3Q4F16C is addInt8Q4asm for E4M3 codes: for the queries r < 4 (16 accumulators
// at acc + r·as, weights at w + r·ws, already times the rows' scales and the 2⁸),
// acc_r[c] += Σ_{i<n} w_r[i]·code_i[c]·2⁻⁸ for c < 16, row i's codes at codes +
// i·stride.
//
//go:noescape
func addE4M3Q4F16C(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addE5M2Q4F16C is addE4M3Q4F16C for E5M2 codes (no 2⁸).
//
//go:noescape
func addE5M2Q4F16C(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addE4M3Q4Z and addE5M2Q4Z are addE4M3Q4F16C and addE5M2Q4F16C over 64 columns with
// ZMM registers (AVX-512 BW: haveVNNI512), the sums of four calls of their YMM twins
// bit for bit (ADDQ4Z).
//
//go:noescape
func addE4M3Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

//go:noescape
func addE5M2Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// foldRowScales writes ws[j·m + i] = w[j·wld/4 + i]·(s_i·mul) for rows i < m and
// queries j < nq (nq ≥ 1), s_i being the f16 at src + i·stride (wld in bytes; stride
// 0: one scale for every row): the row scales of Int8 (mul 1) and FP8 rows folded
// into the weights of their four-query add kernels.
//
//go:noescape
func foldRowScales(ws, w unsafe.Pointer, wld uintptr, src unsafe.Pointer, stride uintptr, m, nq int, mul float32)

// e4m3Direct reports whether rows of c and d values are scored by dotE4M3R4ZD and
// dotE4M3Q4ZD on this CPU, against queries prepared by scaleQuery112.
func e4m3Direct(c RowCodec, d int) bool {
	f, ok := c.(FP8)
	if !ok || f.Format != E4M3 || d%16 != 0 || !haveAVX512F {
		return false
	}
	_, _, _, ok = fp8Geom(f)
	return ok
}

// FP8 rows, with F16C: fused kernels for d a multiple of 16, the decoders for
// multiples of 8; RowPlans of E4M3 rows on AVX-512 prepare the queries times 2¹¹²
// once for the kernels that widen codes straight to float32 (e4m3Direct).
func init() {
	fp8RowKernels = rowKernels{
		dot: func(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
			return d%16 == 0 && haveF16C && dotFP8Rows(c.(FP8), scores, ld, q, nil, g, src, stride, n, d, tmp)
		},
		add: func(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
			return d%16 == 0 && haveF16C && addFP8Rows(c.(FP8), acc, w, ld, g, src, stride, n, d, tmp)
		},
		decode: func(c RowCodec, dst []float32, src []byte, stride, n, d int) bool {
			if d%8 != 0 || !haveF16C {
				return false
			}
			f := c.(FP8)
			hdr := 0
			if f.TensorScale == 0 {
				hdr = 2
			}
			if f.Format == E5M2 {
				decE5M2RowsF16C(&dst[0], &src[0], uintptr(stride), n, d, hdr, f.TensorScale)
			} else {
				decE4M3RowsF16C(&dst[0], &src[0], uintptr(stride), n, d, hdr, f.TensorScale)
			}
			return true
		},
		plan: func(c RowCodec, d int) *planKernels {
			if !haveF16C || !e4m3Direct(c, d) {
				return nil
			}
			f := c.(FP8)
			return &planKernels{
				queryFloats: func(g int) int { return g*d + 1 },
				prepare: func(pq, q []float32, g int) {
					// The flag after the queries: 1 where their multiples are exact.
					pq[g*d] = 0
					if scaleQuery112(unsafe.Pointer(&pq[0]), unsafe.Pointer(&q[0]), g*d) {
						pq[g*d] = 1
					}
				},
				dot: func(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n int, tmp []float32) {
					switch {
					case pq == nil:
						dotFP8Rows(f, scores, ld, q, nil, g, src, stride, n, d, tmp)
					case pq[g*d] == 1:
						dotFP8Rows(f, scores, ld, q, pq[:g*d], g, src, stride, n, d, nil)
					default:
						// Queries out of the direct kernels' range were prepared once: the
						// others score them, without another try (no scratch).
						dotFP8Rows(f, scores, ld, q, nil, g, src, stride, n, d, nil)
					}
				},
				add: func(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) bool {
					return addFP8Rows(f, acc, w, ld, g, src, stride, n, d, tmp)
				},
			}
		},
		independent: true,
	}
}
