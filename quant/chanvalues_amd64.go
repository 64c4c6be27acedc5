//go:build amd64

package quant

// The SIMD value sums of ChannelValues blocks: per query, the weighted sums of the
// tokens' codes in assembly (addChanCodes4 for four queries at a time, each row's
// codes converted once for the four; addChanCodes for the rest, four strips of 8
// channels per pass over the rows; the same sums either way), then each channel's
// scale and zero applied once for the block. Codes of
// 8, 4 and 2 bits, d a multiple of 8, with F16C (the block's f16 parameters widened
// by widenChanParams); 3-bit codes and other head sizes go through tiles.

// addChanCodes performs t[c] += Σ_{i<n} w[i]·code(i, c) for c < d, the n code rows
// of a Channel block of the given bits rb bytes apart (chanvalues_amd64.s).
//
//go:noescape
func addChanCodes(t, w *float32, codes *byte, n int, rb uintptr, d, bits int)

// addChanCodes4 is addChanCodes for four queries: t + r·ts and w + r·ws (bytes) for
// query r (chanvalues_amd64.s).
//
//go:noescape
func addChanCodes4(t *float32, ts uintptr, w *float32, ws uintptr, codes *byte, n int, rb uintptr, d, bits int)

// chanFinish performs a[c] += s[c]·t[c] + lo[c]·sw for c < d (a multiple of 8):
// a block's scales and zeros applied to one query's code sums t and weight sum sw
// (chanvalues_amd64.s).
//
//go:noescape
func chanFinish(a, s, lo, t *float32, sw float32, d int)

func init() { chanValuesAdd = addChanBlockAsm }

// addChanBlockAsm is ChannelValues.AddRows with the SIMD kernels, or false for the
// shapes it leaves: tmp holds the block's scales and zeros, then the queries' code
// sums (g·d values).
func addChanBlockAsm(c ChannelValues, acc, w []float32, ld, g int, block []byte, d, i0, i1 int, tmp []float32) bool {
	if d%8 != 0 || (c.Bits != 8 && c.Bits != 4 && c.Bits != 2) || !haveF16C {
		return false
	}
	s, lo, sums := tmp[:d], tmp[d:2*d], tmp[2*d:][:g*d]
	widenChanParams(&s[0], &lo[0], &block[0], d)
	rb, m := packedBytes(d, c.Bits), i1-i0
	codes := block[4*d+i0*rb : 4*d+i1*rb]
	clear(sums)
	j := 0
	for ; j+4 <= g; j += 4 {
		_ = w[(j+3)*ld+m-1]
		addChanCodes4(&sums[j*d], uintptr(4*d), &w[j*ld], uintptr(4*ld), &codes[0], m, uintptr(rb), d, c.Bits)
	}
	for ; j < g; j++ {
		addChanCodes(&sums[j*d], &w[j*ld], &codes[0], m, uintptr(rb), d, c.Bits)
	}
	for j := range g {
		var sw float32
		for _, x := range w[j*ld:][:m] {
			sw += x
		}
		chanFinish(&acc[j*d], &s[0], &lo[0], &sums[j*d], sw, d)
	}
	return true
}
