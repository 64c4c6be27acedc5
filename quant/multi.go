package quant

import "kvq/internal/kernelsel"

// Batched kernels for attention over stored rows. Decode attention with grouped-query
// attention scores g query heads against every key row of a KV head and adds every
// value row into g accumulators. Calling RowCodec.Dot and RowCodec.AddScaled once per
// (row, head) pays an interface call and a full pass over the codes each time; the
// functions here instead decode a tile of rows once into a small float32 buffer (which
// stays in L1) and then run one multi-query pass over it:
//
//	DecodeRows / DecodeBlock   codes → float32 tile, once per row
//	MultiDot                   g scores per row from the tile
//	MultiAxpy                  g weighted sums of the tile's rows
//
// Every function has a portable scalar implementation (the reference, scalarKernels
// in this file) and, on amd64 CPUs with AVX2 and FMA, a SIMD set that agrees with it:
// decoding bit for bit, the float sums up to summation order. The amd64 set runs
// Go assembly for MultiDot, MultiAxpy, the decoders (Channel blocks;
// Affine, F16, BF16, Int8 and FP8 rows) and the fused F32, BF16, F16, Int8, FP8,
// Affine and KIVI key row kernels (all but F32, BF16 and KIVI keys with F16C) and
// the Affine encoder (encode_amd64.s); on CPUs without F16C the kernels that need it
// are the scalar ones (asm_amd64.go). KVQ_NOSIMD=1 in the
// environment, or SetSIMD(false), selects the scalar kernels.

