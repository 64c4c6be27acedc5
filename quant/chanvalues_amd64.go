//go:build amd64

package quant

// The SIMD value sums of ChannelValues blocks: the tokens' codes decoded in registers
// (code·scale + zero, as decChannelRows decodes them) and added times each query's
// weight straight into its accumulators (addChanRows4 for four queries at a time,
// each row decoded once for the four; addChanRows for the rest, four strips of 8
// channels per pass over the rows). The sums are bit for bit those of decoding the
// tokens into a tile and adding it with MultiAxpy, whatever the grouping of queries
// or the split of a block's tokens between calls (attention cuts spans where the
// other side's storage changes). Codes of 8, 4 and 2 bits, d a multiple of 8, with
// F16C (the block's f16 parameters widened by widenChanParams); 3-bit codes and other
// head sizes go through tiles.

// addChanRows performs acc[c] += Σ_{i<n} w[i]·(code(i, c)·s[c] + lo[c]) for c < d,
// the n code rows of a Channel block of the given bits rb bytes apart
// (chanvalues_amd64.s).
//
//go:noescape
func addChanRows(acc, w *float32, codes *byte, n int, rb uintptr, s, lo *float32, d, bits int)

// addChanRows4 is addChanRows for four queries: acc + r·as and w + r·ws (bytes) for
// query r (chanvalues_amd64.s).
//
//go:noescape
func addChanRows4(acc *float32, as uintptr, w *float32, ws uintptr, codes *byte, n int, rb uintptr, s, lo *float32, d, bits int)

// addChanBlockAsm is ChannelValues.AddRows with the SIMD kernels, or false for the
// shapes it leaves: tmp holds the block's scales and zeros (2·d values).
func addChanBlockAsm(c ChannelValues, acc, w []float32, ld, g int, block []byte, d, i0, i1 int, tmp []float32) bool {
	if d%8 != 0 || (c.Bits != 8 && c.Bits != 4 && c.Bits != 2) || !haveF16C {
		return false
	}
	s, lo := tmp[:d], tmp[d:2*d]
	widenChanParams(&s[0], &lo[0], &block[0], d)
	rb, m := packedBytes(d, c.Bits), i1-i0
	codes := block[4*d+i0*rb : 4*d+i1*rb]
	j := 0
	for ; j+4 <= g; j += 4 {
		_ = w[(j+3)*ld+m-1]
		addChanRows4(&acc[j*d], uintptr(4*d), &w[j*ld], uintptr(4*ld), &codes[0], m, uintptr(rb), &s[0], &lo[0], d, c.Bits)
	}
	for ; j < g; j++ {
		addChanRows(&acc[j*d], &w[j*ld], &codes[0], m, uintptr(rb), &s[0], &lo[0], d, c.Bits)
	}
	return true
}
