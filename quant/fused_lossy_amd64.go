//go:build amd64 && goexperiment.simd

package quant

import (
	"simd/archsimd"
	"unsafe"
)

// Fused AVX2 kernels for the lossy row codecs (Affine 8/4/2-bit groups) and for KIVI
// channel blocks: the
// codes are read once, unpacked in registers and multiplied into the queries or the
// accumulators, with no decoded tile in between. The algebra (DESIGN.md):
//
//	Affine dot:  q·row = Σ_k s_k·(q_k·codes_k) + Σ_k lo_k·Σq_k   (k: the row's groups)
//	Affine add:  acc_c += Σ_i (w_i·s_ik)·code_ic + Σ_i w_i·lo_ik  (k: the group of c)
//	Channel:     q·row = Σ_c (q_c·s_c)·code_c + Σ_c q_c·lo_c
//
// Group scales and zeros are f16; the rows of a call have theirs widened into a small
// float32 table in the caller's scratch (lossyParams: by VCVTPH2PS in assembly, or 8
// groups at a time in vector registers without F16C), so that the kernels broadcast
// them from memory. One or two queries over Affine rows skip the table: their kernels
// (dotU4RowsInl; addU4Q1Inl for groups of a multiple of 32) widen each group's scale
// and zero where they read its codes and add the zero term too (no pass over a table,
// the scores or the weights, and one call for all rows). Each code value is
// exact in float32; the products are float32 FMAs, so results equal the decoded
// reference up to the order and rounding of the float sums (the zero term is summed
// apart from the codes, as Affine.Dot does).
//
// Shapes: d a multiple of 16 and, for Affine, groups a multiple of 16 that divide d
// (groups of 16, 32, 64, … and whole rows); other shapes report false and go through
// tiles. Queries are taken four at a time per row; one or two left over are scored
// four rows at a time (the kernel for a group of 1), three left over as four with one
// repeated.

