//go:build amd64

package quant

// Affine encoding with AVX2 (encode_amd64.s): the range of a group and its packed
// codes 8 values per step instead of value by value, for groups of a multiple of 8
// values; other lengths go to the scalar twins, groupRange and packCodes, whose
// results these equal byte for byte. Appending a token to a q4 cache encodes every
// layer's keys and values on the caller's thread, between two parallel products.

// affineRange returns, over the n values at src (n a positive multiple of 8), the
// least and greatest of ±65504 and the values below or above it, NaN skipped, and
// whether a value is NaN.
//
//go:noescape
func affineRange(src *float32, n int) (lo, hi float32, nan bool)

// affineQuant writes the packed bits-bit codes (bits 8, 4 or 2) of the n values at src
// (n a positive multiple of 8) for zero lo and reciprocal step inv: quantCode's codes,
// cnan being its code value of NaN before clamping.
//
//go:noescape
func affineQuant(dst *byte, src *float32, n int, lo, inv, cnan float32, bits int)

// groupRangeAsm is groupRange through affineRange for groups of a multiple of 8
// values. A zero minimum goes to groupRange: the scalar loop keeps the first of −0
// and +0 it meets, which the lanes do not tell, and the minimum's sign is stored (the
// group's f16 zero). The maximum's is not: it only enters hi − lo.
func groupRangeAsm(grp []float32) (lo, hi float32) {
	if len(grp) == 0 || len(grp)%8 != 0 {
		return groupRange(grp)
	}
	lo, hi, nan := affineRange(&grp[0], len(grp))
	if lo == 0 {
		return groupRange(grp)
	}
	if nan { // NaN reads as 0
		lo, hi = min(lo, 0), max(hi, 0)
	}
	return max(lo, -f16Max), min(hi, f16Max)
}

// packCodesAsm is packCodes through affineQuant for the values up to the last
// multiple of 8, packCodes for the rest; 3-bit codes all through packCodes. bits is
// 8, 4, 3 or 2 (Affine validates it).
func packCodesAsm(c []byte, src []float32, lo, inv float32, bits int) {
	n := len(src) &^ 7
	if bits == 3 {
		n = 0
	}
	if n > 0 {
		_ = c[n*bits/8-1]
		affineQuant(&c[0], &src[0], n, lo, inv, nanCode(lo, inv), bits)
		c, src = c[n*bits/8:], src[n:]
	}
	if len(src) > 0 {
		packCodes(c, src, lo, inv, bits)
	}
}
