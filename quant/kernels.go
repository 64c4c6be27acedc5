package quant

// The kernel table: each row codec type of this package carries its own entry, a
// rowKernels value declared beside the codec and filled by the files of its SIMD
// kernels (the amd64 ones fill theirs at init), as ggml's per-type traits carry a
// type's vec_dot. The batched functions (DotRows, AddRows, DecodeRows, RowPlan,
// ScoredQuery, AddRowsRounding, RowsQueriesIndependent) find a codec's kernels
// through its entry, with no switch over codec types: a codec brings its kernels in
// its own files, and the registry (registry.go) names it with one row.
//
// Two tiers: the scalar kernel set runs no entry (every codec goes through tiles of
// rows decoded by c.Decode and scored by the scalar MultiDot and MultiAxpy, the
// reference); the SIMD set runs the entries' kernels, each of which picks its ZMM
// twins where the CPU has AVX-512 (haveAVX512F, haveVNNI512; KVQ_NOAVX512=1 keeps
// the AVX2 ones). A nil kernel, or one that reports false, leaves the call to tiles.

// rowKernels is one row codec type's entry in the kernel table: its SIMD kernels for
// rows of d values, each given the codec value (of the entry's type) it runs for.
type rowKernels struct {
	// dot scores g queries (four at a time where the codec has a four-query kernel,
	// the rest one by one) against n rows, as DotRows; false: the shape is not taken.
	dot func(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool
	// add adds n weighted rows into g accumulators, as AddRows; false as dot.
	add func(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool
	// dotNext and addNext, where the codec has them, are dot and add (the same bits)
	// asking for the lines of the rows next bytes on from each row they read, which
	// the caller reads next (RowPlan.DotRowsNext); false as dot.
	// pq: the queries prepared (RowPlan.PrepareQuery) or nil.
	dotNext func(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n, d int, tmp []float32, next uintptr) bool
	addNext func(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32, next uintptr) bool
	// decode decodes n rows into a tile, bit for bit c.Decode; false as dot.
	decode func(c RowCodec, dst []float32, src []byte, stride, n, d int) bool
	// plan resolves c for rows of d values once (RowPlan): its query preparation and
	// the dot and add kernels without the per-call dispatch; nil where it has none.
	plan func(c RowCodec, d int) *planKernels
	// scored returns the queries dot scores against (ScoredQuery): their round trips
	// where the kernels quantize queries. nil: the queries themselves.
	scored func(c RowCodec, q []float32, d int) []float32
	// rounding is AddRowsRounding's factor (nil: 0, sums in float).
	rounding func(c RowCodec, d int) float64
	// independent: dot and add give each query the same bits whatever shares the
	// call (RowsQueriesIndependent).
	independent bool
}

// planKernels are a codec's kernels resolved for rows of d values (rowKernels.plan):
// what a RowPlan calls.
type planKernels struct {
	// queryFloats is the length of g prepared queries (0: the kernels read q as it is).
	queryFloats func(g int) int
	// prepare writes the g queries q in the form dot reads as pq.
	prepare func(pq, q []float32, g int)
	// dot is DotRows with pq the prepared queries or nil.
	dot func(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n int, tmp []float32)
	// add is AddRows; false: the call goes to the package function.
	add func(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) bool
}

// kernelCodec is a row codec with an entry in the kernel table: this package's.
type kernelCodec interface {
	RowCodec
	kernels() *rowKernels
}

// kernelsOf returns c's entry in the kernel table, or nil for codecs of other
// packages (which DotRows and AddRows run through c.Dot and c.AddScaled).
func kernelsOf(c RowCodec) *rowKernels {
	if k, ok := c.(kernelCodec); ok {
		return k.kernels()
	}
	return nil
}

// The SIMD kernel set's row functions: each codec's entry.

func tableDotRows(k *rowKernels, c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	return k != nil && k.dot != nil && k.dot(c, scores, ld, q, g, src, stride, n, d, tmp)
}

func tableAddRows(k *rowKernels, c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	return k != nil && k.add != nil && k.add(c, acc, w, ld, g, src, stride, n, d, tmp)
}

func tableDecRows(k *rowKernels, c RowCodec, dst []float32, src []byte, stride, n, d int) {
	if k != nil && k.decode != nil && k.decode(c, dst, src, stride, n, d) {
		return
	}
	decRowsScalar(c, dst, src, stride, n, d)
}

func tableScoredQuery(c RowCodec, q []float32, d int) []float32 {
	if k := kernelsOf(c); k != nil && k.scored != nil {
		return k.scored(c, q, d)
	}
	return q
}

func tableRounding(c RowCodec, d int) float64 {
	if k := kernelsOf(c); k != nil && k.rounding != nil {
		return k.rounding(c, d)
	}
	return 0
}

func tableIndependent(c RowCodec) bool {
	k := kernelsOf(c)
	return k != nil && k.independent
}

func tablePlan(c RowCodec, d int) *planKernels {
	if k := kernelsOf(c); k != nil && k.plan != nil {
		return k.plan(c, d)
	}
	return nil
}
