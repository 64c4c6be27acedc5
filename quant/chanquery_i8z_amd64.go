//go:build amd64

package quant

import "unsafe"

// chanQueryI8Z prepares one query (d values at q, d a multiple of 32) for the int8
// scores of the 2-bit Channel block at block (dotU2ChanI8Z, dotU2ChanI8) in one call
// with ZMM registers (haveVNNI512, haveF16C): q8 gets the d int8 codes of the
// pre-scaled query q_c·scale_c, per group of 32 channels in the order the 2-bit
// kernels unpack codes, and qf the d/32 factor pairs (d_k, d_k·Σq̂) then b = Σ_c
// q_c·zero_c: every byte what channelQueryF16C (one query) and quantQueryI8(q8, qf,
// qs, d/32, 32, 2, 8, 4) write, and b after the pairs, bit for bit (NaN payloads and
// the codes of groups with a NaN or an infinity included). The pre-scaled query stays
// in registers.
//
//go:noescape
func chanQueryI8Z(q8, qf, q, block unsafe.Pointer, d int)

// chanCodeBytes is the code bytes of 32 channels of a 2-bit Channel token row.
const chanCodeBytes = 8

// dotChannelOneI8Z is dotChannelI8's one-query path with F16C and AVX-512 VNNI: the
// nq queries at q (nq·d values) scored one at a time against the m ≥ 4 token rows at
// rows (rb bytes apart) of the 2-bit Channel block at block, query j's scores to
// scores[j·ld:], each prepared in t (at least d/4 + d/16 + 1 values) by chanQueryI8Z
// from the query itself, to the codes, factors and b of channelQueryF16C and
// quantQueryI8, then scored by chanRowsI8Z.
func dotChannelOneI8Z(scores []float32, ld int, q []float32, nq int, block, rows unsafe.Pointer, rb uintptr, m, d int, t []float32) {
	p := d / 32
	_, _, _ = scores[(nq-1)*ld+m-1], q[nq*d-1], t[d/4+2*p]
	q8, qf := unsafe.Pointer(&t[0]), unsafe.Pointer(&t[d/4])
	k8 := rows8(2, p, rb, true)
	for j := range nq {
		chanQueryI8Z(q8, qf, unsafe.Pointer(&q[j*d]), block, d)
		chanRowsI8Z(k8, unsafe.Pointer(&scores[j*ld]), q8, qf, rows, rb, m, p)
	}
}

// chanRowsI8Z scores one query prepared by chanQueryI8Z (codes at q8, factors and b
// at qf) against the m ≥ 4 token rows at rows (rb bytes apart) of a 2-bit Channel
// block of p groups of 32 channels, out[i] for row i: through k8 eight rows at a time
// (rows8's kernel, when not nil), else dotU2ChanI8Z four at a time.
func chanRowsI8Z(k8 rowsKernel, out, q8, qf, rows unsafe.Pointer, rb uintptr, m, p int) {
	if k8 != nil {
		rowsBy8(k8, dotU2ChanI8Z, out, q8, rows, rb, m, qf, p, 32, chanCodeBytes)
		return
	}
	rowsBy4(dotU2ChanI8Z, out, q8, rows, rb, m, qf, p, 32, chanCodeBytes)
}

// dotChannelSpanI8Z is DotChannelSpan's path, its checks made, for 2-bit Channel
// blocks (d a multiple of 32) whose queries all go one at a time (g ≤ 2) and whose
// first and last blocks hold 4 or more of the run's tokens, with F16C and AVX-512
// VNNI: each query prepared per block by chanQueryI8Z and scored by chanRowsI8Z, the
// scores of DotChannelRows bit for bit, with no per-block checks or slicing. Block
// j+1's queries are prepared, into the other half of tmp, before block j's are
// scored, so that the preparation's long dependency chains overlap the scores (one
// query: 60 → 55 ns per block in the caches, 64 → 59 streamed; against DotChannelRows
// per block, 67 and 74 ns: BenchmarkChannelSpan). tmp holds at least g·d + 2·d + g +
// 4 values (channelBatch). It reports false, doing nothing, for other runs.
func dotChannelSpanI8Z(c Channel, scores []float32, ld int, q []float32, g int, src []byte, stride, t, off, n, d int, tmp []float32) bool {
	blocks := (off + n + t - 1) / t
	if !haveF16C || !haveVNNI512 || c.Bits != 2 || d%32 != 0 || g > 2 || min(t, off+n)-off < 4 || off+n-(blocks-1)*t < 4 {
		return false
	}
	rb, p := d/4, d/32
	urb := uintptr(rb)
	unit := d/4 + 2*p + 1 // floats of a prepared query: its codes, factor pairs and b
	_ = tmp[2*g*unit-1]
	sp, qp, tp, op := unsafe.Pointer(&src[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&tmp[0]), unsafe.Pointer(&scores[0])
	// slot is where query jq is prepared for block j.
	slot := func(j, jq int) unsafe.Pointer { return unsafe.Add(tp, 4*(j%2*g+jq)*unit) }
	prepare := func(j int) {
		for jq := range g {
			q8 := slot(j, jq)
			chanQueryI8Z(q8, unsafe.Add(q8, d), unsafe.Add(qp, 4*jq*d), unsafe.Add(sp, j*stride), d)
		}
	}
	prepare(0)
	k8 := rows8(2, p, urb, true)
	for j := range blocks {
		if j+1 < blocks {
			prepare(j + 1)
		}
		b0, b1 := max(0, off-j*t), min(t, off+n-j*t)
		rows := unsafe.Add(sp, j*stride+4*d+b0*rb)
		for jq := range g {
			q8 := slot(j, jq)
			chanRowsI8Z(k8, unsafe.Add(op, 4*(jq*ld+j*t+b0-off)), q8, unsafe.Add(q8, d), rows, urb, b1-b0, p)
		}
	}
	return true
}
