package quant

// DotChannelRows scores g queries against tokens i0 ≤ i < i1 of a block of t tokens ×
// d channels of c (c.BlockBytes(t, d) bytes at block): scores[j*ld+i-i0] = q_j ·
// Decode(block)[i] for j < g, q_j = q[j*d:(j+1)*d]. For Channel it uses Channel.Dot's
// algebra, with the block's scales and zeros read once for all tokens and queries:
// q'_c = q_c·scale_c and b = Σ_c q_c·lo_c per query, then a plain dot of q' with each
// token's codes, plus b (the AVX2 kernels unpack the codes in registers, four tokens
// or four queries at a time, for d a multiple of 16). With the SIMD kernels,
// blocks with d a multiple of 32 are scored with integers: the pre-scaled queries q'
// are rounded, for 2-bit codes to int8 per group of 32 channels (d_k = max|q'|/127, as
// for q4 and q2 rows), for 4-bit and 8-bit codes to int16 per head (D = max|q'|/32767,
// as for q8 rows), and the codes multiplied exactly, so that a score is Σ_k
// d_k·Σ q̂_c·code_c + b, the product with the decoded token off by at most Σ_k
// (d_k/2)·Σ code_c (ChannelScores gives the exact figure). The zero term b keeps the
// query itself: rounding q' there would scale its error by lo_c/scale_c, large on the
// keys' offset channels. The queries go in batches that fit tmp (a query's scores
// do not depend on the batch). Other ChannelCodecs, other head sizes with the SIMD
// kernels, or a tmp too short for one pre-scaled query (3·d + 5 values) decode the
// tokens (DecodeBlockRows) and score them with MultiDot.
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
	if per := channelBatch(d, tmp); ok && per >= 1 {
		block = block[:ch.BlockBytes(t, d)]
		chanDot := active.Load().chanDot
		for j := 0; ; j += per {
			n := min(per, g-j)
			if !chanDot(ch, scores[j*ld:], ld, q[j*d:], n, block, t, d, i0, i1, tmp) {
				break // a shape the kernels leave (the same for every batch: j is 0)
			}
			if j+n == g {
				return
			}
		}
		// Shapes the SIMD set's kernel leaves: the vector decoder and MultiDot beat
		// the scalar algebra.
	}
	DecodeBlockRows(c, tmp, block, t, d, i0, i1, lo, s)
	MultiDot(scores, ld, q, g, tmp, d, i1-i0, d)
}

// DotChannelSpan is DotChannelRows over consecutive blocks of t tokens of c, block j
// at src[j*stride:]: it scores the n tokens starting at token off of the first
// block, scores[jq*ld+i] for the i-th of them (i < n) and query jq < g, each block as
// DotChannelRows scores it, with the checks and the choice of kernel made once for
// the run (attention calls it per span and KV head: a span of 64 tokens holds two
// KIVI key blocks of 32). It does nothing when n, g, t or d is not positive or off is
// negative, and panics, like slice indexing, when a slice is too short.
func DotChannelSpan(c ChannelCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, t, off, n, d int, tmp, lo, s []float32) {
	if n <= 0 || g <= 0 || t <= 0 || d <= 0 || off < 0 {
		return
	}
	blocks := (off + n + t - 1) / t
	bb := c.BlockBytes(t, d)
	_ = src[(blocks-1)*stride+bb-1]
	_ = scores[(g-1)*ld+n-1]
	_ = q[g*d-1]
	ch, ok := c.(Channel)
	// The kernel set's Channel kernels directly when they take every query at once,
	// as DotChannelRows would call them; otherwise (and for shapes they leave)
	// DotChannelRows per block.
	k := active.Load()
	whole := ok && channelBatch(d, tmp) >= g
	if whole && k.chanSpan != nil && k.chanSpan(ch, scores, ld, q, g, src, stride, t, off, n, d, tmp) {
		return
	}
	for j := range blocks {
		b0, b1 := max(0, off-j*t), min(t, off+n-j*t)
		out, block := scores[j*t+b0-off:], src[j*stride:][:bb]
		if !whole || !k.chanDot(ch, out, ld, q, g, block, t, d, b0, b1, tmp) {
			DotChannelRows(c, out, ld, q, g, block, t, d, b0, b1, tmp, lo, s)
		}
	}
}