// lossyKernels are the kernels of one code kind (dot*Rows4, dot*Q4, add*Q4, add*Q1
// below).
//
//   - rows4 stores to out[r] the bits of q · row r for the rows whose first codes are
//     at p0..p3 (groups gb bytes apart) and the query at q, with np groups of gs
//     values, group k's scale of row r at st + k·stM + 4r: per group, the plain dot
//     of q and the codes is folded into the score with the group scale (the zero
//     terms are the caller's).
//   - q4 stores the bits of q_r · row_i at out + r·ldo + 4i for the queries r < nq
//     at q0..q3 (nq 3 or 4; q3 repeats q2 for 3) and the m rows whose first codes
//     are at rows + i·stride, row i's param table entries at st + i·sr; groups as
//     for rows4.
//   - addQ4 adds, for the queries r < 4 (accumulators of 16 columns at a0..a3,
//     weights ws_r[i] at w0..w3; a query may repeat, with its weights), Σ_i
//     ws_r[i]·codes_i over 16 columns, row i's codes at cp + i·stride.
//   - addQ1 adds Σ_i ws[i]·codes_i over 32 columns into the accumulators at a: the
//     first 16 columns with weights at w0 and codes at cp0 + i·stride, the next 16
//     with weights at w1 and codes at cp1 + i·stride (two groups of 16).
type lossyKernels struct {
	// rowsInl scores blocks of four rows for one query reading the group
	// parameters from the rows (dotU4RowsInl), with no param table; rowsPlain does
	// so for rows without parameters (KIVI key blocks, dotU4RowsPlain).
	rowsInl, rowsPlain rowsKernel
	// addQ1Inl adds 32 columns of one group for one query, reading the group
	// parameters from the rows (addU4Q1Inl).
	addQ1Inl func(a, w, hp, cp unsafe.Pointer, stride uintptr, n int)
	// q4Inl and q4Plain score four queries against a span of rows (dotU4Q4Inl,
	// dotU4Q4Plain); addQ4Inl adds a span of rows into four queries' accumulators
	// (addU4Q4Inl). All three read the group parameters from the rows.
	q4Inl, q4Plain q4Kernel
	addQ4Inl       func(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
	rows4          func(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr)
	q4             func(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr)
	addQ4          func(a0, a1, a2, a3, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int)
	addQ1          func(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int)
}

var (
	lossyU8 = lossyKernels{dotU8RowsInl, dotU8RowsPlain, addU8Q1Inl, dotU8Q4Inl, dotU8Q4Plain, addU8Q4Inl, dotU8Rows4, dotU8Q4, addU8Q4, addU8Q1}
	lossyU4 = lossyKernels{dotU4RowsInl, dotU4RowsPlain, addU4Q1Inl, dotU4Q4Inl, dotU4Q4Plain, addU4Q4Inl, dotU4Rows4asm, dotU4Q4asm, addU4Q4asm, addU4Q1asm}
	lossyU2 = lossyKernels{dotU2RowsInl, dotU2RowsPlain, addU2Q1Inl, dotU2Q4Inl, dotU2Q4Plain, addU2Q4Inl, dotU2Rows4asm, dotU2Q4asm, addU2Q4asm, addU2Q1asm}
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
	hdr  uintptr // bytes before a group's codes (its scale and zero; 0: none)
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
func lossyGeomOf(c RowCodec, d int) (lossyGeom, bool) {
	if d&15 != 0 || d <= 0 {
		return lossyGeom{}, false
	}
	switch c := c.(type) {
	case Affine:
		if c.Bits != 8 && c.Bits != 4 && c.Bits != 2 {
			return lossyGeom{}, false
		}
		// One division per call (spans are often one cache block of 16 rows).
		g := c.group(d)
		p := d / g
		if g&15 != 0 || p*g != d {
			return lossyGeom{}, false
		}
		k := &lossyU8
		switch c.Bits {
		case 4:
			k = &lossyU4
		case 2:
			k = &lossyU2
		}
		return lossyGeom{k: k, p: p, g: uintptr(g), gb: uintptr(4 + g*c.Bits>>3), hdr: 4, bits: uintptr(c.Bits)}, true
	}
	return lossyGeom{}, false
}

// lossyBatch returns how many rows a batch of the param table holds when room
// float32s of scratch are left for it (two tables of p groups × rows, rows a multiple
// of 8, at most 64), or 0 when not even 8 fit.
func lossyBatch(room, perRow int) int {
	if room <= 0 {
		return 0
	}
	return min(64, room/perRow&^7)
}

// lossyParams fills the param table of rows 0..m-1 at sp (row i at i·stride): for
// group k, tab[k·mm+i] = float32 bits of the group's scale and tab[(p+k)·mm+i] =
// those of its zero. Rows m..⌈m/8⌉·8−1 repeat row m−1. tab holds
// 2·p·mm values; mm is a multiple of 8 ≥ m.
func lossyParams(lg *lossyGeom, tab []uint32, sp unsafe.Pointer, stride uintptr, m, mm int) {
	p := lg.p
	mr := (m + 7) &^ 7
	_ = tab[2*p*mm-1]
	if haveF16C {
		affineParamsF16C(unsafe.Pointer(&tab[0]), sp, stride, m, mr, p, lg.gb, uintptr(4*p*mm), uintptr(4*mm))
		return
	}
	// No legacy SSE instruction (Go's scalar float and zeroing code) may run while
	// the vector registers are dirty: the loops below use vector code only.
	em, sg, ex, ei, ie := f16Consts()
	mul := bcast(0x77800000) // 2^112
	low, sixteen := archsimd.BroadcastUint32x8(0xffff), archsimd.BroadcastUint32x8(16)
	tp := unsafe.Pointer(&tab[0])
	zoff := uintptr(4 * p * mm)
	for i := 0; i < mr; i += 8 {
		for k := range p {
			// The words (scale | zero<<16) of 8 rows put together in registers (a
			// vector load of words just stored would wait for the stores).
			w := words8(unsafe.Add(sp, uintptr(k)*lg.gb), stride, i, m)
			o := uintptr(4 * (k*mm + i))
			st8(f16x8(w.And(low), em, sg, ex, ei, ie, mul), tp, o)
			st8(f16x8(w.ShiftRight(sixteen), em, sg, ex, ei, ie, mul), tp, zoff+o)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// words8 returns the 32-bit words at p + r·stride of rows i+r, r < 8, rows past m−1
// read as row m−1. Pairs of words are joined in integer registers, so that four
// inserts build the vector (no array: its zeroing is an SSE store).
func words8(p unsafe.Pointer, stride uintptr, i, m int) archsimd.Uint32x8 {
	p = unsafe.Add(p, uintptr(i)*stride)
	last := uintptr(m - i - 1)
	at := func(r uintptr) uint64 { return uint64(*(*uint32)(unsafe.Add(p, min(r, last)*stride))) }
	var lo, hi archsimd.Uint64x2
	lo = lo.SetElem(0, at(0)|at(1)<<32).SetElem(1, at(2)|at(3)<<32)
	hi = hi.SetElem(0, at(4)|at(5)<<32).SetElem(1, at(6)|at(7)<<32)
	var v archsimd.Uint32x8
	return v.SetLo(lo.AsUint32x4()).SetHi(hi.AsUint32x4())
}

// fusedDotRowsLossy is fusedDotRows for Affine rows; see the top of this file. tmp
// holds the query group sums and the param table of a batch of rows.
func fusedDotRowsLossy(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	lg, ok := lossyGeomOf(c, d)
	if !ok {
		return false
	}
	p := lg.p
	if haveF16C && len(tmp) >= 4*p+2*p*8 {
		dotRowsQ4(&lg, scores, ld, q, g, src, stride, n, d, tmp)
		return true
	}
	pp := (p + 3) &^ 3
	nsq := g * pp
	mm := lossyBatch(len(tmp)-nsq-4, 2*p)
	if mm == 0 {
		return false
	}
	sq, tab := f32Bits(tmp[:nsq]), f32Bits(tmp[nsq:nsq+2*p*mm])
	// The kernels' outputs for rows or queries that are not all stored (in the
	// scratch: a local array would escape through the kernels' function values).
	t := (*[4]uint32)(f32Bits(tmp[len(tmp)-4:]))
	groupSums(sq, q, g, d, int(lg.g), pp)
	sb := f32Bits(scores)
	sp, qp, tp := unsafe.Pointer(&src[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&tab[0])
	ustride, stM := uintptr(stride), uintptr(4*mm)
	for i0 := 0; i0 < n; i0 += mm {
		m := min(mm, n-i0)
		rows := unsafe.Add(sp, uintptr(i0)*ustride)
		lossyParams(&lg, tab, rows, ustride, m, mm)
		lossyDotRows(&lg, sb[i0:], ld, qp, g, d, unsafe.Add(rows, lg.hdr), ustride, m, tp, 4, stM, t)
		addZeroTerms(sb, ld, g, i0, m, sq, pp, tab[p*mm:], mm, p)
	}
	return true
}

// dotRowsInl is fusedDotRowsLossy for one or two queries through lg's rowsInl kernel
// (n ≥ 4). qs holds the queries' group lane sums.
func dotRowsInl(lg *lossyGeom, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, qs []float32) {
	p, gs := lg.p, int(lg.g)
	_ = q[g*d-1]
	qp, qsp := unsafe.Pointer(&q[0]), unsafe.Pointer(&qs[0])
	for j := range g {
		for k := range p {
			st8(groupSum(unsafe.Add(qp, 4*j*d), k, p, gs), qsp, uintptr(4*8*(j*p+k)))
		}
	}
	archsimd.ClearAVXUpperBits()
	rows, us := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr), uintptr(stride)
	for j := range g {
		rowsBy4(lg.k.rowsInl, unsafe.Pointer(&scores[j*ld]), unsafe.Add(qp, 4*j*d), rows, us, n, unsafe.Add(qsp, 4*8*j*p), p, lg.g, lg.gb)
	}
}

// lossyDotRows runs the dot kernels of lg over m rows for g queries (query j at qp +
// 4·j·d bytes), row i's first codes at rows + i·stride, into sb[j·ld+i]. Row i's
// param table entries are at st + i·sr (sr 0: every row shares those at st). Queries
// go four at a time per row (three: one repeated); one or two left over are scored
// four rows at a time. t is scratch for the outputs not all stored.
func lossyDotRows(lg *lossyGeom, sb []uint32, ld int, qp unsafe.Pointer, g, d int, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, t *[4]uint32) {
	k, p, gs, gb := lg.k, lg.p, lg.g, lg.gb
	qb := uintptr(4 * d)
	j := 0
	for ; j < g && g-j != 1 && g-j != 2; j += 4 {
		q0 := unsafe.Add(qp, uintptr(j)*qb)
		q1, q2 := unsafe.Add(q0, qb), unsafe.Add(q0, 2*qb)
		q3 := q2
		if g-j >= 4 {
			q3 = unsafe.Add(q0, 3*qb)
		}
		k.q4(unsafe.Pointer(&sb[j*ld]), uintptr(4*ld), min(4, g-j), q0, q1, q2, q3, rows, stride, m, st, sr, stM, p, gs, gb)
	}
	for ; j < g; j++ {
		qj := unsafe.Add(qp, uintptr(j)*qb)
		for i := 0; i < m; i += 4 {
			r := min(4, m-i)
			p0 := unsafe.Add(rows, uintptr(i)*stride)
			p1, p2, p3 := p0, p0, p0
			if r > 1 {
				p1 = unsafe.Add(p0, stride)
			}
			if r > 2 {
				p2 = unsafe.Add(p0, 2*stride)
			}
			if r > 3 {
				p3 = unsafe.Add(p0, 3*stride)
			}
			// Missing rows read row i and the param table's row m−1 (their outputs
			// are dropped).
			if r == 4 {
				k.rows4((*[4]uint32)(sb[j*ld+i:]), qj, p0, p1, p2, p3, unsafe.Add(st, uintptr(i)*sr), stM, p, gs, gb)
				continue
			}
			k.rows4(t, qj, p0, p1, p2, p3, unsafe.Add(st, uintptr(i)*sr), stM, p, gs, gb)
			copy(sb[j*ld+i:][:r], t[:r])
		}
	}
}

// groupSums writes sq[j·pp+k] = Σ of query j's values in group k (groups of gs
// values, p = d/gs of them; entries k ≥ p of each query are 0).
func groupSums(sq []uint32, q []float32, g, d, gs, pp int) {
	_ = sq[g*pp-1]
	_ = q[g*d-1]
	qp := unsafe.Pointer(&q[0])
	p := d / gs
	for j := range g {
		qj := unsafe.Add(qp, 4*j*d)
		for k0 := 0; k0 < pp; k0 += 4 {
			v0 := groupSum(qj, k0, p, gs)
			v1 := groupSum(qj, k0+1, p, gs)
			v2 := groupSum(qj, k0+2, p, gs)
			v3 := groupSum(qj, k0+3, p, gs)
			sum4(v0, v1, v2, v3).AsUint32x4().Store((*[4]uint32)(sq[j*pp+k0:]))
		}
	}
	archsimd.ClearAVXUpperBits()
}

// moveBits copies src to dst with integer moves (copy may use SSE instructions, which
// must not run while the vector registers are dirty).
func moveBits(dst, src []uint32) {
	//lint:ignore S1001 copy may use SSE while the YMM registers are dirty
	for i, x := range src {
		dst[i] = x
	}
}

// groupSum returns the lanes of query values of group k (0 for k ≥ p) summed
// vertically.
func groupSum(q unsafe.Pointer, k, p, gs int) archsimd.Float32x8 {
	var v archsimd.Float32x8
	if k < p {
		for c := k * gs; c < (k+1)*gs; c += 8 {
			v = v.Add(ld8(q, uintptr(4*c)))
		}
	}
	return v
}

// addZeroTerms adds the Affine zero terms of rows i0..i0+m-1 to the scores:
// scores[j·ld+i0+i] += Σ_k lo[k·mm+i]·sq[j·pp+k].
func addZeroTerms(sb []uint32, ld, g, i0, m int, sq []uint32, pp int, lo []uint32, mm, p int) {
	var t [8]uint32 // zeroed here, before any vector code (see lossyParams)
	lp := unsafe.Pointer(&lo[0])
	for j := range g {
		sqj := sq[j*pp:][:p]
		for i := 0; i < m; i += 8 {
			var b archsimd.Float32x8
			for k, s := range sqj {
				b = ld8(lp, uintptr(4*(k*mm+i))).MulAdd(bcast(s), b)
			}
			out := sb[j*ld+i0+i:]
			if m-i >= 8 {
				o := (*[8]uint32)(out)
				archsimd.LoadUint32x8(o).AsFloat32x8().Add(b).AsUint32x8().Store(o)
				continue
			}
			r := m - i
			moveBits(t[:r], out[:r])
			archsimd.LoadUint32x8(&t).AsFloat32x8().Add(b).AsUint32x8().Store(&t)
			moveBits(out[:r], t[:r])
		}
	}
	archsimd.ClearAVXUpperBits()
}

// Code unpacking: 16 consecutive codes at p into two vectors of 8 float32s.

func unpackU8(p unsafe.Pointer) (x0, x1 archsimd.Float32x8) {
	return bytes8(p, 0).AsInt32x8().ConvertToFloat32(), bytes8(p, 8).AsInt32x8().ConvertToFloat32()
}

// fusedAddRowsLossy is fusedAddRows for Affine rows; see the top of this
// file. tmp holds the param table and the scaled weights of a batch of rows.
func fusedAddRowsLossy(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	lg, ok := lossyGeomOf(c, d)
	if !ok {
		return false
	}
	p := lg.p
	if haveF16C {
		addRowsQ4(&lg, acc, w, ld, g, src, stride, n, d)
		return true
	}
	mm := lossyBatch(len(tmp), (2+g)*p)
	if mm == 0 {
		return false
	}
	tab := f32Bits(tmp[:2*p*mm])
	ws := tmp[2*p*mm : (2+g)*p*mm]
	sp, ap, wsp := unsafe.Pointer(&src[0]), unsafe.Pointer(&acc[0]), unsafe.Pointer(&ws[0])
	ustride, ab, wq := uintptr(stride), uintptr(4*d), uintptr(4*p*mm)
	wk := uintptr(4 * mm) // between the weights of two groups
	for i0 := 0; i0 < n; i0 += mm {
		m := min(mm, n-i0)
		rows := unsafe.Add(sp, uintptr(i0)*ustride)
		lossyParams(&lg, tab, rows, ustride, m, mm)
		lossyWeights(&lg, acc, w, ld, g, i0, m, tab, ws, mm, d)
		j := 0
		for ; j < g && g-j != 1 && g-j != 2; j += 4 { // four queries (three: one repeated)
			a0 := unsafe.Add(ap, uintptr(j)*ab)
			a1, a2 := unsafe.Add(a0, ab), unsafe.Add(a0, 2*ab)
			w0 := unsafe.Add(wsp, uintptr(j)*wq)
			w1, w2 := unsafe.Add(w0, wq), unsafe.Add(w0, 2*wq)
			a3, w3 := a2, w2
			if g-j >= 4 {
				a3, w3 = unsafe.Add(a0, 3*ab), unsafe.Add(w0, 3*wq)
			}
			for c := uintptr(0); c < uintptr(d); c += 16 {
				ko := c / lg.g * wk
				lg.k.addQ4(unsafe.Add(a0, 4*c), unsafe.Add(a1, 4*c), unsafe.Add(a2, 4*c), unsafe.Add(a3, 4*c),
					unsafe.Add(w0, ko), unsafe.Add(w1, ko), unsafe.Add(w2, ko), unsafe.Add(w3, ko),
					unsafe.Add(rows, lg.codeOff(c)), ustride, m)
			}
		}
		for ; j < g; j++ { // one query, 32 columns at a time
			aj := unsafe.Add(ap, uintptr(j)*ab)
			wj := unsafe.Add(wsp, uintptr(j)*wq)
			c := uintptr(0)
			for ; c+32 <= uintptr(d); c += 32 {
				lg.k.addQ1(unsafe.Add(aj, 4*c), unsafe.Add(wj, c/lg.g*wk), unsafe.Add(wj, (c+16)/lg.g*wk),
					unsafe.Add(rows, lg.codeOff(c)), unsafe.Add(rows, lg.codeOff(c+16)), ustride, m)
			}
			if c < uintptr(d) { // 16 columns left: the four-query kernel with one query
				a, wc := unsafe.Add(aj, 4*c), unsafe.Add(wj, c/lg.g*wk)
				lg.k.addQ4(a, a, a, a, wc, wc, wc, wc, unsafe.Add(rows, lg.codeOff(c)), ustride, m)
			}
		}
	}
	return true
}

// lossyWeights folds the row scales of rows i0..i0+m-1 into the weights, ws[(j·p+k)·mm
// + i] = w[j·ld+i0+i]·s_ik, and adds the zero terms Σ_i w[j·ld+i0+i]·lo_ik
// to every column of group k of acc_j. tab is the batch's param table.
func lossyWeights(lg *lossyGeom, acc, w []float32, ld, g, i0, m int, tab []uint32, ws []float32, mm, d int) {
	var wt [8]uint32 // zeroed here, before any vector code (see lossyParams)
	var bt [4]uint32
	p := lg.p
	mr := (m + 7) &^ 7
	tp, wsp, ap := unsafe.Pointer(&tab[0]), unsafe.Pointer(&ws[0]), unsafe.Pointer(&acc[0])
	zoff := uintptr(4 * p * mm)
	gs := int(lg.g)
	for j := range g {
		wj := w[j*ld+i0:]
		for k := range p {
			var b archsimd.Float32x8
			for i := 0; i < mr; i += 8 {
				var wv archsimd.Float32x8
				if m-i >= 8 {
					wv = archsimd.LoadFloat32x8((*[8]float32)(wj[i:]))
				} else { // rows past m weigh 0 (wt is all 0 after them)
					moveBits(wt[:], f32Bits(wj[i:m]))
					wv = archsimd.LoadUint32x8(&wt).AsFloat32x8()
				}
				o := uintptr(4 * (k*mm + i))
				st8(wv.Mul(ld8(tp, o)), wsp, uintptr(4*((j*p+k)*mm+i)))
				b = wv.MulAdd(ld8(tp, zoff+o), b)
			}
			sum4(b, b, b, b).AsUint32x4().Store(&bt)
			bv := bcast(bt[0])
			a := unsafe.Add(ap, uintptr(4*(j*d+k*gs)))
			for c := uintptr(0); c < uintptr(4*gs); c += 32 {
				st8(ld8(a, c).Add(bv), a, c)
			}
		}
	}
	archsimd.ClearAVXUpperBits()
}

// dotU8Rows4 is rows4 for 8-bit codes.
//
//go:noinline
func dotU8Rows4(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr) {
	var t0, t1, t2, t3 archsimd.Float32x8

	// Offsets of the group in the rows, the query and the table (pointers stepped past
	// the last group would leave their allocation).
	po, qo, so := uintptr(0), uintptr(0), uintptr(0)
	for range np {
		var a0, a1, a2, a3 archsimd.Float32x8
		for c := uintptr(0); c < gs; c += 16 {
			qv, qw := ld8(q, qo+4*c), ld8(q, qo+4*c+32)
			o := po + c
			x0, x1 := unpackU8(unsafe.Add(p0, o))
			a0 = x1.MulAdd(qw, x0.MulAdd(qv, a0))
			x0, x1 = unpackU8(unsafe.Add(p1, o))
			a1 = x1.MulAdd(qw, x0.MulAdd(qv, a1))
			x0, x1 = unpackU8(unsafe.Add(p2, o))
			a2 = x1.MulAdd(qw, x0.MulAdd(qv, a2))
			x0, x1 = unpackU8(unsafe.Add(p3, o))
			a3 = x1.MulAdd(qw, x0.MulAdd(qv, a3))
		}
		s := unsafe.Add(st, so)
		t0 = a0.MulAdd(bcast(*(*uint32)(s)), t0)
		t1 = a1.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 4))), t1)
		t2 = a2.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 8))), t2)
		t3 = a3.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 12))), t3)
		po, qo, so = po+gb, qo+4*gs, so+stM
	}
	sum4(t0, t1, t2, t3).AsUint32x4().Store(out)
	archsimd.ClearAVXUpperBits()
}

