package quant

// DotChannelRows scores g queries against tokens i0 ≤ i < i1 of a block of t tokens ×
// d channels of c (c.BlockBytes(t, d) bytes at block): scores[j*ld+i-i0] = q_j ·
// Decode(block)[i] for j < g, q_j = q[j*d:(j+1)*d]. For Channel it uses Channel.Dot's
// algebra, with the block's scales and zeros read once for all tokens and queries:
// q'_c = q_c·scale_c and b = Σ_c q_c·lo_c per query, then a plain dot of q' with each
// token's codes, plus b (the AVX2 kernels unpack the codes in registers, four tokens
// or four queries at a time, for d a multiple of 16). Other ChannelCodecs, other
// head sizes with the SIMD kernels, or a tmp too short for the pre-scaled queries
// (g·d + 2·d + g + 4 values) decode the tokens (DecodeBlockRows) and score them with
// MultiDot.
//
// tmp is scratch of at least (i1−i0)·d values, lo and s of at least d values each. It
// does nothing for an empty range and panics, like slice indexing, when a slice is
// too short.
func DotChannelRows(c ChannelCodec, scores []float32, ld int, q []float32, g int, block []byte, t, d, i0, i1 int, tmp, lo, s []float32) {
	if g <= 0 || d <= 0 || i0 < 0 || i1 > t || i0 >= i1 {
		return
	}
	_ = scores[(g-1)*ld+i1-i0-1]
	_ = q[g*d-1]
	ch, ok := c.(Channel)
	if ok && len(tmp) >= g*d+2*d+g+4 {
		block = block[:ch.BlockBytes(t, d)]
		if active.Load() != simdKernels || dotChannelFused == nil {
			// No vector Channel kernels (the scalar set, or the assembly-only set of
			// builds without GOEXPERIMENT=simd): the scalar algebra beats decoding.
			dotChannelScalar(ch, scores, ld, q, g, block, d, i0, i1, tmp)
			return
		}
		if dotChannelFused(ch, scores, ld, q, g, block, t, d, i0, i1, tmp) {
			return
		}
		// Shapes the archsimd kernel leaves: its vector decoder and MultiDot beat
		// the scalar algebra.
	}
	DecodeBlockRows(c, tmp, block, t, d, i0, i1, lo, s)
	MultiDot(scores, ld, q, g, tmp, d, i1-i0, d)
}

// dotChannelFused is the SIMD kernel of DotChannelRows for Channel (nil when this
// build has none): arguments checked by DotChannelRows, tmp at least g·d + 2·d + g +
// 4 values; it reports false for shapes it does not handle.
var dotChannelFused func(c Channel, scores []float32, ld int, q []float32, g int, block []byte, t, d, i0, i1 int, tmp []float32) bool

// dotChannelScalar is the reference for the Channel path of DotChannelRows:
// Channel.Dot's algebra per query, the pre-scaled query in tmp[:d].
func dotChannelScalar(c Channel, scores []float32, ld int, q []float32, g int, block []byte, d, i0, i1 int, tmp []float32) {
	qs := tmp[:d]
	rb := packedBytes(d, c.Bits)
	codes := block[4*d:]
	for j := range g {
		var b float32
		for ch, x := range q[j*d : (j+1)*d] {
			qs[ch] = x * getF16(block[4*ch:])
			b += x * getF16(block[4*ch+2:])
		}
		out := scores[j*ld:][:i1-i0]
		for i := range out {
			out[i] = dotPlain(qs, codes[(i0+i)*rb:][:rb], c.Bits) + b
		}
	}
}