// kernelSet is one implementation of every batched kernel.
type kernelSet struct {
	name string
	// multiDot: scores[j*ld+i] = Σ_c q[j*d+c]·x[i*xs+c] for j < g, i < n.
	multiDot func(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int)
	// multiAxpy: acc[j*d+c] += Σ_i w[j*ld+i]·x[i*xs+c] for j < g, c < d.
	multiAxpy func(acc, w []float32, ld, g int, x []float32, xs, n, d int)
	// decRows decodes n rows of d values of codec c (one with an entry in the kernel
	// table, kernels.go; validated): row i at src[i*stride:] into dst[i*d:(i+1)*d].
	// kt is c's entry (kernelsOf), looked up once by the caller.
	decRows func(kt *rowKernels, c RowCodec, dst []float32, src []byte, stride, n, d int)
	// dotRows and addRows are fused kernels (decoding and products in one pass) for
	// the codecs and shapes they report true for; others go through tiles. The SIMD
	// set's run each codec's entry in the kernel table (kernels.go).
	dotRows func(kt *rowKernels, c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool
	addRows func(kt *rowKernels, c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool
	// scoredQuery, when set, returns the queries dotRows scores rows of d values of c
	// against: the round trips of q where its kernels quantize queries
	// (lossy_i8_amd64.go, int8_i16_amd64.go), else q itself.
	scoredQuery func(c RowCodec, q []float32, d int) []float32
	// addRounding, when set, returns AddRowsRounding's factor for rows of d values of
	// c (addi16_amd64.go).
	addRounding func(c RowCodec, d int) float64
	// independent, when set, is RowsQueriesIndependent (nil: every codec's queries
	// are independent).
	independent func(c RowCodec) bool
	// plan, when set, resolves c for rows of d values for a RowPlan (nil: none).
	plan func(c RowCodec, d int) *planKernels
	// decBlock decodes tokens i0..i1-1 of a Channel block of t tokens × d channels
	// (as Channel.Decode) into dst; lo and s are scratch of d values.
	decBlock func(c Channel, dst []float32, src []byte, t, d, i0, i1 int, lo, s []float32)
	// ropeRows rotates decoded key rows by a RoPE table (rotateRowsGo).
	ropeRows func(x []float32, n, d int, sp []float32, dims int, neox bool)
	// ropeDot1 scores one query, rotated back by sp (RoPE.backSpread of the block's
	// first position) into qr, against rows b0..b1 of a block of keys stored before
	// RoPE from their codes (ropeDotGo), or reports false for shapes it leaves
	// (DotChannelRoPE then decodes a tile); w is scratch of 4·d values.
	ropeDot1 func(c Channel, r *RoPE, out, q, sp []float32, block []byte, t, d, b0, b1 int, qr, lo, s, w []float32) bool
	// ropeSpan1, when set, scores one query against a run of blocks of keys stored
	// before RoPE as DotChannelRoPE (its arguments checked), or reports false, having
	// scored nothing, for the shapes it leaves.
	ropeSpan1 func(c Channel, r *RoPE, pos int, scores, q []float32, src []byte, stride, t, off, n, d int, tmp, qr, lo, s []float32) bool
	// chanDot scores g queries against tokens i0..i1-1 of a Channel block as
	// DotChannelRows (its arguments checked, block sliced to the block's bytes, tmp
	// holding at least g·d + 2·d + g + 4 values: channelBatch), or reports false,
	// having scored nothing, for the shapes it leaves, which DotChannelRows decodes
	// into tiles. The scalar set's (dotChannelScalar) takes every shape.
	chanDot func(c Channel, scores []float32, ld int, q []float32, g int, block []byte, t, d, i0, i1 int, tmp []float32) bool
	// chanSpan, when set, scores g queries against a run of Channel blocks as
	// DotChannelSpan (its arguments checked, tmp as for chanDot), or reports false,
	// having scored nothing, for the runs it leaves.
	chanSpan func(c Channel, scores []float32, ld int, q []float32, g int, src []byte, stride, t, off, n, d int, tmp []float32) bool
	// chanInt, when set, returns how chanDot scores blocks of c with d channels: 8
	// with int8 queries per group of 32 channels, 16 with int16 queries per head, 0
	// in float (nil: always 0; ChannelScores models it).
	chanInt func(c Channel, d int) int
	// chanAdd, when set, is ChannelValues.AddRows (its arguments checked, block
	// sliced to the block's bytes) for the shapes it takes, tmp holding at least
	// 2·d values; it reports false, having added nothing, for the others, which go
	// through tiles.
	chanAdd func(c ChannelValues, acc, w []float32, ld, g int, block []byte, d, i0, i1 int, tmp []float32) bool
	// ropeInt, when set, reports whether ropeDot1 scores blocks of c in integers
	// (ChannelScoresRoPE then gives its exact figure).
	ropeInt func(c Channel, r *RoPE, d int) bool
	// encF16 writes the binary16 bits of src (nearest, ties to even: F32ToF16) into
	// dst, 2 bytes per value, little-endian; len(dst) ≥ 2·len(src).
	encF16 func(dst []byte, src []float32)
	// encRange and encPack are groupRange and packCodes, the two steps of Affine
	// encoding around a group's parameters.
	encRange func(grp []float32) (lo, hi float32)
	encPack  func(c []byte, src []float32, lo, inv float32, bits int)
}

var scalarKernels = &kernelSet{
	name:      "scalar",
	multiDot:  multiDotScalar,
	multiAxpy: multiAxpyScalar,
	decRows:   decRowsRef,
	decBlock:  decBlockScalar,
	chanDot:   dotChannelScalar,
	ropeRows:  rotateRowsGo,
	ropeDot1:  ropeDotGo,
	encF16:    encodeF16Scalar,
	encRange:  groupRange,
	encPack:   packCodes,
	dotRows:   noDotRows,
	addRows:   noAddRows,
}

// simdKernels is this build's SIMD kernel set for this CPU, or nil.
var simdKernels = detectSIMD()

// active is the kernel set in use.
var active = kernelsel.New(scalarKernels, simdKernels)

// SetSIMD selects the SIMD kernels (on) or the portable scalar ones (off) for
// DecodeRows, DecodeBlock, MultiDot and MultiAxpy, and reports whether SIMD kernels
// are in use afterwards: false when this build or this CPU has none. The
// environment variable KVQ_NOSIMD=1 sets the initial choice to scalar.
func SetSIMD(on bool) bool { return active.SetSIMD(on) }

// KernelName names the kernel set in use: "scalar", or the SIMD set ("avx2",
// "avx2-asm") followed by "+avx512" or "+avx512vnni" where the CPU runs ZMM kernels
// too.
func KernelName() string {
	k := active.Load()
	if k == scalarKernels {
		return k.name
	}
	return k.name + zmmLevel()
}

// MultiDot computes g·n dot products of length d: for query j < g (q[j*d:(j+1)*d])
// and row i < n (x[i*xs:][:d]), scores[j*ld+i] = q_j · x_i. It panics, like slice
// indexing, when a slice is too short for that contract.
func MultiDot(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int) {
	if g <= 0 || n <= 0 || d <= 0 {
		return
	}
	_ = scores[(g-1)*ld+n-1]
	_ = q[g*d-1]
	_ = x[(n-1)*xs+d-1]
	active.Load().multiDot(scores, ld, q, g, x, xs, n, d)
}

// MultiAxpy adds g weighted sums of n rows of length d: for j < g and c < d,
// acc[j*d+c] += Σ_{i<n} w[j*ld+i]·x[i*xs+c]. It panics, like slice indexing, when a
// slice is too short for that contract.
func MultiAxpy(acc, w []float32, ld, g int, x []float32, xs, n, d int) {
	if g <= 0 || n <= 0 || d <= 0 {
		return
	}
	_ = acc[g*d-1]
	_ = w[(g-1)*ld+n-1]
	_ = x[(n-1)*xs+d-1]
	active.Load().multiAxpy(acc, w, ld, g, x, xs, n, d)
}

// DecodeRows decodes n rows of d values: row i, stored at src[i*stride:][:c.RowBytes(d)],
// into dst[i*d:(i+1)*d]. It equals calling c.Decode per row (bit for bit) and is
// faster for this package's codecs (those with a kernel table entry); other
// RowCodecs are decoded through c.Decode. It panics, like slice indexing, when a slice is too short.
func DecodeRows(c RowCodec, dst []float32, src []byte, stride, n, d int) {
	if n <= 0 || d <= 0 {
		return
	}
	rb := c.RowBytes(d)
	_ = dst[n*d-1]
	_ = src[(n-1)*stride+rb-1]
	if kt := kernelsOf(c); kt != nil {
		active.Load().decRows(kt, c, dst, src, stride, n, d)
		return
	}
	for i := range n {
		c.Decode(dst[i*d:(i+1)*d], src[i*stride:][:rb])
	}
}

// DecodeBlock decodes a block of t tokens × d channels of c (c.BlockBytes(t, d)
// bytes at src) into dst[:t*d], row-major. It equals c.Decode (bit for bit) and is
// faster for Channel; other ChannelCodecs are decoded through c.Decode. lo and s are
// scratch of at least d values each (the block's per-channel zeros and scales).
func DecodeBlock(c ChannelCodec, dst []float32, src []byte, t, d int, lo, s []float32) {
	DecodeBlockRows(c, dst, src, t, d, 0, t, lo, s)
}

// DecodeBlockRows is DecodeBlock for tokens i0 ≤ i < i1 of the block only, written to
// dst[(i-i0)*d:][:d]. For ChannelCodecs other than Channel, the whole block is decoded
// (c.Decode; dst must then hold t·d values) and the rows moved to the front.
func DecodeBlockRows(c ChannelCodec, dst []float32, src []byte, t, d, i0, i1 int, lo, s []float32) {
	if i0 < 0 || i1 > t || i0 >= i1 {
		return
	}
	ch, ok := c.(Channel)
	if !ok {
		c.Decode(dst[:t*d], src, t, d)
		copy(dst, dst[i0*d:i1*d])
		return
	}
	n := ch.BlockBytes(t, d)
	if n == 0 {
		return
	}
	active.Load().decBlock(ch, dst[:(i1-i0)*d], src[:n], t, d, i0, i1, lo[:d], s[:d])
}

// noDotRows and noAddRows are the scalar set's dotRows and addRows: no fused kernels,
// every call goes through tiles.
func noDotRows(*rowKernels, RowCodec, []float32, int, []float32, int, []byte, int, int, int, []float32) bool {
	return false
}

func noAddRows(*rowKernels, RowCodec, []float32, []float32, int, int, []byte, int, int, int, []float32) bool {
	return false
}

// decRowsRef is the scalar set's decRows: decRowsScalar, running no entry's kernels.
func decRowsRef(_ *rowKernels, c RowCodec, dst []float32, src []byte, stride, n, d int) {
	decRowsScalar(c, dst, src, stride, n, d)
}

// decRowsScalar is the reference for decRows: c.Decode per row.
func decRowsScalar(c RowCodec, dst []float32, src []byte, stride, n, d int) {
	rb := c.RowBytes(d)
	for i := range n {
		c.Decode(dst[i*d:(i+1)*d], src[i*stride:][:rb])
	}
}

// chanParams writes the scales and zeros of the d channels of a Channel block's
// header hdr (4·d bytes: per channel an f16 scale, then an f16 zero) to s and lo:
// the scalar twin of widenChanParams.
func chanParams(s, lo []float32, hdr []byte, d int) {
	for ch := range d {
		s[ch] = getF16(hdr[4*ch:])
		lo[ch] = getF16(hdr[4*ch+2:])
	}
}

// decBlockScalar is the reference for decBlock: Channel.Decode's formula, lo + code·s
// per channel, for tokens i0..i1-1.
func decBlockScalar(c Channel, dst []float32, src []byte, t, d, i0, i1 int, lo, s []float32) {
	chanParams(s, lo, src, d)
	rb := packedBytes(d, c.Bits)
	codes := src[4*d:]
	for i := i0; i < i1; i++ {
		row, in := dst[(i-i0)*d:][:d], codes[i*rb:][:rb]
		for ch := range row {
			var k byte
			switch c.Bits {
			case 8:
				k = in[ch]
			case 4:
				k = in[ch/2] >> (4 * (ch & 1)) & 15
			case 3:
				k = byte(code3(in, ch))
			default:
				k = in[ch/4] >> (2 * (ch & 3)) & 3
			}
			row[ch] = lo[ch] + codeF32[k]*s[ch]
		}
	}
}

// multiDotScalar is the reference for multiDot: one four-way-unrolled dot per (j, i).
func multiDotScalar(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int) {
	for i := range n {
		row := x[i*xs:][:d]
		for j := range g {
			qj := q[j*d:][:d]
			var s0, s1, s2, s3 float32
			c := 0
			for ; c+4 <= d; c += 4 {
				s0 += qj[c] * row[c]
				s1 += qj[c+1] * row[c+1]
				s2 += qj[c+2] * row[c+2]
				s3 += qj[c+3] * row[c+3]
			}
			for ; c < d; c++ {
				s0 += qj[c] * row[c]
			}
			scores[j*ld+i] = (s0 + s1) + (s2 + s3)
		}
	}
}

// multiAxpyScalar is the reference for multiAxpy: per row, g axpys.
func multiAxpyScalar(acc, w []float32, ld, g int, x []float32, xs, n, d int) {
	for i := range n {
		row := x[i*xs:][:d]
		for j := range g {
			a := acc[j*d:][:d]
			wj := w[j*ld+i]
			for c, v := range row {
				a[c] += wj * v
			}
		}
	}
}