// dotU8Q4 is q4 for 8-bit codes.
//
//go:noinline
func dotU8Q4(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr) {

	for i := range uintptr(m) {
		var t0, t1, t2, t3 archsimd.Float32x8
		po, so, qo := i*stride, i*sr, uintptr(0) // offsets, as in dotU8Rows4
		for range np {
			var a0, a1, a2, a3 archsimd.Float32x8
			for c := uintptr(0); c < gs; c += 16 {
				x0, x1 := unpackU8(unsafe.Add(rows, po+c))
				o := qo + 4*c
				a0 = ld8(q0, o+32).MulAdd(x1, ld8(q0, o).MulAdd(x0, a0))
				a1 = ld8(q1, o+32).MulAdd(x1, ld8(q1, o).MulAdd(x0, a1))
				a2 = ld8(q2, o+32).MulAdd(x1, ld8(q2, o).MulAdd(x0, a2))
				a3 = ld8(q3, o+32).MulAdd(x1, ld8(q3, o).MulAdd(x0, a3))
			}
			s := bcast(*(*uint32)(unsafe.Add(st, so)))
			t0, t1, t2, t3 = a0.MulAdd(s, t0), a1.MulAdd(s, t1), a2.MulAdd(s, t2), a3.MulAdd(s, t3)
			po, so, qo = po+gb, so+stM, qo+4*gs
		}
		r := sum4(t0, t1, t2, t3).AsUint32x4()
		o := unsafe.Add(out, 4*i)
		*(*uint32)(o) = r.GetElem(0)
		*(*uint32)(unsafe.Add(o, ldo)) = r.GetElem(1)
		*(*uint32)(unsafe.Add(o, 2*ldo)) = r.GetElem(2)
		if nq > 3 {
			*(*uint32)(unsafe.Add(o, 3*ldo)) = r.GetElem(3)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// addU8Q4 is addQ4 for 8-bit codes.
//
//go:noinline
func addU8Q4(a0p, a1p, a2p, a3p, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int) {
	a00, a01 := ld8(a0p, 0), ld8(a0p, 32)
	a10, a11 := ld8(a1p, 0), ld8(a1p, 32)
	a20, a21 := ld8(a2p, 0), ld8(a2p, 32)
	a30, a31 := ld8(a3p, 0), ld8(a3p, 32)

	co := uintptr(0) // of row i's codes (a pointer stepped past the last row would leave its allocation)
	for i := uintptr(0); i < uintptr(4*n); i += 4 {
		x0, x1 := unpackU8(unsafe.Add(cp, co))
		co += stride
		a00, a01 = bcast(*(*uint32)(unsafe.Add(w0, i))).MulAdd(x0, a00), bcast(*(*uint32)(unsafe.Add(w0, i))).MulAdd(x1, a01)
		a10, a11 = bcast(*(*uint32)(unsafe.Add(w1, i))).MulAdd(x0, a10), bcast(*(*uint32)(unsafe.Add(w1, i))).MulAdd(x1, a11)
		a20, a21 = bcast(*(*uint32)(unsafe.Add(w2, i))).MulAdd(x0, a20), bcast(*(*uint32)(unsafe.Add(w2, i))).MulAdd(x1, a21)
		a30, a31 = bcast(*(*uint32)(unsafe.Add(w3, i))).MulAdd(x0, a30), bcast(*(*uint32)(unsafe.Add(w3, i))).MulAdd(x1, a31)
	}
	// A repeated query's accumulators hold the same sums: any store order is right.
	st8(a30, a3p, 0)
	st8(a31, a3p, 32)
	st8(a20, a2p, 0)
	st8(a21, a2p, 32)
	st8(a10, a1p, 0)
	st8(a11, a1p, 32)
	st8(a00, a0p, 0)
	st8(a01, a0p, 32)
	archsimd.ClearAVXUpperBits()
}

// addU8Q1 is addQ1 for 8-bit codes.
//
//go:noinline
func addU8Q1(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int) {
	a0, a1, a2, a3 := ld8(a, 0), ld8(a, 32), ld8(a, 64), ld8(a, 96)

	co := uintptr(0) // as in addU8Q4
	for i := uintptr(0); i < uintptr(4*n); i += 4 {
		x0, x1 := unpackU8(unsafe.Add(cp0, co))
		x2, x3 := unpackU8(unsafe.Add(cp1, co))
		co += stride
		v, u := bcast(*(*uint32)(unsafe.Add(w0, i))), bcast(*(*uint32)(unsafe.Add(w1, i)))
		a0, a1, a2, a3 = x0.MulAdd(v, a0), x1.MulAdd(v, a1), x2.MulAdd(u, a2), x3.MulAdd(u, a3)
	}
	st8(a0, a, 0)
	st8(a1, a, 32)
	st8(a2, a, 64)
	st8(a3, a, 96)
	archsimd.ClearAVXUpperBits()
}

func init() { dotChannelFused = dotChannelAVX2 }

// onesF32 is the param table of rows whose scales are already in the queries (KIVI
// channel blocks): four float32 ones.
var onesF32 = [4]uint32{0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000}

// dotChannelAVX2 is DotChannelRows for a Channel block with d a multiple of 16: the
// block's scales and zeros widened once (channelQuery), the queries pre-scaled into
// tmp, then the Affine dot kernels over the tokens' code rows (one group per row, unit
// scales) and the zero terms b_j added to the scores.
func dotChannelAVX2(c Channel, scores []float32, ld int, q []float32, g int, block []byte, t, d, i0, i1 int, tmp []float32) bool {
	if d%16 != 0 {
		return false
	}
	var k *lossyKernels
	switch c.Bits {
	case 8:
		k = &lossyU8
	case 4:
		k = &lossyU4
	case 2:
		k = &lossyU2
	default:
		return false
	}
	rb := packedBytes(d, c.Bits)
	qs, sl := tmp[:g*d], tmp[g*d:g*d+2*d]
	b := f32Bits(tmp[g*d+2*d:][:g])
	if haveF16C {
		channelQueryF16C(unsafe.Pointer(&qs[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&block[0]), g, d)
	} else {
		channelQuery(qs, b, sl, q, g, d, block)
	}
	m := i1 - i0
	rows := unsafe.Pointer(&block[4*d+i0*rb])
	// Queries four at a time (three as four with one repeated; b has 4 readable
	// values from b[j]: tmp goes on past it), the kernels adding the zero terms b_j;
	// one or two left over through rowsPlain (m ≥ 4) or four-query calls with the
	// query repeated.
	qp, us := unsafe.Pointer(&qs[0]), uintptr(rb)
	j := 0
	for ; j < g && (g-j >= 3 || m < 4); j += 4 {
		q0, q1, q2, q3, nq := quad(qp, uintptr(4*d), j, g)
		k.q4Plain(unsafe.Pointer(&scores[j*ld]), uintptr(4*ld), nq, q0, q1, q2, q3, rows, us, m, unsafe.Pointer(&b[j]), 1, uintptr(d), us)
	}
	for ; j < g; j++ {
		rowsBy4(k.rowsPlain, unsafe.Pointer(&scores[j*ld]), unsafe.Pointer(&qs[j*d]), rows, us, m, unsafe.Pointer(&b[j]), 1, uintptr(d), us)
	}
	return true
}

// channelQuery widens the d scales and zeros of a Channel block into sl (scales, then
// zeros), writes the pre-scaled queries qs[j·d+c] = q[j·d+c]·scale_c and the bits of
// b[j] = Σ_c q[j·d+c]·lo_c; d is a multiple of 8.
func channelQuery(qs []float32, b []uint32, sl, q []float32, g, d int, block []byte) {
	_ = qs[g*d-1]
	_ = q[g*d-1]
	_ = sl[2*d-1]
	_ = block[4*d-1]
	var bt [4]uint32 // zeroed before any vector code (see lossyParams)
	em, sg, ex, ei, ie := f16Consts()
	mul := bcast(0x77800000) // 2^112
	low, sixteen := archsimd.BroadcastUint32x8(0xffff), archsimd.BroadcastUint32x8(16)
	bp, sp := unsafe.Pointer(&block[0]), unsafe.Pointer(&sl[0])
	zo := uintptr(4 * d)
	for c := uintptr(0); c < uintptr(d); c += 8 {
		w := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(bp, 4*c)))
		st8(f16x8(w.And(low), em, sg, ex, ei, ie, mul), sp, 4*c)
		st8(f16x8(w.ShiftRight(sixteen), em, sg, ex, ei, ie, mul), sp, zo+4*c)
	}
	qp, qsp := unsafe.Pointer(&q[0]), unsafe.Pointer(&qs[0])
	for j := range g {
		o := uintptr(4 * j * d)
		var a archsimd.Float32x8
		for c := uintptr(0); c < 4*uintptr(d); c += 32 {
			x := ld8(qp, o+c)
			st8(x.Mul(ld8(sp, c)), qsp, o+c)
			a = x.MulAdd(ld8(sp, zo+c), a)
		}
		sum4(a, a, a, a).AsUint32x4().Store(&bt)
		b[j] = bt[0]
	}
	archsimd.ClearAVXUpperBits()
}
