//go:build amd64

package quant

import "unsafe"

// Integer scores of Int8 rows (the q8 cache type) on CPUs with F16C
// (int8_i16_amd64.s). Each query is quantized to int16 over its d values:
// D = max|q| / 32767 and q̂ = round(q / D). A row's score is then s·D·Σ_c q̂_c·code_c
// (row scale s), the sum exact in int32 (VPMOVSXBW, VPMADDWD: 16 products per
// instruction where the float kernel widened, converted and multiplied 8 per three):
// the score of the decoded row against the query's round trip q̃ = D·q̂, up to float
// rounding. Against the query itself that is off by Σ_c (q_c − q̃_c)·k_c,
// |q_c − q̃_c| ≤ D/2: 1/65534 of the query's largest magnitude, against the codec's own
// error of up to half a code step, 1/254 of a row's largest magnitude: by the algebra,
// about a 250th of it on keys and queries of comparable spread.
//
// The file also holds the int16 kernels of KIVI key blocks (4-bit and 8-bit Channel
// codes, dot*ChanI16), whose queries are the block's pre-scaled query q·scale
// quantized the same way (chanQueryI16F16C); see chanMode.

// dotInt8R4I16 is the r4Kernel of Int8 rows against an int16 query: q holds the d
// codes of quantQueryI16, then its float32 D; out[4k+r] = s_r·D·Σ_c q̂_c·code_rc.
//
//go:noescape
func dotInt8R4I16(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// dotInt8R4I16Z is dotInt8R4I16 with ZMM registers and VPDPWSSD (haveVNNI512) for d
// a multiple of 32, the same scores bit for bit: the sums are exact integers, then
// scaled alike.
//
//go:noescape
func dotInt8R4I16Z(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// dotInt8R8I16Z is dotInt8R4I16Z eight rows at a time (haveVNNI512, d a multiple of
// 32): out[8u+k] gets the score of the row at src + (8u+k)·stride, for the nu units u
// of eight rows; the same scores bit for bit, with one transposing reduction per eight
// rows instead of one per four. It asks for the line ahead bytes past each row it
// reads (pfDist, or 0 for the rows whose lines that far ahead the caller does not
// read: aheadRows).
//
//go:noescape
func dotInt8R8I16Z(out, q, src unsafe.Pointer, stride uintptr, nu int, d, ahead uintptr)

// dotInt8Q4I16 is dotInt8R4I16 for four queries (codes then D each) at q + r·qs:
// out + 4i + r·ldb gets the score of query r against row i, for i < n and r < 4; each
// row's codes are widened once for the four.
//
//go:noescape
func dotInt8Q4I16(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)

// dotInt8Q4I16Z is dotInt8Q4I16 with ZMM registers and VPDPWSSD (haveVNNI512) for n a
// multiple of 4 (n ≥ 4), the same scores bit for bit: the integer sums are the same
// int32s, and each score takes the same float operations in the same order.
//
//go:noescape
func dotInt8Q4I16Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)

// quantQueryI16 writes the d int16 codes of the query at q (d a multiple of 16) to
// dst, then its float32 scale D (i16Scale); every float operation is one IEEE float32
// operation, so quantQueryI16Go gives the same bits.
//
//go:noescape
func quantQueryI16(dst, q unsafe.Pointer, d int)

// maxI16Dim bounds the rows the int16 kernel takes: a score's integer sum adds d
// products q̂_c·code_c of magnitude at most 32767·128 (the lanes are summed in int32
// before the conversion, SUMS4), which stays below 2^31 for d ≤ 512. At 2048, as the
// bound was, an all-ones query against all-ones keys scored −8.1 at d = 1024 and
// −264 at 768 (TestDotRowsI16Extremes).
const maxI16Dim = 512

// i16Rows reports whether Int8 rows of d values are scored through the int16 kernel
// (d a multiple of 16, as every fused kernel needs).
func i16Rows(d int) bool { return haveF16C && d%16 == 0 && d <= maxI16Dim }

// Int8 rows, with F16C: scores through the int16 kernels (i16Rows), sums through
// addInt8RowsF16C for d a multiple of 16, the decoder for multiples of 8.
func init() {
	int8Kernels = rowKernels{
		dot: func(_ RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
			return i16Rows(d) && dotInt8RowsI16(scores, ld, q, nil, g, src, stride, n, d, tmp, 0)
		},
		add: func(_ RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
			return d%16 == 0 && haveF16C && addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp, 0)
		},
		// One query at a time (no four-query group): the scores through
		// dotInt8R8I16Z asking for the next rows, the sums through
		// addInt8Q1x64ZNext.
		dotNext: func(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32, next uintptr) bool {
			if !i16Rows(d) || !haveVNNI512 || d%32 != 0 || g >= 4 {
				return false
			}
			return dotInt8RowsI16(scores, ld, q, pq, g, src, stride, n, d, tmp, next)
		},
		addNext: func(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32, next uintptr) bool {
			if d%64 != 0 || !haveF16C || !haveAVX512F || g >= 4 {
				return false
			}
			return addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp, next)
		},
		decode: func(_ RowCodec, dst []float32, src []byte, stride, n, d int) bool {
			if d%8 != 0 || !haveF16C {
				return false
			}
			decInt8RowsF16C(&dst[0], &src[0], uintptr(stride), n, d)
			return true
		},
		plan: func(_ RowCodec, d int) *planKernels {
			if !i16Rows(d) {
				return nil
			}
			return &planKernels{
				queryFloats: func(g int) int { return g * (d/2 + 1) },
				prepare:     func(pq, q []float32, g int) { prepareI16(pq, q, g, d) },
				dot: func(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n int, tmp []float32) {
					dotInt8RowsI16(scores, ld, q, pq, g, src, stride, n, d, tmp, 0)
				},
				add: func(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) bool {
					return addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp, 0)
				},
			}
		},
		scored: func(_ RowCodec, q []float32, d int) []float32 {
			if i16Rows(d) {
				return roundTripI16(q, d)
			}
			return q
		},
		rounding: func(_ RowCodec, d int) float64 {
			if haveF16C && haveVNNI512 && d%64 == 0 {
				return 4 * addI16Blocks / 65534.0 // addInt8RowsF16C's four-query sums
			}
			return 0
		},
	}
}

