//go:build amd64

package quant

import (
	"math"
	"unsafe"
)

// Fused AVX2 kernels for the lossy row codecs (Affine 8/4/2-bit groups) and for KIVI
// channel blocks, (the kernels are assembly, this glue plain Go): the codes are read once, unpacked in registers and multiplied into
// the queries or the accumulators, with no decoded tile in between. The algebra
// (DESIGN.md):
//
//	Affine dot:  q·row = Σ_k s_k·(q_k·codes_k) + Σ_k lo_k·Σq_k   (k: the row's groups)
//	Affine add:  acc_c += Σ_i w_i·(s_ik·code_ic + lo_ik)          (k: the group of c)
//	Channel:     q·row = Σ_c (q_c·s_c)·code_c + Σ_c q_c·lo_c
//
// Group scales and zeros are f16, widened by VCVTPH2PS where the kernels read a
// group's codes (so Affine rows need F16C; without it they go through tiles, as F16
// and FP8 rows do). The kernels (lossy_asm_amd64.s, lossy_q4_amd64.s) take a whole
// span per call and add the zero terms themselves: queries go four at a time
// (dot*Q4Inl, add*Q4W; three as four with one repeated) and one or two left over
// through the one-query kernels (dot*RowsInl, four rows per step; add*Q1Inl, 32
// columns of one group per call, or add*Q1I16, two groups of 32 per call, four rows
// per step). Each code value is exact in float32; the products
// are float32 FMAs, so results equal the decoded reference up to the order and
// rounding of the float sums (the dot's zero term is summed apart from the codes, as
// Affine.Dot does). The exceptions are the integer kernels of 4-bit and 2-bit rows in
// groups of 32 (q4, q2, KIVI's 2-bit values): scores are taken against each query's
// int8 round trip (lossy_i8_amd64.go; ScoredQuery says which queries a reference must
// use), and values are summed with the products weight·scale rounded to int16 steps
// of their largest (addi16_amd64.go, which bounds the difference): one query's, and
// with AVX-512 VNNI four queries' too.
//
// Shapes: d a multiple of 16 and, for Affine, groups a multiple of 16 that divide d
// (groups of 16, 32, 64, … and whole rows); other shapes report false and go through
// tiles.