// channelBatch is the most queries of d values one call of the fused Channel kernel
// takes with scratch tmp: their pre-scaled copies, the block's scales and zeros, and
// their zero terms (n·d + 2·d + n + 4 values for n queries).
func channelBatch(d int, tmp []float32) int { return (len(tmp) - 2*d - 4) / (d + 1) }

// dotChannelScalar is the scalar set's chanDot and the reference for the Channel
// path of DotChannelRows: Channel.Dot's algebra per query, the pre-scaled query in
// tmp[:d]. It takes every shape (reports true); t is not read.
func dotChannelScalar(c Channel, scores []float32, ld int, q []float32, g int, block []byte, _, d, i0, i1 int, tmp []float32) bool {
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
	return true
}

// ChannelScores sets out[i], i < t, to the score DotChannelRows gives the query q (d
// values) against token i of the block of c (c.BlockBytes(t, d) bytes), in float64,
// as the active kernels compute it up to their float rounding: q · the decoded token,
// or for the blocks the active kernels score with integers (see DotChannelRows)
// Σ_c q̃_c·code_c + Σ_c q_c·lo_c, q̃ the int8 (per group of 32 channels) or int16 (per
// head) round trip of q_c·scale_c. It is the reference of the conformance suites for
// KIVI keys, as ScoredQuery is for rows.
func ChannelScores(c ChannelCodec, out []float64, q []float32, block []byte, t, d int) {
	mode := 0
	if ch, ok := c.(Channel); ok {
		if k := active.Load(); k.chanInt != nil {
			mode = k.chanInt(ch, d)
		}
	}
	channelScores(c, out, q, block, t, d, mode)
}

// channelScores is ChannelScores for the float kernels (mode 0) or the integer ones
// with int8 (mode 8) or int16 (mode 16) queries (c a Channel).
func channelScores(c ChannelCodec, out []float64, q []float32, block []byte, t, d int, mode int) {
	_, _ = out[t-1], q[d-1]
	if mode == 0 {
		dec := make([]float32, t*d)
		c.Decode(dec, block, t, d)
		for i := range t {
			var s float64
			for x, v := range dec[i*d : (i+1)*d] {
				s += float64(q[x]) * float64(v)
			}
			out[i] = s
		}
		return
	}
	bits := c.(Channel).Bits
	qs := make([]float32, d)
	var b float64
	for x := range d {
		qs[x] = q[x] * getF16(block[4*x:])
		b += float64(q[x]) * float64(getF16(block[4*x+2:]))
	}
	var qr []float32 // NaN where q has a NaN or an infinity (intScale)
	if mode == 16 {
		qr = roundTripI16(qs, d)
	} else {
		qr = roundTripI8(qs, 32)
	}
	rb := packedBytes(d, bits)
	codes := make([]float32, d)
	for i := range t {
		decodeCodes(codes, 0, 1, block[4*d+i*rb:][:rb], bits)
		s := b
		for x, k := range codes {
			s += float64(qr[x]) * float64(k)
		}
		out[i] = s
	}
}

// AddChannelSpan adds the n value tokens starting at token off of consecutive blocks
// of t tokens of c, block j at src[j*stride:], into g accumulators:
// acc[jq*d+x] += Σ_i w[jq*ld+i]·token_i[x] for the i-th of them (i < n) and query
// jq < g, block by block through c.AddRows (attention calls it per span and KV head).
// tmp is scratch of at least ChannelAddFloats(d) values. It does nothing when n,
// g, t or d is not positive or off is negative, and panics, like slice indexing,
// when a slice is too short.
func AddChannelSpan(c ChannelAdder, acc, w []float32, ld, g int, src []byte, stride, t, off, n, d int, tmp []float32) {
	if n <= 0 || g <= 0 || t <= 0 || d <= 0 || off < 0 {
		return
	}
	blocks := (off + n + t - 1) / t
	bb := c.BlockBytes(t, d)
	_ = src[(blocks-1)*stride+bb-1]
	_ = w[(g-1)*ld+n-1]
	_ = acc[g*d-1]
	for j := range blocks {
		b0, b1 := max(0, off-j*t), min(t, off+n-j*t)
		c.AddRows(acc, w[j*t+b0-off:], ld, g, src[j*stride:][:bb], t, d, b0, b1, tmp)
	}
}