// dotInt8RowsI16 is Int8's dot kernel on CPUs with F16C (i16Rows): the
// queries quantized (quantQueryI16, d/2 + 1 values each) into tmp or, prepared
// already, pq (prepareI16; nil if not), four at a time through dotInt8Q4I16 where
// tmp holds four (with haveVNNI512, dotInt8Q4I16Z for the rows of whole blocks of
// four), the rest one at a time through dotInt8R4I16 (dotInt8R4I16Z with haveVNNI512
// and d a multiple of 32; ScratchFloats(d) holds one for every d ≤ maxI16Dim).
func dotInt8RowsI16(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32, next uintptr) bool {
	qf := d/2 + 1 // floats of one quantized query
	_, _ = q[g*d-1], tmp[qf-1]
	qt, sp := unsafe.Pointer(&tmp[0]), unsafe.Pointer(&src[0])
	us, ud, ldb := uintptr(stride), uintptr(d), uintptr(4*ld)
	quads := len(tmp) >= 4*qf
	if pq != nil {
		_ = pq[g*qf-1]
		qt, quads = unsafe.Pointer(&pq[0]), true
	}
	// query returns where query j's codes go (and are read), quantized unless prepared.
	query := func(j, r int) unsafe.Pointer {
		if pq != nil {
			return unsafe.Add(qt, 4*j*qf)
		}
		t := unsafe.Add(qt, 4*r*qf)
		quantQueryI16(t, unsafe.Pointer(&q[j*d]), d)
		return t
	}
	j := 0
	for ; j+4 <= g && quads; j += 4 {
		q0 := query(j, 0)
		for r := 1; r < 4; r++ {
			query(j+r, r)
		}
		quadDot(dotInt8Q4I16, dotInt8Q4I16Z, unsafe.Pointer(&scores[j*ld]), ldb, q0, uintptr(4*qf), sp, us, n, ud)
	}
	zmm := haveVNNI512 && d%32 == 0 // dotInt8R4I16Z and dotInt8R8I16Z
	r4 := r4Kernel(dotInt8R4I16)
	if zmm {
		r4 = dotInt8R4I16Z
	}
	for ; j < g; j++ {
		out, qj := unsafe.Pointer(&scores[j*ld]), query(j, 0)
		if !zmm || n < 8 {
			dotR4(r4, out, qj, sp, us, n, ud)
			continue
		}
		// Units of eight rows, the last unit moved back to end at row n (the rows it
		// shares with the one before get the same bits again); the units whose lines
		// ahead lie past src ask for none (aheadRows), or, given next, all ask for
		// the rows there (into L1: asked for into L2, PREFETCHT1, a step of 16
		// sequences of 512 tokens, q8, took 11.1–11.2 ms against 9.3–9.6).
		if next != 0 {
			dotInt8R8I16Z(out, qj, sp, us, n/8, ud, next)
			if n%8 != 0 {
				dotInt8R8I16Z(unsafe.Add(out, 4*(n-8)), qj, unsafe.Add(sp, uintptr(n-8)*us), us, 1, ud, next)
			}
			continue
		}
		m := aheadRows(len(src), stride, n, pfDist)
		ua := min(n/8, m/8)
		if ua > 0 {
			dotInt8R8I16Z(out, qj, sp, us, ua, ud, pfDist)
		}
		if ua < n/8 {
			dotInt8R8I16Z(unsafe.Add(out, 32*ua), qj, unsafe.Add(sp, uintptr(8*ua)*us), us, n/8-ua, ud, 0)
		}
		if n%8 != 0 {
			ahead := uintptr(0)
			if m == n {
				ahead = pfDist
			}
			dotInt8R8I16Z(unsafe.Add(out, 4*(n-8)), qj, unsafe.Add(sp, uintptr(n-8)*us), us, 1, ud, ahead)
		}
	}
	return true
}

