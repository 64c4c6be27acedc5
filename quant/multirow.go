package quant

// TileFloats is the size, in float32s, of the tile of decoded rows the batched
// kernels work through (8 KiB: the rows decoded once stay in L1 while every query
// of the group reads them).
const TileFloats = 2048

// ScratchFloats is the scratch size DotRows and AddRows need for rows of d values.
func ScratchFloats(d int) int { return max(TileFloats, d) }

// DotRows writes scores[j*ld+i] = q_j · Decode(row i) for j < g and i < n, where q_j
// is q[j*d:(j+1)*d], d = len(q)/g, and row i is src[i*stride:][:c.RowBytes(d)]: one
// pass over the codes scores all g queries (grouped-query attention reads a KV row
// once for its query heads). tmp is scratch of at least ScratchFloats(d) values.
// kvq's codecs run the batched kernels; any other codec falls back to c.Dot per
// (row, query). It panics, like slice indexing, when a slice is too short.
//
// The bytes of src past the rows should be those the caller reads next: the kernels
// may ask for them ahead (a few KiB past each row), never past the end of src; the
// results do not depend on it. AddRows likewise.
func DotRows(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	if kt := kernelsOf(c); kt != nil {
		dotRows(kt, c, scores, ld, q, g, src, stride, n, tmp)
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

// AddRowsRounding returns f ≥ 0 such that, with the kernels this process runs, each
// sum AddRows adds for a query over rows of d values of c is the exact sum over the
// decoded rows up to float rounding plus at most f·Σ_i |w_i|·range_i, range_i being
// the range (scale times the largest code) of the group of row i that holds the
// column. It is 0 where the kernels sum in float. On amd64 with F16C, one query's
// sums over 4-bit and 2-bit Affine rows in groups of 32 (with AVX-512 VNNI, every
// query's, and those of four queries at a time over Int8 rows of d a multiple of 64)
// round each product w_i·scale_i to an int16 step of the largest in a run of up to
// 64 rows (addi16_amd64.go): f = 64/65534. A reference that is to match AddRows
// allows this.
func AddRowsRounding(c RowCodec, d int) float64 { return addRounding(active.Load(), c, d) }

// addRounding is AddRowsRounding for kernel set k.
func addRounding(k *kernelSet, c RowCodec, d int) float64 {
	if k.addRounding == nil {
		return 0
	}
	return k.addRounding(c, d)
}

// AddRows performs acc[j*d+c] += Σ_{i<n} w[j*ld+i]·Decode(row i)[c] for j < g and
// c < d = len(acc)/g, rows as for DotRows, in one pass over the codes. kvq's codecs
// run the batched kernels; any other codec falls back to c.AddScaled per (row, query).
// It panics, like slice indexing, when a slice is too short.
func AddRows(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	if kt := kernelsOf(c); kt != nil {
		addRows(kt, c, acc, w, ld, g, src, stride, n, tmp)
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

// dotRows implements DotRows for this package's codecs (kt: c's kernel table
// entry): a fused kernel of the active set when it has one for c, else tiles of
// rows decoded once (DecodeRows) and scored by MultiDot.
func dotRows(kt *rowKernels, c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	if g <= 0 || n <= 0 || len(q) < g {
		return
	}
	d := len(q) / g
	rb := c.RowBytes(d)
	_ = scores[(g-1)*ld+n-1]
	_ = src[(n-1)*stride+rb-1]
	k := active.Load()
	if k.dotRows(kt, c, scores, ld, q[:g*d], g, src, stride, n, d, tmp[:ScratchFloats(d)]) {
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
func addRows(kt *rowKernels, c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	if g <= 0 || n <= 0 || len(acc) < g {
		return
	}
	d := len(acc) / g
	rb := c.RowBytes(d)
	_ = w[(g-1)*ld+n-1]
	_ = src[(n-1)*stride+rb-1]
	k := active.Load()
	if k.addRows(kt, c, acc[:g*d], w, ld, g, src, stride, n, d, tmp[:ScratchFloats(d)]) {
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
