//go:build amd64

package linalg

// q6kExpandZ expands the Q6_K row of nsb super-blocks at w for q6kTokensZ
// (q6kExpandScalar; q6kz_amd64.s).
//
//go:noescape
func q6kExpandZ(codes *int8, corr *int32, ds *float32, w *byte, nsb int)

// q6kTokensZ writes to res[16g+t] q6kDotRows's sum of the row q6kExpandZ expanded
// (nb blocks) for token t of group g, for g < groups, from the pack's codes plus 128
// and scales (q6kz_amd64.s).
//
//go:noescape
func q6kTokensZ(res *float32, codes *int8, corr *int32, ds *float32, xp *uint32, xdp *float32, nb, groups int)

// dotQ6KTokensZ is dotQ6KRowsAsm for every token of xt, bit for bit: each row expanded
// once by q6kExpandZ, then one q6kTokensZ call over all the groups, its results stored
// token by token.
func dotQ6KTokensZ(out []float32, ldo int, w []byte, rowBytes, rows int, xt tokenPack, _ *rowTables, _ Matrix, _ int) {
	nb, n := xt.nb, xt.n
	nsb := nb / 8
	if !tokensWork(out, ldo, rows, n, nsb) {
		return
	}
	groups := (n + tokenGroup - 1) / tokenGroup
	_ = w[(rows-1)*rowBytes+nsb*q6KBlockBytes-1]
	_ = out[(n-1)*ldo+rows-1]
	_ = xt.xp[groups*nb*8*tokenGroup-1]
	_ = xt.xdp[groups*nb*tokenGroup-1]
	s := getQ6KScratch(nb, groups)
	defer q6kPool.Put(s)
	for r := 0; r < rows; r++ {
		q6kExpandZ(&s.codes[0], &s.corr[0], &s.ds[0], &w[r*rowBytes], nsb)
		q6kTokensZ(&s.res[0], &s.codes[0], &s.corr[0], &s.ds[0], &xt.xp[0], &xt.xdp[0], nb, groups)
		for t, v := range s.res[:n] {
			out[t*ldo+r] = v
		}
	}
}