// prepareI16 writes to pq (g·(d/2 + 1) values) the g queries at q quantized as
// dotInt8RowsI16 reads them (quantQueryI16), query j at j·(d/2 + 1).
func prepareI16(pq, q []float32, g, d int) {
	qf := d/2 + 1
	_, _ = pq[g*qf-1], q[g*d-1]
	for j := range g {
		quantQueryI16(unsafe.Pointer(&pq[j*qf]), unsafe.Pointer(&q[j*d]), d)
	}
}

// dotU4ChanI16 scores one int16 query against the 4-bit token rows of a KIVI key
// block (Channel, d unsigned codes per row, channel 2j in the low nibble of byte j):
// q holds the d codes of quantQueryI16 applied to the pre-scaled query q·scale split
// by splitEvenOdd (per 16 channels the even ones, then the odd ones), then its
// float32 D, then the float32 zero term b; out[4k+r] = D·Σ_c q̂_c·code_c + b for
// row 4k+r at rows + (4k+r)·stride, k < ng. d is a multiple of 32.
//
//go:noescape
func dotU4ChanI16(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)

// dotU4ChanI16Z is dotU4ChanI16 with ZMM registers and VPDPWSSD (haveVNNI512), the
// same scores bit for bit: the sums are exact integers, then scaled alike.
//
//go:noescape
func dotU4ChanI16Z(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)

// dotU4ChanI16Z8C is dotU4ChanI16Z for ng units of eight token rows of 64 channels
// (d = 64) that follow one another (stride 32), with AVX-512 VBMI as well
// (haveVBMIGFNI): the same scores bit for bit (rows8_i8z_amd64.s).
//
//go:noescape
func dotU4ChanI16Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)

// dotU8ChanI16 is dotU4ChanI16 for 8-bit codes (the query in channel order).
//
//go:noescape
func dotU8ChanI16(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)

// dotU4Q4ChanI16 is dotU4ChanI16 for four queries (codes, D, b each) at q + r·qs:
// out + 4i + r·ldb gets the score of query r against row i, i < n (n ≥ 1); each row's
// codes are widened once for the four.
//
//go:noescape
func dotU4Q4ChanI16(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)

// dotU8Q4ChanI16 is dotU4Q4ChanI16 for 8-bit codes.
//
//go:noescape
func dotU8Q4ChanI16(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)

// dotU4Q4ChanI16Z is dotU4Q4ChanI16 with ZMM registers and VPDPWSSD (haveVNNI512) for
// n a multiple of 4 (n ≥ 4), the same scores bit for bit, as dotInt8Q4I16Z is of
// dotInt8Q4I16.
//
//go:noescape
func dotU4Q4ChanI16Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)

// chanQueryI16F16C prepares one query (d values at q, d a multiple of 16) for the
// int16 Channel kernels against the block at block, in one call on CPUs with F16C: dst
// gets the int16 codes of the pre-scaled query q·scale (split into even and odd
// channels per 16 when split ≠ 0, for 4-bit codes), then its D, then the zero term b
// = Σ q·zero, each as channelQueryF16C, splitEvenOdd and quantQueryI16 would compute
// it; the pre-scaled values pass through dst, which must hold d float32s.
//
//go:noescape
func chanQueryI16F16C(dst, q, block unsafe.Pointer, d, split int)

// chanQuery4I16Z is chanQueryI16F16C for four queries (query j's d values at q +
// 4dj, its slot at dst + 4dj) with ZMM registers (haveVNNI512): each 16 channels'
// scales and zeros are widened once for the four, and each query gets the codes, D
// and b chanQueryI16F16C gives it, bit for bit (the codes where D is not NaN).
//
//go:noescape
func chanQuery4I16Z(dst, q, block unsafe.Pointer, d, split int)

// channelQuery4Z is channelQueryF16C for four queries (query r's d values at q + 4dr,
// its pre-scaled values to qs + 4dr, its b to b + 4r) with ZMM registers
// (haveVNNI512): each channel's scale and zero are widened once for the four, and
// every value and b is channelQueryF16C's, bit for bit. d is a multiple of 16.
//
//go:noescape
func channelQuery4Z(qs, b, q, block unsafe.Pointer, d int)
