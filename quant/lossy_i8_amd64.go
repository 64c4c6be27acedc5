//go:build amd64

package quant

import "unsafe"

// Integer scores of 4-bit and 2-bit Affine rows in groups of 32 (the q4 and q2 cache
// types), for one query and for four (lossy_i8_amd64.s). Each query is quantized to
// int8 per group of 32 values, as a Q8_0 activation is for an integer matrix product:
// d_k = max|q| / 127 over group k and q̂ = round(q / d_k). A row's score is then
//
//	Σ_k s_k·d_k·Σ_i q̂_i·code_i + Σ_k z_k·d_k·Σ_i q̂_i     (scale s_k, zero z_k)
//
// with each inner sum an exact integer (VPMADDUBSW, VPMADDWD): the score of the
// decoded row against the query's round trip q̃ = d_k·q̂, up to float rounding. Against
// the query itself that is off by Σ_i (q_i − q̃_i)·k_i, |q_i − q̃_i| ≤ d_k/2: a query error
// of at most 1/254 of its group's largest value, against a key error of up to half a
// code step, 1/15 (4-bit) or 1/3 (2-bit) of a group's largest magnitude on keys of
// comparable spread: about a seventeenth and an eighty-fifth of the codec's own
// error. It is the error llama.cpp's quantized K cache has on CPU (a Q8_0 query
// against Q4_0 keys).

