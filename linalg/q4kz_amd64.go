//go:build amd64

package linalg

// q4kTokensZ writes to res[16g+t] q4kDotRows's sum of the Q4_K row of nsb super-blocks
// at w for token t of group g, for g < groups (q4kz_amd64.s), from the pack's signed
// codes, scales and code sums.
//
//go:noescape
func q4kTokensZ(res *float32, w *byte, xps *uint32, xdp *float32, xsp *int32, nsb, groups int)

// dotQ4KTokensZ is dotQ4KRowsAsm for every token of xt, bit for bit: each row by one
// q4kTokensZ call over all the groups, its results then stored token by token.
func dotQ4KTokensZ(out []float32, ldo int, w []byte, rowBytes, rows int, xt tokenPack, _ *rowTables, _ Matrix, _ int) {
	nsb, n := xt.nb/8, xt.n
	if !tokensWork(out, ldo, rows, n, nsb) {
		return
	}
	groups := (n + tokenGroup - 1) / tokenGroup
	_ = w[(rows-1)*rowBytes+nsb*q4KBlockBytes-1]
	_ = out[(n-1)*ldo+rows-1]
	_ = xt.xps[groups*nsb*8*8*tokenGroup-1]
	_ = xt.xdp[groups*nsb*8*tokenGroup-1]
	_ = xt.xsp[groups*nsb*8*tokenGroup-1]
	bufp := f32Scratch.get(groups * tokenGroup)
	defer f32Scratch.put(bufp)
	res := (*bufp)[:groups*tokenGroup]
	for r := 0; r < rows; r++ {
		q4kTokensZ(&res[0], &w[r*rowBytes], &xt.xps[0], &xt.xdp[0], &xt.xsp[0], nsb, groups)
		for t, v := range res[:n] {
			out[t*ldo+r] = v
		}
	}
}
