package quant

// MultiRowCodec is implemented by row codecs with batched attention kernels: one call
// scores g query vectors against n stored rows, or adds n rows weighted per query
// into g accumulators, instead of g·n calls of Dot or AddScaled. Every kvq row codec
// implements it; DotRows and AddRows below discover it by type assertion and fall
// back to the plain methods for other codecs.
type MultiRowCodec interface {
	RowCodec
	// DotRows writes scores[j*ld+i] = q_j · Decode(row i) for j < g and i < n, where
	// q_j is q[j*d:(j+1)*d], d = len(q)/g, and row i is src[i*stride:][:RowBytes(d)].
	// tmp is scratch of at least ScratchFloats(d) values.
	DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32)
	// AddRows performs acc[j*d+c] += Σ_{i<n} w[j*ld+i]·Decode(row i)[c] for j < g and
	// c < d = len(acc)/g, rows as for DotRows. tmp is scratch of at least
	// ScratchFloats(d) values.
	AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32)
}

// TileFloats is the size, in float32s, of the tile of decoded rows the batched
// kernels work through (8 KiB: the rows decoded once stay in L1 while every query
// of the group reads them).
const TileFloats = 2048

// ScratchFloats is the scratch size DotRows and AddRows need for rows of d values.
func ScratchFloats(d int) int { return max(TileFloats, d) }

// DotRows is MultiRowCodec.DotRows for any row codec: c's own when it has one, else
// c.Dot per (row, query). It panics, like slice indexing, when a slice is too short.
func DotRows(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	if ours(c) {
		dotRows(c, scores, ld, q, g, src, stride, n, tmp) // c stays boxed once: no allocation per call
		return
	}
	if mc, ok := c.(MultiRowCodec); ok {
		mc.DotRows(scores, ld, q, g, src, stride, n, tmp)
		return
	}
	if g <= 0 || n <= 0 {
		return
	}
	d := len(q) / g
	rb := c.RowBytes(d)
	for i := range n {
		row := src[i*stride:][:rb]
		for j := range g {
			scores[j*ld+i] = c.Dot(q[j*d:(j+1)*d], row)
		}
	}
}

// AddRows is MultiRowCodec.AddRows for any row codec: c's own when it has one, else
// c.AddScaled per (row, query). It panics, like slice indexing, when a slice is too
// short.
func AddRows(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	if ours(c) {
		addRows(c, acc, w, ld, g, src, stride, n, tmp)
		return
	}
	if mc, ok := c.(MultiRowCodec); ok {
		mc.AddRows(acc, w, ld, g, src, stride, n, tmp)
		return
	}
	if g <= 0 || n <= 0 {
		return
	}
	d := len(acc) / g
	rb := c.RowBytes(d)
	for i := range n {
		row := src[i*stride:][:rb]
		for j := range g {
			c.AddScaled(acc[j*d:(j+1)*d], w[j*ld+i], row)
		}
	}
}

// ours reports whether c is one of this package's row codecs, whose DotRows and AddRows
// methods are dotRows and addRows. Calling those directly with c keeps its interface
// value: going through the methods would box a struct codec (Affine, FP8) again on every
// call, an allocation per attention span.
func ours(c RowCodec) bool {
	switch c.(type) {
	case F32, F16, BF16, Int8, FP8, Affine:
		return true
	}
	return false
}

// dotRows implements DotRows for kvq's codecs: a fused kernel of the active set when
// it has one for c, else tiles of rows decoded once (DecodeRows) and scored by
// MultiDot.
func dotRows(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	if g <= 0 || n <= 0 || len(q) < g {
		return
	}
	d := len(q) / g
	rb := c.RowBytes(d)
	_ = scores[(g-1)*ld+n-1]
	_ = src[(n-1)*stride+rb-1]
	k := active.Load()
	if k.dotRows(c, scores, ld, q[:g*d], g, src, stride, n, d, tmp[:ScratchFloats(d)]) {
		return
	}
	t := max(1, TileFloats/d)
	tmp = tmp[:t*d]
	for i0 := 0; i0 < n; i0 += t {
		m := min(t, n-i0)
		DecodeRows(c, tmp, src[i0*stride:], stride, m, d)
		MultiDot(scores[i0:], ld, q, g, tmp, d, m, d)
	}
}

// addRows implements AddRows for kvq's codecs, as dotRows.
func addRows(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	if g <= 0 || n <= 0 || len(acc) < g {
		return
	}
	d := len(acc) / g
	rb := c.RowBytes(d)
	_ = w[(g-1)*ld+n-1]
	_ = src[(n-1)*stride+rb-1]
	k := active.Load()
	if k.addRows(c, acc[:g*d], w, ld, g, src, stride, n, d, tmp[:ScratchFloats(d)]) {
		return
	}
	t := max(1, TileFloats/d)
	tmp = tmp[:t*d]
	for i0 := 0; i0 < n; i0 += t {
		m := min(t, n-i0)
		DecodeRows(c, tmp, src[i0*stride:], stride, m, d)
		MultiAxpy(acc, w[i0:], ld, g, tmp, d, m, d)
	}
}

// DotRows implements MultiRowCodec.
func (c F32) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	dotRows(c, scores, ld, q, g, src, stride, n, tmp)
}

// AddRows implements MultiRowCodec.
func (c F32) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	addRows(c, acc, w, ld, g, src, stride, n, tmp)
}

// DotRows implements MultiRowCodec.
func (c F16) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	dotRows(c, scores, ld, q, g, src, stride, n, tmp)
}

// AddRows implements MultiRowCodec.
func (c F16) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	addRows(c, acc, w, ld, g, src, stride, n, tmp)
}

// DotRows implements MultiRowCodec.
func (c BF16) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	dotRows(c, scores, ld, q, g, src, stride, n, tmp)
}

// AddRows implements MultiRowCodec.
func (c BF16) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	addRows(c, acc, w, ld, g, src, stride, n, tmp)
}

// DotRows implements MultiRowCodec.
func (c Int8) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	dotRows(c, scores, ld, q, g, src, stride, n, tmp)
}

// AddRows implements MultiRowCodec.
func (c Int8) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	addRows(c, acc, w, ld, g, src, stride, n, tmp)
}

// DotRows implements MultiRowCodec.
func (c FP8) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	dotRows(c, scores, ld, q, g, src, stride, n, tmp)
}

// AddRows implements MultiRowCodec.
func (c FP8) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	addRows(c, acc, w, ld, g, src, stride, n, tmp)
}

// DotRows implements MultiRowCodec.
func (c Affine) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	dotRows(c, scores, ld, q, g, src, stride, n, tmp)
}

// AddRows implements MultiRowCodec.
func (c Affine) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	addRows(c, acc, w, ld, g, src, stride, n, tmp)
}