// dotU4RowsI8 stores to out[4b+r] (float32 bits) the score of the query at q (np
// groups of 32 int8 values, by quantQueryI8) against the 4-bit Affine row 4b+r for
// the ng blocks b of four rows, row i's first codes at rows + i·stride (groups gb
// bytes apart; gs, which must be 32, is not read). Each group's f16 scale and zero are
// the 4 bytes before its codes; qf holds the group factors (d_k, d_k·Σq̂) as float32
// pairs.
//
//go:noescape
func dotU4RowsI8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// dotU4RowsI8P2 is dotU4RowsI8 for rows of an even number np of groups, taken in pairs
// (one load and unpack of both groups' codes per row, their integer sums and scales
// in the two halves of a vector): qf holds, per pair of groups k, k+1, d_k four
// times, d_k+1 four times, d_k·Σq̂ four times, d_k+1·Σq̂ four times (pairFactors).
//
//go:noescape
func dotU4RowsI8P2(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// dotU2RowsI8 is dotU4RowsI8 for 2-bit rows.
//
//go:noescape
func dotU2RowsI8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// dotU2RowsI8Z and dotU2ChanI8Z are dotU2RowsI8 and dotU2ChanI8 with ZMM registers
// and VPDPBUSD (haveVNNI512), the same scores bit for bit: the integer sums are
// exact either way and scaled alike.
//
//go:noescape
func dotU2RowsI8Z(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

//go:noescape
func dotU2ChanI8Z(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// dotU2RowsI8Z8 and dotU2ChanI8Z8 are dotU2RowsI8Z and dotU2ChanI8Z for ng units of
// eight rows (rows8_i8z_amd64.s; haveVNNI512) of an even number np ≤ 8 of groups: a
// row's pair of groups is read whole and its sums reduced with seven other rows',
// the same scores bit for bit. Rows may lie any stride apart (at least a row), but
// the prefetches assume that a call's rows follow one another. dotU2RowsI8Z8C and
// dotU2ChanI8Z8C take rows of one pair (np = 2) that follow one another (stride 24
// and 16): fewer and plain loads.
//
//go:noescape
func dotU2RowsI8Z8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

//go:noescape
func dotU2ChanI8Z8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

//go:noescape
func dotU2RowsI8Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

//go:noescape
func dotU2ChanI8Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// dotU4RowsI8Z8C is dotU4RowsI8P2 (one query, its layout) for ng units of eight
// 4-bit Affine rows of one pair of groups (np = 2) that follow one another (stride
// 40), with ZMM registers and VPDPBUSD (haveVNNI512): the same scores bit for bit
// (rows8_i8z_amd64.s).
//
//go:noescape
func dotU4RowsI8Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// rows8 returns the kernel that scores one query against bits-bit rows of np groups
// of 32 (Affine rows, or Channel token rows: channel) eight rows at a time, stride
// bytes apart, or nil.
func rows8(bits, np int, stride uintptr, channel bool) rowsKernel {
	packed := uintptr(np) * 12 // an Affine 2-bit row's bytes
	if channel {
		packed = uintptr(np) * 8
	}
	switch {
	case !haveVNNI512:
		return nil
	case bits == 4 && !channel && np == 2 && stride == 40:
		return dotU4RowsI8Z8C
	case bits != 2 || np%2 != 0 || np > 8:
		return nil
	case np == 2 && stride == packed && channel:
		return dotU2ChanI8Z8C
	case np == 2 && stride == packed:
		return dotU2RowsI8Z8C
	case channel:
		return dotU2ChanI8Z8
	}
	return dotU2RowsI8Z8
}

// rowsBy8 runs k8, a kernel of eight rows at a time, over n rows (the last unit moved
// back to end at row n, its first rows scored twice to the same bits), or k4 through
// rowsBy4 when n < 8.
func rowsBy8(k8, k4 rowsKernel, out, q, rows unsafe.Pointer, stride uintptr, n int, qs unsafe.Pointer, np int, gs, gb uintptr) {
	if n < 8 {
		rowsBy4(k4, out, q, rows, stride, n, qs, np, gs, gb)
		return
	}
	k8(out, q, rows, stride, n/8, qs, np, gs, gb)
	if n%8 != 0 {
		k8(unsafe.Add(out, 4*(n-8)), q, unsafe.Add(rows, uintptr(n-8)*stride), stride, 1, qs, np, gs, gb)
	}
}

// dotU2ChanI8 is dotU2RowsI8 for the token rows of a 2-bit Channel block (32 codes per
// group, no parameters in the rows: the channel scales are in the query, which
// quantQueryI8 quantized from q_c·scale_c). qf holds the np pairs (d_k, unused), then
// b: out[4b+r] = Σ_k d_k·Σ_i q̂_i·code_i + b.
//
//go:noescape
func dotU2ChanI8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)

// quantQuad2I8Z is quantQueryI8 of four queries for 2-bit rows in groups of 32 with
// ZMM registers (haveVNNI512), as dotChannelI8 lays them out: query r's d values (d a
// multiple of 32) at qs + 4dr, its codes to q8 + dr, group k's d_k to qf + 32k + 4r
// and d_k·Σq̂ to qf + 32k + 16 + 4r. Each code and factor is quantQueryI8's, bit for
// bit (the codes where d_k is not NaN): the groups of the four queries are quantized
// side by side, their largest magnitudes and code sums reduced together.
//
//go:noescape
func quantQuad2I8Z(q8, qf, qs unsafe.Pointer, d int)

// quantQueryI8 quantizes the np ≥ 1 groups of gs values at q (gs a multiple of 32)
// for the integer kernels of bits-bit rows (4 or 2): q8 gets round(q/d_k) (to nearest
// even) in the order the kernels unpack codes (i8Pos); the float32 at qf + k·fstep
// gets d_k = max|q| / 127 over group k (0, with codes 0, for a group whose largest
// magnitude is below 2^-120) and the one at qf + k·fstep + zoff gets d_k·Σq̂ over
// group k (the zero terms' query sum). Every float operation is one IEEE float32
// operation, so quantQueryI8Go gives the same bits.
//
//go:noescape
func quantQueryI8(q8, qf, q unsafe.Pointer, np, gs, bits int, fstep, zoff uintptr)

// i8 reports whether scores of rows of this geometry go through the integer kernels:
// 4-bit and 2-bit Affine codes in groups of 32.
func (lg *lossyGeom) i8() bool { return (lg.bits == 4 || lg.bits == 2) && lg.g == 32 }

// i8Query reports whether fusedDotRowsLossy takes rows of d values of c through the
// integer kernels.
func i8Query(c Affine, d int) bool {
	lg, ok := lossyGeomOf(c, d)
	return ok && haveF16C && lg.i8()
}

// dotRowsI8 is dotRowsQ4 for 4-bit and 2-bit Affine rows in groups of 32 (lg.i8): the
// queries quantized to int8 (quantQueryI8), four at a time through dotU4Q4I8P2 (4-bit
// rows of an even number of groups), dotU4Q4I8 or dotU2Q4I8 (three, or fewer when
// n < 4, as four: only the real ones quantized), one or two left over through
// dotU4RowsI8P2 (4-bit rows of an even number of groups), dotU4RowsI8 or dotU2RowsI8
// (with haveVNNI512: dotU2RowsI8Z, or eight rows at a time where rows8 has a kernel
// and n ≥ 8; n ≥ 4). pq holds the queries so prepared (prepareI8), or is nil: then each unit
// is prepared in tmp (d + 8·p values) before its kernel runs.
func dotRowsI8(lg *lossyGeom, scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32) {
	p, bits := lg.p, int(lg.bits)
	_, _ = q[g*d-1], tmp[d+8*p-1]
	unit := d + 8*p
	rows, us := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr), uintptr(stride)
	rowsK, quadK, quadZ := dotU4RowsI8, dotU4Q4I8, dotU4Q4I8Z
	if bits == 2 {
		rowsK, quadK, quadZ = dotU2RowsI8, dotU2Q4I8, dotU2Q4I8Z
		if haveVNNI512 {
			rowsK = dotU2RowsI8Z
		}
	} else if p%2 == 0 {
		rowsK, quadK, quadZ = dotU4RowsI8P2, dotU4Q4I8P2, dotU4Q4I8P2Z
	}
	j, u := 0, 0
	for ; j < g && (g-j >= 3 || n < 4); j, u = j+4, u+1 {
		nq := min(4, g-j)
		var t []float32
		switch {
		case pq != nil && g-j >= 3:
			t = pq[u*unit:][:unit]
		default: // no prepared queries, or a short span's last one or two as a quad
			t = tmp[:unit]
			prepareQuadI8(lg, t, q[j*d:], nq, d)
		}
		quadI8(quadK, quadZ, unsafe.Pointer(&scores[j*ld]), uintptr(4*ld), nq, unsafe.Pointer(&t[0]), rows, us, n, unsafe.Pointer(&t[d]), p, lg.gb)
	}
	for ; j < g; j, u = j+1, u+1 {
		t := tmp[:unit]
		if pq != nil {
			t = pq[u*unit:][:unit]
		} else {
			prepareOneI8(lg, t, q[j*d:], d)
		}
		if k8 := rows8(bits, p, us, false); k8 != nil {
			rowsBy8(k8, rowsK, unsafe.Pointer(&scores[j*ld]), unsafe.Pointer(&t[0]), rows, us, n, unsafe.Pointer(&t[d]), p, 32, lg.gb)
			continue
		}
		rowsBy4(rowsK, unsafe.Pointer(&scores[j*ld]), unsafe.Pointer(&t[0]), rows, us, n, unsafe.Pointer(&t[d]), p, 32, lg.gb)
	}
}

// i8Units is the number of kernel calls dotRowsI8 makes per span of n ≥ 4 rows for
// g queries: one per quad (the last of three queries too), one per query left over.
func i8Units(g int) int { return g/4 + (g%4)/3 + g%4%3 }

// prepareI8 writes to dst (i8Units(g)·(d + 8·p) values) the g queries at q as
// dotRowsI8 takes them for spans of n ≥ 4 rows, unit by unit: each quad's four
// queries' int8 codes (d values' room) and their group factors (8·p), then each query
// left over alone, in its kernel's order.
func prepareI8(lg *lossyGeom, dst, q []float32, g, d int) {
	unit := d + 8*lg.p
	_, _ = q[g*d-1], dst[i8Units(g)*unit-1]
	j, u := 0, 0
	for ; g-j >= 3; j, u = j+4, u+1 {
		prepareQuadI8(lg, dst[u*unit:][:unit], q[j*d:], min(4, g-j), d)
	}
	for ; j < g; j, u = j+1, u+1 {
		prepareOneI8(lg, dst[u*unit:][:unit], q[j*d:], d)
	}
}

// prepareQuadI8 quantizes the nq ≤ 4 queries at q into t (d + 8·p values) for a quad
// kernel: query r's codes at byte r·d, the factors from t[d]; in pair order for
// dotU4Q4I8P2.
func prepareQuadI8(lg *lossyGeom, t, q []float32, nq, d int) {
	p, bits := lg.p, int(lg.bits)
	_, _ = q[nq*d-1], t[d+8*p-1]
	q8, qf, qp := unsafe.Pointer(&t[0]), unsafe.Pointer(&t[d]), unsafe.Pointer(&q[0])
	for r := range nq {
		quantQueryI8(unsafe.Add(q8, r*d), unsafe.Add(qf, 4*r), unsafe.Add(qp, 4*r*d), p, 32, bits, 32, 16)
	}
	if bits == 4 && p%2 == 0 {
		pairOrder(q8, 4*d)
		pairOrder(qf, 32*p)
	}
}

// prepareOneI8 quantizes the query at q into t (d + 8·p values) for a one-query
// kernel: its codes at t[0], its factors from t[d] (in pair order for dotU4RowsI8P2).
func prepareOneI8(lg *lossyGeom, t, q []float32, d int) {
	p, bits := lg.p, int(lg.bits)
	_, _ = q[d-1], t[d+8*p-1]
	q8, qf, qp := unsafe.Pointer(&t[0]), unsafe.Pointer(&t[d]), unsafe.Pointer(&q[0])
	if bits == 4 && p%2 == 0 {
		quantQueryI8(q8, qf, qp, p, 32, bits, 32, 16)
		pairFactors(t[d : d+8*p])
		return
	}
	quantQueryI8(q8, qf, qp, p, 32, bits, 8, 4)
}

// pairFactors rearranges, in place, the group factors of one query as quantQueryI8
// writes them for a quad's table (group k's d_k at f[8k], d_k·Σq̂ at f[8k+4]) into
// dotU4RowsI8P2's, 16 per pair of groups k, k+1: d_k four times, d_k+1 four times,
// then their d·Σq̂ likewise.
func pairFactors(f []float32) {
	for m := len(f)/16 - 1; m >= 0; m-- {
		pf := f[16*m : 16*m+16]
		d0, e0, d1, e1 := pf[0], pf[4], pf[8], pf[12]
		for i := range 4 {
			pf[i], pf[4+i], pf[8+i], pf[12+i] = d0, d1, e0, e1
		}
	}
}

// dotU4Q4I8 stores to out + r·ldo + 4i (float32 bits) the score of query r against the
// 4-bit Affine row i (groups of 32), for the first nq (1 to 4) of four queries and
// every row i < n (n ≥ 1), row i's first codes at rows + i·stride (np groups, gb bytes
// apart, each after its f16 scale and zero). Query r's int8 codes (quantQueryI8) are
// at q + 32·np·r; qf holds, per group k, the four queries' d_k (qf[8k+r]) and then
// their d_k·Σq̂ (qf[8k+4+r]). Each row's codes are unpacked once for the four queries.
// Queries past nq are read (any values in the readable slots) but not stored.
//
//go:noescape
func dotU4Q4I8(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

// dotU2Q4I8 is dotU4Q4I8 for 2-bit rows.
//
//go:noescape
func dotU2Q4I8(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

// dotU2Q4ChanI8 is dotU2Q4I8 for the token rows of a 2-bit Channel block (see
// dotU2ChanI8): qf holds, per group k, the four queries' d_k (qf[8k+r]; qf[8k+4+r]
// unused), then their b (qf[8·np+r]); out + r·ldo + 4i gets Σ_k d_k·Σ q̂·code + b_r.
//
//go:noescape
func dotU2Q4ChanI8(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

// dotU4Q4I8P2 is dotU4Q4I8 for rows of an even number np of groups, taken in pairs
// (one load and unpack of both groups' codes per row for the four queries, their
// integer sums and scales in the two halves of a vector). Per pair of groups k, k+1
// the 64 bytes of each query's codes and of qf are in pair order (pairOrder): query
// r's even-code halves of both groups then their odd-code halves; qf the four
// queries' d_k, d_k+1, d_k·Σq̂, d_k+1·Σq̂.
//
//go:noescape
func dotU4Q4I8P2(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

// dotU4Q4I8P2Z is dotU4Q4I8P2 with ZMM registers and VPDPBUSD (haveVNNI512) for n a
// multiple of 4 (n ≥ 4), the same scores bit for bit: the integer sums are exact
// either way, and each score takes the same float operations in the same order.
// dotU4Q4I8Z, dotU2Q4I8Z and dotU2Q4ChanI8Z are the same of dotU4Q4I8, dotU2Q4I8 and
// dotU2Q4ChanI8.
//
//go:noescape
func dotU4Q4I8P2Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

//go:noescape
func dotU4Q4I8Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

//go:noescape
func dotU2Q4I8Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

//go:noescape
func dotU2Q4ChanI8Z(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

// i8QuadKernel is the shape of the four-query integer score kernels.
type i8QuadKernel func(out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr)

// quadI8 runs the four-query kernel y over the n ≥ 1 rows at rows (stride bytes
// apart), or its ZMM twin z (haveVNNI512, when not nil) over the first n rounded down
// to a multiple of 4 and y over the rest.
func quadI8(y, z i8QuadKernel, out unsafe.Pointer, ldo uintptr, nq int, q, rows unsafe.Pointer, stride uintptr, n int, qf unsafe.Pointer, np int, gb uintptr) {
	m := 0
	if haveVNNI512 && z != nil {
		if m = n &^ 3; m > 0 {
			z(out, ldo, nq, q, rows, stride, m, qf, np, gb)
		}
	}
	if m < n {
		y(unsafe.Add(out, 4*m), ldo, nq, q, unsafe.Add(rows, uintptr(m)*stride), stride, n-m, qf, np, gb)
	}
}

// pairOrder swaps, in place, the middle two 16-byte quarters of each 64 bytes at p
// (size bytes, a multiple of 64): per pair of groups, quantQueryI8's order (a
// group's even-code bytes, its odd ones, the next group's even, odd; or a quad's
// factors d, d·Σq̂ of one group, then of the next) becomes dotU4Q4I8P2's (the two
// groups' even halves, then their odd halves; the two d, then the two d·Σq̂).
func pairOrder(p unsafe.Pointer, size int) {
	b := unsafe.Slice((*[4][16]byte)(p), size/64)
	for i := range b {
		b[i][1], b[i][2] = b[i][2], b[i][1]
	}
}