// lossyKernels are the kernels of one code kind (8, 4 or 2-bit codes).
type lossyKernels struct {
	// rowsInl scores blocks of four rows for one query reading the group
	// parameters from the rows (dotU4RowsInl); rowsPlain does so for rows without
	// parameters (KIVI key blocks, dotU4RowsPlain).
	rowsInl, rowsPlain rowsKernel
	// addQ1Inl adds 32 columns of one group for one query, reading the group
	// parameters from the rows (addU4Q1Inl).
	addQ1Inl func(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)
	// q4Inl and q4Plain score four queries against a span of rows (dotU4Q4Inl,
	// dotU4Q4Plain); addQ4W adds up to 64 rows into four queries' accumulators
	// (addU4Q4W). All three read the group parameters from the rows.
	q4Inl, q4Plain q4Kernel
	addQ4W         func(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
	// addQ4Z is addQ4W with ZMM registers for groups of a multiple of 32, the same
	// sums (addU4Q4Z; nil for 8-bit codes).
	addQ4Z func(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
	// addQ1P2 adds the 64 columns of a pair of groups of 32 for one query, up to
	// addI16Blocks blocks of four rows, in integers (addU4Q1I16; nil for 8-bit
	// codes).
	addQ1P2 func(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
	// addQ1P2Z is addQ1P2 with ZMM registers, the same sums (addU4Q1I16Z; nil for
	// 8-bit codes).
	addQ1P2Z func(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
	// addQ4P2Z is addQ1P2 for four queries with ZMM registers, each query's sums
	// addQ1P2's (addU4Q4I16Z; nil for 8-bit codes).
	addQ4P2Z func(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr)
}

var (
	lossyU8 = lossyKernels{dotU8RowsInl, dotU8RowsPlain, addU8Q1Inl, dotU8Q4Inl, dotU8Q4Plain, addU8Q4W, nil, nil, nil, nil}
	lossyU4 = lossyKernels{dotU4RowsInl, dotU4RowsPlain, addU4Q1Inl, dotU4Q4Inl, dotU4Q4Plain, addU4Q4W, addU4Q4Z, addU4Q1I16, addU4Q1I16Z, addU4Q4I16Z}
	lossyU2 = lossyKernels{dotU2RowsInl, dotU2RowsPlain, addU2Q1Inl, dotU2Q4Inl, dotU2Q4Plain, addU2Q4W, addU2Q4Z, addU2Q1I16, addU2Q1I16Z, addU2Q4I16Z}
)

// rowsKernel is the shape of dotU4RowsInl: one query, ng blocks of four rows.
type rowsKernel func(out, q, rows unsafe.Pointer, stride uintptr, ng int, qs unsafe.Pointer, np int, gs, gb uintptr)

// rowsBy4 runs k over n ≥ 4 rows: blocks of four rows, the last n mod 4 rows as a
// block that ends at row n−1 and overlaps the one before (its shared rows get the
// same bits again).
func rowsBy4(k rowsKernel, out, q, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr) {
	k(out, q, rows, stride, n/4, qs, np, gs, gb)
	if n%4 != 0 {
		k(unsafe.Add(out, 4*(n-4)), q, unsafe.Add(rows, uintptr(n-4)*stride), stride, 1, qs, np, gs, gb)
	}
}

// lossyGeom describes where the codes and parameters of a row are.
type lossyGeom struct {
	k    *lossyKernels
	p    int     // groups per row
	g    uintptr // values per group
	gb   uintptr // bytes per group
	hdr  uintptr // bytes before a group's codes (its scale and zero)
	bits uintptr // bits per code
}

// codeOff returns the byte offset in a row of the code of column c (c a multiple of
// 16).
func (lg *lossyGeom) codeOff(c uintptr) uintptr {
	k := c / lg.g
	return k*lg.gb + lg.hdr + (c-k*lg.g)*lg.bits/8
}

// lossyGeomOf returns the geometry of rows of d values of c, or false when the fused
// kernels do not handle c or this shape.
func lossyGeomOf(c Affine, d int) (lossyGeom, bool) {
	if d&15 != 0 || d <= 0 {
		return lossyGeom{}, false
	}
	k := lossyByBits[c.Bits&15]
	if k == nil {
		return lossyGeom{}, false
	}
	// One division per call (spans are often one cache block of 16 rows).
	g := c.group(d)
	p := d / g
	if g&15 != 0 || p*g != d {
		return lossyGeom{}, false
	}
	return lossyGeom{k: k, p: p, g: uintptr(g), gb: uintptr(4 + g*c.Bits>>3), hdr: 4, bits: uintptr(c.Bits)}, true
}

// lossyByBits are the fused kernels of each code width (nil: none, 3-bit codes go
// through tiles).
var lossyByBits = [16]*lossyKernels{8: &lossyU8, 4: &lossyU4, 2: &lossyU2}

// Affine rows, with F16C: the fused kernels above for the shapes lossyGeomOf takes,
// the decoder (decAffineRows) for groups of a multiple of 8 values; RowPlans resolve
// the geometry once and prepare the integer kernels' queries once (prepareI8).
func init() {
	affineRowKernels = rowKernels{
		dot: func(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
			return fusedDotRowsLossy(c.(Affine), scores, ld, q, g, src, stride, n, d, tmp)
		},
		add: func(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
			return fusedAddRowsLossy(c.(Affine), acc, w, ld, g, src, stride, n, d, tmp)
		},
		decode: func(c RowCodec, dst []float32, src []byte, stride, n, d int) bool {
			a := c.(Affine)
			g := a.group(d)
			if d%8 != 0 || !haveF16C || lossyByBits[a.Bits&15] == nil || g%8 != 0 || d%g != 0 {
				return false
			}
			decAffineRows(&dst[0], &src[0], uintptr(stride), n, d, g, a.Bits)
			return true
		},
		plan: func(c RowCodec, d int) *planKernels {
			lg, ok := lossyGeomOf(c.(Affine), d)
			// fusedDotRowsLossy's scratch: the package functions pass ScratchFloats(d).
			if !haveF16C || !ok || ScratchFloats(d) < 4*lg.p+2*lg.p*8+d {
				return nil
			}
			return &planKernels{
				queryFloats: func(g int) int {
					if lg.i8() {
						return i8Units(g) * (d + 8*lg.p)
					}
					return 0
				},
				prepare: func(pq, q []float32, g int) { prepareI8(&lg, pq, q, g, d) },
				dot: func(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n int, tmp []float32) {
					dotRowsQ4(&lg, scores, ld, q, pq, g, src, stride, n, d, tmp)
				},
				add: func(acc, w []float32, ld, g int, src []byte, stride, n int, _ []float32) bool {
					addRowsQ4(&lg, acc, w, ld, g, src, stride, n, d)
					return true
				},
			}
		},
		scored: func(c RowCodec, q []float32, d int) []float32 {
			if i8Query(c.(Affine), d) {
				return roundTripI8(q, 32)
			}
			return q
		},
		rounding: func(c RowCodec, d int) float64 {
			if lg, ok := lossyGeomOf(c.(Affine), d); ok && haveF16C && lg.k.addQ1P2 != nil && lg.g == 32 && d >= 64 {
				return 4 * addI16Blocks / 65534.0
			}
			return 0
		},
	}
}

// fusedDotRowsLossy is the dot kernel of Affine rows (see the top of this file): with
// F16C, tmp at least 20 values per group of a row (the queries' group sums) plus d
// (a split query).
func fusedDotRowsLossy(c Affine, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if !haveF16C {
		return false
	}
	lg, ok := lossyGeomOf(c, d)
	if !ok || len(tmp) < 4*lg.p+2*lg.p*8+d {
		return false
	}
	dotRowsQ4(&lg, scores, ld, q, nil, g, src, stride, n, d, tmp)
	return true
}

// dotRowsInl is fusedDotRowsLossy for one or two queries through lg's rowsInl kernel
// (n ≥ 4). tmp holds the queries' group lane sums (g·p·8 values: lane l of query j's
// group k is the sum of its values k·gs + l, k·gs + l + 8, … in that order, what
// 8-lane vector adds give), then, for 4-bit codes, room for one query split by
// splitEvenOdd (d values).
func dotRowsInl(lg *lossyGeom, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) {
	p, gs := lg.p, int(lg.g)
	_ = q[g*d-1]
	qs := tmp[:g*p*8]
	qp, qsp := unsafe.Pointer(&q[0]), unsafe.Pointer(&qs[0])
	groupLaneSums(qsp, qp, g*p, gs/8)
	var split unsafe.Pointer
	if lg.bits == 4 {
		split = unsafe.Pointer(&tmp[g*p*8 : g*p*8+d][0])
	}
	rows, us := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr), uintptr(stride)
	for j := range g {
		qj := unsafe.Add(qp, 4*j*d)
		if split != nil {
			splitEvenOdd(split, qj, d/16)
			qj = split
		}
		rowsBy4(lg.k.rowsInl, unsafe.Pointer(&scores[j*ld]), qj, rows, us, n, unsafe.Add(qsp, 4*8*j*p), p, lg.g, lg.gb)
	}
}

// fusedAddRowsLossy is the add kernel of Affine rows (see the top of this file), with
// F16C.
func fusedAddRowsLossy(c Affine, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if !haveF16C {
		return false
	}
	lg, ok := lossyGeomOf(c, d)
	if !ok {
		return false
	}
	addRowsQ4(&lg, acc, w, ld, g, src, stride, n, d)
	return true
}

// dotChannelAsm is DotChannelRows for a Channel block with d a multiple of 16: the
// block's scales and zeros widened once (channelQueryF16C, channelQuery4Z for four
// queries with AVX-512, or channelQuery without F16C), the queries pre-scaled into
// tmp, then the plain dot kernels over the tokens' code rows (dot*Q4Plain,
// dot*RowsPlain: one group per row, no parameters), which add the zero terms b_j;
// blocks with d a multiple of 32 go through the integer kernels instead (chanMode:
// dotChannelI8, dotChannelI16), the 2-bit ones' queries that go one at a time with
// F16C and AVX-512 VNNI through dotChannelOneI8Z, unscaled.
func dotChannelAsm(c Channel, scores []float32, ld int, q []float32, g int, block []byte, t, d, i0, i1 int, tmp []float32) bool {
	if d%16 != 0 || c.Bits != 8 && c.Bits != 4 && c.Bits != 2 {
		return false
	}
	rb := packedBytes(d, c.Bits)
	mode := chanMode(c, d)
	if mode == 16 && haveF16C {
		// Each query prepared in one call (chanQueryI16F16C), into its d-value slot;
		// with AVX-512, four at a time (chanQuery4I16Z).
		split := 0
		if c.Bits == 4 {
			split = 1
		}
		j := 0
		for ; haveVNNI512 && j+4 <= g; j += 4 {
			chanQuery4I16Z(unsafe.Pointer(&tmp[j*d]), unsafe.Pointer(&q[j*d]), unsafe.Pointer(&block[0]), d, split)
		}
		for ; j < g; j++ {
			chanQueryI16F16C(unsafe.Pointer(&tmp[j*d]), unsafe.Pointer(&q[j*d]), unsafe.Pointer(&block[0]), d, split)
		}
		chanI16Kernels(c, scores, ld, tmp[:g*d], g, unsafe.Pointer(&block[4*d+i0*rb]), uintptr(rb), i1-i0, d)
		return true
	}
	qs, sl := tmp[:g*d], tmp[g*d:g*d+2*d]
	b := f32Bits(tmp[g*d+2*d:][:g])
	m := i1 - i0
	// With F16C and AVX-512 VNNI, the 2-bit queries that go one at a time (left over
	// from groups of four, m ≥ 4) are prepared from q itself (dotChannelOneI8Z): only
	// the ns others are pre-scaled.
	one := 0
	if mode == 8 && haveF16C && haveVNNI512 && m >= 4 {
		one = g % 4 % 3
	}
	ns := g - one
	if haveF16C {
		j := 0
		for ; haveVNNI512 && j+4 <= ns; j += 4 { // four queries per pass over the block's scales
			channelQuery4Z(unsafe.Pointer(&qs[j*d]), unsafe.Pointer(&b[j]), unsafe.Pointer(&q[j*d]), unsafe.Pointer(&block[0]), d)
		}
		if j < ns {
			channelQueryF16C(unsafe.Pointer(&qs[j*d]), unsafe.Pointer(&b[j]), unsafe.Pointer(&q[j*d]), unsafe.Pointer(&block[0]), ns-j, d)
		}
	} else {
		channelQuery(qs, b, sl, q, g, d, block)
	}
	rows := unsafe.Pointer(&block[4*d+i0*rb])
	switch mode {
	case 8:
		if ns > 0 {
			dotChannelI8(c, scores, ld, qs, tmp[g*d+2*d:][:ns], sl, ns, rows, uintptr(rb), m, d)
		}
		if one > 0 {
			dotChannelOneI8Z(scores[ns*ld:], ld, q[ns*d:], one, unsafe.Pointer(&block[0]), rows, uintptr(rb), m, d, sl)
		}
		return true
	case 16:
		dotChannelI16(c, scores, ld, qs, tmp[g*d+2*d:][:g], g, rows, uintptr(rb), m, d)
		return true
	}
	k := &lossyU8
	switch c.Bits {
	case 4:
		k = &lossyU4
	case 2:
		k = &lossyU2
	}
	// Queries four at a time (three as four with one repeated; b has 4 readable
	// values from b[j]: tmp goes on past it), the kernels adding the zero terms b_j;
	// one or two left over through rowsPlain, whatever the rows: fewer than four
	// (the part of a block a span starts or ends in) are scored within a window of
	// four of the block's rows. A row's score is then the same bits however a span
	// of the block is cut into calls (spans cut where the other side's storage
	// changes, and prefill steps start anywhere).
	qp, us := unsafe.Pointer(&qs[0]), uintptr(rb)
	j := 0
	for ; j < g && (g-j >= 3 || m < 4 && t < 4); j += 4 {
		q0, q1, q2, q3, nq := quad(qp, uintptr(4*d), j, g)
		k.q4Plain(unsafe.Pointer(&scores[j*ld]), uintptr(4*ld), nq, q0, q1, q2, q3, rows, us, m, unsafe.Pointer(&b[j]), 1, uintptr(d), us)
	}
	for ; j < g; j++ {
		qj := unsafe.Pointer(&qs[j*d])
		if c.Bits == 4 {
			splitEvenOdd(qj, qj, d/16) // in place: qs is scratch
		}
		if m >= 4 {
			rowsBy4(k.rowsPlain, unsafe.Pointer(&scores[j*ld]), qj, rows, us, m, unsafe.Pointer(&b[j]), 1, uintptr(d), us)
			continue
		}
		var win [4]float32
		w0 := min(i0, t-4) // rows [w0, w0+4) of the block hold [i0, i1)
		k.rowsPlain(unsafe.Pointer(&win[0]), qj, unsafe.Pointer(&block[4*d+w0*rb]), us, 1, unsafe.Pointer(&b[j]), 1, uintptr(d), us)
		copy(scores[j*ld:][:m], win[i0-w0:])
	}
	return true
}

// chanMode returns how dotChannelAsm scores blocks of c with d channels (d a multiple
// of 32): 8 for integer kernels with int8 queries per group of 32 channels (2-bit
// codes), 16 for int16 queries per head (4-bit codes up to d = 4096, 8-bit up to 256:
// the int32 sums of d products q̂·code stay below 2^31), 0 for the float kernels.
// The int8 step of a pre-scaled query q·scale is set by each group's largest value,
// so the channels beside an outlier channel lose most of their digits: on keys with
// three outlier channels (offsets 1, 6, 20 times the others' spread) the rounding's
// RMS score error is 0.03–0.06 of the 2-bit codec's own (the q4 rows' int8 queries:
// about 0.06) but 0.16–0.35 of the 4-bit codec's (TestChannelQueryError); with int16
// queries it is 0.0007–0.0014 of the 4-bit codec's and 0.012–0.023 of the 8-bit one's.
func chanMode(c Channel, d int) int {
	switch {
	case d%32 != 0:
		return 0
	case c.Bits == 2:
		return 8
	case c.Bits == 4 && d <= 4096, c.Bits == 8 && d <= 256:
		return 16
	}
	return 0
}

// dotChannelI8 is dotChannelAsm's integer path: the pre-scaled queries qs (g·d values,
// q_c·scale_c) quantized to int8 per group of 32 channels (quantQueryI8; with
// AVX-512, quantQuad2I8Z for four 2-bit queries at once, the same codes) into sl
// (2·d values, free once the queries are scaled: d for four queries' codes, then
// their group factors and zero terms b), four at a time through dotU2Q4ChanI8
// (three, or fewer when m < 4, as four), one or two left over through dotU2ChanI8
// (with haveVNNI512: dotU2ChanI8Z, or eight rows at a time where rows8 has a kernel
// and m ≥ 8; m ≥ 4; with F16C as well dotChannelAsm takes those to dotChannelOneI8Z
// instead). b holds the g zero terms Σ_c q_c·lo_c.
func dotChannelI8(c Channel, scores []float32, ld int, qs, b, sl []float32, g int, rows unsafe.Pointer, rb uintptr, m, d int) {
	p := d / 32
	const gb = 8 // code bytes of 32 channels
	q8, qf := unsafe.Pointer(&sl[0]), sl[d:2*d]
	_, _ = qs[g*d-1], qf[8*p+3]
	j := 0
	for ; j < g && (g-j >= 3 || m < 4); j += 4 {
		nq := min(4, g-j)
		if nq == 4 && haveVNNI512 { // chanMode sends only 2-bit blocks here
			quantQuad2I8Z(q8, unsafe.Pointer(&qf[0]), unsafe.Pointer(&qs[j*d]), d)
		} else {
			for r := range nq {
				quantQueryI8(unsafe.Add(q8, r*d), unsafe.Pointer(&qf[r]), unsafe.Pointer(&qs[(j+r)*d]), p, 32, c.Bits, 32, 16)
			}
		}
		copy(qf[8*p:8*p+nq], b[j:j+nq])
		quadI8(dotU2Q4ChanI8, dotU2Q4ChanI8Z, unsafe.Pointer(&scores[j*ld]), uintptr(4*ld), nq, q8, rows, rb, m, unsafe.Pointer(&qf[0]), p, gb)
	}
	rowsK := rowsKernel(dotU2ChanI8)
	if haveVNNI512 {
		rowsK = dotU2ChanI8Z
	}
	for ; j < g; j++ {
		quantQueryI8(q8, unsafe.Pointer(&qf[0]), unsafe.Pointer(&qs[j*d]), p, 32, c.Bits, 8, 4)
		qf[2*p] = b[j]
		if k8 := rows8(2, p, rb, true); k8 != nil {
			rowsBy8(k8, rowsK, unsafe.Pointer(&scores[j*ld]), q8, rows, rb, m, unsafe.Pointer(&qf[0]), p, 32, gb)
			continue
		}
		rowsBy4(rowsK, unsafe.Pointer(&scores[j*ld]), q8, rows, rb, m, unsafe.Pointer(&qf[0]), p, 32, gb)
	}
}

// dotChannelI16 is dotChannelAsm's int16 path on CPUs without F16C: each pre-scaled
// query of qs (g·d values; for 4-bit codes split into even and odd channels per 16,
// as the kernel unpacks codes) quantized in place to d int16 codes and its D
// (quantQueryI16, which reads each value before it writes over it; the split changes
// no code), followed by its zero term b[j], then chanI16Kernels. With F16C,
// dotChannelAsm prepares each query in one call instead (chanQueryI16F16C), to the
// same values.
func dotChannelI16(c Channel, scores []float32, ld int, qs, b []float32, g int, rows unsafe.Pointer, rb uintptr, m, d int) {
	_, _ = qs[g*d-1], b[g-1]
	for j := range g {
		qj := unsafe.Pointer(&qs[j*d])
		if c.Bits == 4 {
			splitEvenOdd(qj, qj, d/16) // the order WIDENU4 unpacks codes in
		}
		quantQueryI16(qj, qj, d)
		qs[j*d+d/2+1] = b[j]
	}
	chanI16Kernels(c, scores, ld, qs, g, rows, rb, m, d)
}

// chanI16Kernels scores the g prepared int16 queries in qs (query j at qs[j·d:]: d
// codes, D, b) against the m token rows at rows: four at a time through
// dot*Q4ChanI16 (quadDot: dotU4Q4ChanI16Z with haveVNNI512), the rest through
// dot*ChanI16 (dotU4ChanI16Z with haveVNNI512, dotU4ChanI16Z8C eight rows at a time
// for 64 channels with VBMI as well and m ≥ 8; m ≥ 4) or, for m < 4, the four-query
// kernel with the query repeated and its four lanes stored to the same scores.
func chanI16Kernels(c Channel, scores []float32, ld int, qs []float32, g int, rows unsafe.Pointer, rb uintptr, m, d int) {
	rowsK, quadK, quadZ := dotU4ChanI16, dotU4Q4ChanI16, quadDotKernel(dotU4Q4ChanI16Z)
	if haveVNNI512 {
		rowsK = dotU4ChanI16Z
	}
	if c.Bits == 8 {
		rowsK, quadK, quadZ = dotU8ChanI16, dotU8Q4ChanI16, nil
	}
	_ = qs[g*d-1]
	ud, qstep := uintptr(d), uintptr(4*d)
	j := 0
	for ; j+4 <= g; j += 4 {
		quadDot(quadK, quadZ, unsafe.Pointer(&scores[j*ld]), uintptr(4*ld), unsafe.Pointer(&qs[j*d]), qstep, rows, rb, m, ud)
	}
	for ; j < g; j++ {
		out, qj := unsafe.Pointer(&scores[j*ld]), unsafe.Pointer(&qs[j*d])
		if m < 4 {
			quadK(out, 0, qj, 0, rows, rb, m, ud)
			continue
		}
		if c.Bits == 4 && d == 64 && rb == 32 && m >= 8 && haveVBMIGFNI { // eight rows at a time
			dotU4ChanI16Z8C(out, qj, rows, rb, m/8, ud)
			if m%8 != 0 {
				dotU4ChanI16Z8C(unsafe.Add(out, 4*(m-8)), qj, unsafe.Add(rows, uintptr(m-8)*rb), rb, 1, ud)
			}
			continue
		}
		rowsK(out, qj, rows, rb, m/4, ud)
		if m%4 != 0 {
			rowsK(unsafe.Add(out, 4*(m-4)), qj, unsafe.Add(rows, uintptr(m-4)*rb), rb, 1, ud)
		}
	}
}

// channelQuery widens the d scales and zeros of a Channel block into sl (scales, then
// zeros), writes the pre-scaled queries qs[j·d+c] = q[j·d+c]·scale_c and the bits of
// b[j] = Σ_c q[j·d+c]·lo_c: channelQueryF16C's job for CPUs without F16C, in Go.
func channelQuery(qs []float32, b []uint32, sl, q []float32, g, d int, block []byte) {
	s, lo := sl[:d], sl[d:2*d]
	chanParams(s, lo, block, d)
	for j := range g {
		qj, out := q[j*d:(j+1)*d], qs[j*d:(j+1)*d]
		var a float32
		for c, x := range qj {
			out[c] = x * s[c]
			a += x * lo[c]
		}
		b[j] = math.Float32bits(a)
	}
}

// f32Bits views a float32 slice as its bits.
func f32Bits(x []float32) []uint32 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&x[0])), len(x))
}
