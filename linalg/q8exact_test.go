package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestQ8ExactTwins checks every kernel set's dotQ8RowsX and dotQ8Tokens against
// dotQ8Scalar bit for bit: row counts with and without a partial tile or group of
// eight, token counts from 1 to 40 (partial 16-token groups), rows with a gap after
// them (rowBytes larger than the row), codes at −128 and 127 and scales of every size,
// and out values outside the results left alone.
func TestQ8ExactTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, k := range kernelModes(t) {
		if k.dotQ8RowsX == nil {
			continue
		}
		checkExactTwin(t, r, exactTwin{
			name: k.name, kernel: "dotQ8RowsX", tokensName: "dotQ8Tokens", refName: "dotQ8Scalar",
			blockBytes: q8BlockBytes, ref: dotQ8Scalar, rows: k.dotQ8RowsX, tokens: k.dotQ8Tokens,
			extreme: func(blk []byte, _ int) { // codes at −128 and 127
				for j := 2; j < len(blk); j += 2 {
					blk[j], blk[j+1] = 0x80, 0x7f
				}
			},
			tables: true, // made per call, then kept for the matrix (twice: made, then reused)
		}, []exactCase{
			{8, 1, 0, 1}, {16, 24, 0, 3}, {9, 13, 0, 7}, {13, 8, 6, 16}, {4, 2, 0, 17}, {21, 64, 2, 40}, {3, 5, 0, 33}, {32, 24, 0, 32},
			{28, 24, 0, 48}, {12, 3, 4, 8}, {20, 6, 0, 24},
			{40, 5, 2, 16}, {28, 3, 0, 7}, {36, 2, 0, 13}, {44, 3, 1, 28}, {28, 2, 0, 20}, // groups over several tiles a call
		})
	}
}

// TestQ4KTokensMatchRows checks every kernel set's dotQ4KTokens against its own
// dotQ4KRows bit for bit (the many-token kernel must give each token the sum the
// one-token kernel gives it): random super-blocks (6-bit scales and minimums of every
// value), 1 to 3 super-blocks per row, token counts with partial 16-token groups, and
// out values outside the results left alone.
func TestQ4KTokensMatchRows(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, k := range kernelModes(t) {
		if k.dotQ4KTokens == nil {
			continue
		}
		for _, tc := range []struct{ rows, nsb, n int }{{1, 1, 1}, {5, 1, 16}, {3, 3, 17}, {7, 2, 40}, {2, 3, 64}} {
			nb := 8 * tc.nsb
			cols, rb := nb*blockElems, tc.nsb*q4KBlockBytes
			w := make([]byte, tc.rows*rb)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			for i := 0; i < tc.rows*tc.nsb; i++ { // finite d and dmin
				w[i*q4KBlockBytes+1], w[i*q4KBlockBytes+3] = halfHigh(r), halfHigh(r)
			}
			xt, xsum := testTokens(r, tc.n, nb)
			xq, xd := xt.xq, xt.xd
			ldo := tc.rows + 2
			out := tokensOut(tc.n, ldo)
			k.dotQ4KTokens(out, ldo, w, rb, tc.rows, xt, nil, Matrix{}, 0)
			want := make([]float32, tc.rows)
			checkTokensOut(t, fmt.Sprintf("%s %+v: dotQ4KTokens", k.name, tc), "dotQ4KRows", out, ldo, tc.rows, tc.n, func(tok int) []float32 {
				k.dotQ4KRows(want, w, rb, xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], xsum[tok*nb:(tok+1)*nb])
				return want
			})
		}
	}
}
