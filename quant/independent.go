package quant

// RowsQueriesIndependent reports whether, with the kernels this process runs,
// DotRows and AddRows over rows of c give each query the same bits whatever other
// queries share the call (any g) and, for AddRows, whatever rows of weight 0 follow
// its own. Callers that batch the queries of different tokens (a causal prefill
// scoring a tile of queries at once, each masked to its prefix) need this for a
// token's result to be the same bits as when it is scored alone. It holds for the
// float codecs and for every codec under the scalar kernels. It does not hold for
// Int8 and Affine rows with SIMD kernels: their kernels depend on the number of
// queries (four at a time, the rest one by one: integer copies of the queries for
// some, float for others) and on the rows of a call (the last n mod 4 rows summed in
// float, the others in integers rounded to a step of the largest weight in a run).
func RowsQueriesIndependent(c RowCodec) bool {
	k := active.Load()
	return k.independent == nil || k.independent(c)
}

// ChannelQueriesIndependent is RowsQueriesIndependent for the key scores of channel
// codecs (DotChannelSpan, DotChannelRoPE): true only under the scalar kernels, as
// the SIMD ones take other paths for one, two or four queries.
func ChannelQueriesIndependent() bool { return active.Load() == scalarKernels }
