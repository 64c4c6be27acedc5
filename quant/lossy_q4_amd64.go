//go:build amd64

package quant

import "unsafe"

// Four-query span kernels of Affine rows (and KIVI key blocks), in lossy_q4_amd64.s:
// grouped-query attention reads each KV row for several query heads (Llama-3 shapes:
// four), causal prefill for many queries. Each row's codes are unpacked once per 8
// codes (shift and mask, VCVTDQ2PS) and multiplied into four queries (four FMAs). The
// dots widen the group's scale and zero once per row and group where the row is read
// (VCVTPH2PS), shared by the four queries; the adds weight the scales by the
// queries' weights once per group of up to 64 rows. So there is no param table and no
// pass over the span beside the kernel. Results equal the decoded reference up to the
// order and rounding of the float sums (dots: the zero term summed apart from the
// codes, as Affine.Dot does; adds: the zeros' weighted sum added once per column).

// dotU4Q4Inl stores to out + r·ldo + 4i (float32 bits) the dot of query r (at q_r) with
// the 4-bit Affine row i, for the first nq (1 to 4) of the four queries and every row
// i < n (n ≥ 1), row i's first codes at rows + i·stride (np ≥ 1 groups of gs values, a
// multiple of 16, gb bytes apart). Each group's f16 scale and zero are read from the 4
// bytes before its codes and widened by VCVTPH2PS; the zero term of group k is the zero
// times the sum of query r's values in group k, which the kernel first writes to
// qs[4k+r] (float32; 4·np values of scratch). Queries past nq are read (pass a
// repeated one) but not stored. Each row's codes are unpacked once
// for the four queries.
//
//go:noescape
func dotU4Q4Inl(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU2Q4Inl is dotU4Q4Inl for 2-bit codes.
//
//go:noescape
func dotU2Q4Inl(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU8Q4Inl is dotU4Q4Inl for 8-bit codes.
//
//go:noescape
func dotU8Q4Inl(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU4Q4Plain is dotU4Q4Inl for code rows with no parameters (KIVI key blocks, whose
// scales are in the queries): the plain dot of query r with the codes plus the
// float32 qs[r] (its zero term b_r; read, not written) for each row; groups only split the codes (np·gs
// values, gb bytes apart).
//
//go:noescape
func dotU4Q4Plain(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU2Q4Plain is dotU4Q4Plain for 2-bit codes.
//
//go:noescape
func dotU2Q4Plain(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// dotU8Q4Plain is dotU4Q4Plain for 8-bit codes.
//
//go:noescape
func dotU8Q4Plain(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// q4Kernel is the shape of dotU4Q4Inl and dotU4Q4Plain.
type q4Kernel func(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr)

// quad returns the four operands of queries j..j+3 of g (query i at p + i·step) for a
// four-query kernel and how many of them are real, nq = min(4, g−j): the slots past
// nq repeat query g−1.
func quad(p unsafe.Pointer, step uintptr, j, g int) (p0, p1, p2, p3 unsafe.Pointer, nq int) {
	nq = min(4, g-j)
	at := func(r int) unsafe.Pointer { return unsafe.Add(p, uintptr(j+min(r, nq-1))*step) }
	return at(0), at(1), at(2), at(3), nq
}

// dotRowsQ4 is fusedDotRowsLossy on CPUs with F16C: queries four at a time through
// lg's q4Inl kernel (three as four with one repeated), one or two left over through
// dotRowsInl (n ≥ 4) or q4Inl with the query repeated (n < 4). tmp holds the group
// sums of the queries (4p values for a quad, 8 lanes per group and query for
// dotRowsInl, then room for its split query). 4-bit and 2-bit rows in groups of 32
// go through the integer kernels instead (dotRowsI8), with pq their prepared queries
// (RowPlan.PrepareQuery) or nil; other rows ignore pq.
func dotRowsQ4(lg *lossyGeom, scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32) {
	if lg.i8() {
		dotRowsI8(lg, scores, ld, q, pq, g, src, stride, n, d, tmp)
		return
	}
	p := lg.p
	_ = q[g*d-1]
	_ = tmp[4*p-1]
	qp, qsp := unsafe.Pointer(&q[0]), unsafe.Pointer(&tmp[0])
	rows := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr)
	qb, us := uintptr(4*d), uintptr(stride)
	j := 0
	for ; j < g && (g-j >= 3 || n < 4); j += 4 {
		q0, q1, q2, q3, nq := quad(qp, qb, j, g)
		lg.k.q4Inl(unsafe.Pointer(&scores[j*ld]), uintptr(4*ld), nq, q0, q1, q2, q3, rows, us, n, qsp, p, lg.g, lg.gb)
	}
	if j < g {
		dotRowsInl(lg, scores[j*ld:], ld, q[j*d:], g-j, src, stride, n, d, tmp[4*p:][:(g-j)*p*8+d])
	}
}

// addQ4Rows is the most rows one addU4Q4W call takes (its frame's weighted scales).
const addQ4Rows = 64

// addRowsQ4 is fusedAddRowsLossy on CPUs with F16C: queries four at a time through
// lg's addQ4W kernel over all d columns, addQ4Rows rows per call (three as four with
// one repeated), one or two left over through addQ1P2, the 64 columns of two groups
// of 32 and up to addI16Blocks blocks of four rows per call (4-bit and 2-bit codes,
// n ≥ 4, integer sums: addi16_amd64.go; the last n mod 4 rows and an odd group
// through addQ1Inl), else addQ1Inl, 32 columns of one group per call (groups
// of a multiple of 32; for groups of 16, addQ4W with the query repeated). With
// AVX-512F, groups of a multiple of 32 take addQ4Z for addQ4W (the same sums); with
// AVX-512 VNNI, a quad's whole pairs of groups of 32 take addQ4P2Z over its first n
// rounded down to 4 rows instead (4-bit and 2-bit codes, n ≥ 4: each query the
// sums addQ1P2 gives it), and addQ4Z the rest.
func addRowsQ4(lg *lossyGeom, acc, w []float32, ld, g int, src []byte, stride, n, d int) {
	sp, ap, wp := unsafe.Pointer(&src[0]), unsafe.Pointer(&acc[0]), unsafe.Pointer(&w[0])
	ab, wb, us := uintptr(4*d), uintptr(4*ld), uintptr(stride)
	add := lg.k.addQ4W
	if haveAVX512F && lg.k.addQ4Z != nil && lg.g%32 == 0 {
		add = lg.k.addQ4Z
	}
	j := 0
	for ; j < g && (g-j >= 3 || lg.g%32 != 0); j += 4 {
		a0, a1, a2, a3, _ := quad(ap, ab, j, g)
		w0, w1, w2, w3, _ := quad(wp, wb, j, g)
		// The integer kernels take whole pairs of groups of the rows' first n4, c0
		// columns: the float kernel their last rows, then every row of the rest.
		c0, n4 := 0, 0
		if haveVNNI512 && lg.k.addQ4P2Z != nil && lg.g == 32 && n >= 4 && d >= 64 {
			c0, n4 = d&^63, n&^3
			for c := uintptr(0); c < uintptr(c0); c += 64 {
				cp := unsafe.Add(sp, lg.codeOff(c))
				for b := uintptr(0); b < uintptr(n/4); b += addI16Blocks {
					lg.k.addQ4P2Z(unsafe.Add(a0, 4*c), unsafe.Add(a1, 4*c), unsafe.Add(a2, 4*c), unsafe.Add(a3, 4*c),
						unsafe.Add(w0, 16*b), unsafe.Add(w1, 16*b), unsafe.Add(w2, 16*b), unsafe.Add(w3, 16*b),
						unsafe.Add(cp, 4*b*us), us, min(addI16Blocks, n/4-int(b)), lg.gb)
				}
			}
			if n4 < n {
				m := uintptr(n4)
				add(a0, a1, a2, a3, unsafe.Add(w0, 4*m), unsafe.Add(w1, 4*m), unsafe.Add(w2, 4*m), unsafe.Add(w3, 4*m), unsafe.Add(sp, m*us), us, n-n4, c0/16, lg.g, lg.gb)
			}
		}
		if c0 == d {
			continue
		}
		c, k := uintptr(4*c0), uintptr(c0)/lg.g*lg.gb
		for i := 0; i < n; i += addQ4Rows {
			m := uintptr(i)
			add(unsafe.Add(a0, c), unsafe.Add(a1, c), unsafe.Add(a2, c), unsafe.Add(a3, c), unsafe.Add(w0, 4*m), unsafe.Add(w1, 4*m), unsafe.Add(w2, 4*m), unsafe.Add(w3, 4*m), unsafe.Add(sp, m*us+k), us, min(addQ4Rows, n-i), (d-c0)/16, lg.g, lg.gb)
		}
	}
	for ; j < g; j++ {
		aj, wj := unsafe.Add(ap, uintptr(j)*ab), unsafe.Add(wp, uintptr(j)*wb)
		c := uintptr(0)
		if lg.k.addQ1P2 != nil && lg.g == 32 && n >= 4 {
			c = addPairsI16(lg, aj, wj, sp, us, n, d)
		}
		for ; c < uintptr(d); c += 32 {
			lg.k.addQ1Inl(unsafe.Add(aj, 4*c), wj, unsafe.Add(sp, c/lg.g*lg.gb), unsafe.Add(sp, lg.codeOff(c)), us, n)
		}
	}
}

// addPairsI16 adds one query's sums (accumulators at aj, weights at wj) over n ≥ 4
// rows of d values in groups of 32 (rows at sp, us bytes apart) for the columns of
// whole pairs of groups, through lg's addQ1P2 (addU4Q1I16 or addU2Q1I16; its ZMM
// twin addQ1P2Z with AVX-512 VNNI, or addU2Q1I16ZC and addU4Q1I16ZC for rows of one
// pair that follow one another with VBMI and GFNI as well) up to addI16Blocks blocks of four rows per call
// and the last n mod 4 rows group by group through addQ1Inl, and returns the columns
// it did (d rounded down to 64).
func addPairsI16(lg *lossyGeom, aj, wj, sp unsafe.Pointer, us uintptr, n, d int) uintptr {
	add := lg.k.addQ1P2
	switch {
	case haveVBMIGFNI && lg.bits == 2 && lg.p == 2 && us == 2*lg.gb:
		add = addU2Q1I16ZC // rows of one pair that follow one another
	case haveVBMIGFNI && lg.bits == 4 && lg.p == 2 && us == 2*lg.gb:
		add = addU4Q1I16ZC
	case haveVNNI512 && lg.k.addQ1P2Z != nil:
		add = lg.k.addQ1P2Z
	}
	n4 := n &^ 3
	tail := uintptr(n4) * us
	c := uintptr(0)
	for ; c+64 <= uintptr(d); c += 64 {
		for b := 0; b < n/4; b += addI16Blocks {
			add(unsafe.Add(aj, 4*c), unsafe.Add(wj, 16*b), unsafe.Add(sp, lg.codeOff(c)+uintptr(4*b)*us), us, min(addI16Blocks, n/4-b), lg.gb)
		}
		if n4 == n {
			continue
		}
		wt := unsafe.Add(wj, 4*n4)
		for h := uintptr(0); h < 64; h += 32 {
			lg.k.addQ1Inl(unsafe.Add(aj, 4*(c+h)), wt, unsafe.Add(sp, tail+(c+h)/32*lg.gb), unsafe.Add(sp, tail+lg.codeOff(c+h)), us, n-n4)
		}
	}
	return c
}

// addU4Q4W performs a_r[c] += Σ_{i<n} w_r[i]·(scale_ik·code_ic + zero_ik) for the four
// queries r (accumulators at a0..a3, weights at w0..w3; a query may repeat, with its
// weights) and the 16·nc columns c of the 4-bit Affine rows i < n (1 ≤ n ≤ addQ4Rows),
// row i's first group header at rows + i·stride: groups of gs values (a multiple of
// 16), gb bytes apart, each an f16 scale and zero and its codes; k is the group of c.
// Per group, the rows' scales and zeros are widened once (four rows at a time) into
// the weighted scales w_r[i]·scale_ik and the zero sums Σ_i w_r[i]·zero_ik, kept in
// the frame; each row's 16 codes per chunk are then converted once and take one FMA
// per query and 8 columns, and each chunk its queries' zero sums once. Against
// decoding each value first (code·scale + zero, one FMA per value, as this kernel's
// predecessor did) that takes 10–15% less time on 64 rows of 64 values
// (BenchmarkLossyQ4), and the sums differ only in rounding.
//
//go:noescape
func addU4Q4W(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)

// addU2Q4W is addU4Q4W for 2-bit codes.
//
//go:noescape
func addU2Q4W(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)

// addU4Q4Z is addU4Q4W with ZMM registers (AVX-512F, haveAVX512F) for groups of a
// multiple of 32 values and nc even: 32 columns of the four queries fill 8 of its 32
// registers, so the rows are read and their codes widened once per 32 columns (once
// per 16 in addU4Q4W), and take 8 FMAs of 16 lanes per 32 columns where addU4Q4W
// takes 16 of 8. Each column takes the same operations in the same order:
// the sums are addU4Q4W's, bit for bit.
//
//go:noescape
func addU4Q4Z(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)

// addU2Q4Z is addU4Q4Z for 2-bit codes (addU2Q4W's twin).
//
//go:noescape
func addU2Q4Z(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)

// addU8Q4W is addU4Q4W for 8-bit codes.
//
//go:noescape
func addU8Q4W(a0, a1, a2, a3, w0, w1, w2, w3, rows unsafe.Pointer, stride uintptr, n, nc int, gs, gb uintptr)
