package linalg

import (
	"fmt"
	"math"
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
		for _, tc := range []struct{ rows, nb, gap, n int }{
			{8, 1, 0, 1}, {16, 24, 0, 3}, {9, 13, 0, 7}, {13, 8, 6, 16}, {4, 2, 0, 17}, {21, 64, 2, 40}, {3, 5, 0, 33}, {32, 24, 0, 32},
		} {
			name := fmt.Sprintf("%s/rows=%d/nb=%d/gap=%d/n=%d", k.name, tc.rows, tc.nb, tc.gap, tc.n)
			cols := tc.nb * blockElems
			rb := tc.nb*q8BlockBytes + tc.gap
			w := make([]byte, tc.rows*rb)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			for i := 0; i < tc.rows; i++ {
				for b := 0; b < tc.nb; b++ {
					o := i*rb + b*q8BlockBytes
					w[o], w[o+1] = byte(r.Uint32()), halfHigh(r)
					if b%3 == 0 { // extreme codes
						for j := 0; j < 32; j += 2 {
							w[o+2+j], w[o+3+j] = 0x80, 0x7f
						}
					}
				}
			}
			x := randVals(r, tc.n*cols, 1)
			xq, xd, xsum := make([]int8, tc.n*cols), make([]float32, tc.n*tc.nb), make([]int32, tc.n*tc.nb)
			quantQ8Scalar(xq, xd, x)
			blockSums(xsum, xq)
			want := make([]float32, tc.n*tc.rows)
			for tok := 0; tok < tc.n; tok++ {
				for i := 0; i < tc.rows; i++ {
					want[tok*tc.rows+i] = dotQ8Scalar(w[i*rb:i*rb+tc.nb*q8BlockBytes], xq[tok*cols:(tok+1)*cols], xd[tok*tc.nb:(tok+1)*tc.nb])
				}
			}
			t.Run(name, func(t *testing.T) {
				got := make([]float32, tc.rows+2)
				for tok := 0; tok < tc.n; tok++ {
					got[0], got[tc.rows+1] = -7, -7
					k.dotQ8RowsX(got[1:tc.rows+1], w, rb, xq[tok*cols:(tok+1)*cols], xd[tok*tc.nb:(tok+1)*tc.nb], xsum[tok*tc.nb:(tok+1)*tc.nb])
					if got[0] != -7 || got[tc.rows+1] != -7 {
						t.Fatalf("dotQ8RowsX wrote outside its rows")
					}
					for i := 0; i < tc.rows; i++ {
						if math.Float32bits(got[1+i]) != math.Float32bits(want[tok*tc.rows+i]) {
							t.Fatalf("dotQ8RowsX token %d row %d: %v, dotQ8Scalar %v", tok, i, got[1+i], want[tok*tc.rows+i])
						}
					}
				}
				groups := (tc.n + tokenGroup - 1) / tokenGroup
				xp, xdp := make([]uint32, groups*tc.nb*8*tokenGroup), make([]float32, groups*tc.nb*tokenGroup)
				for i := range xp {
					xp[i] = r.Uint32() // the pack must fill every lane it is read by
				}
				xt := tokenPack{n: tc.n, nb: tc.nb, xq: xq, xd: xd, xp: xp, xdp: xdp}
				packTokens(&xt, xsum, 0, tc.n)
				// out with a leading stride of rows+3: the 3 values after each token's rows
				// must stay untouched. Tables made per call, then kept for the matrix
				// (twice: made, then reused).
				ldo := tc.rows + 3
				out := make([]float32, tc.n*ldo)
				tab := &rowTables{}
				for _, tb := range []*rowTables{nil, tab, tab} {
					for i := range out {
						out[i] = -7
					}
					k.dotQ8Tokens(out, ldo, w, rb, tc.rows, xt, tb, Matrix{Rows: tc.rows, Data: w}, 0)
					for tok := 0; tok < tc.n; tok++ {
						for i := 0; i < ldo; i++ {
							v := out[tok*ldo+i]
							if i >= tc.rows {
								if v != -7 {
									t.Fatalf("dotQ8Tokens wrote token %d value %d past its rows", tok, i)
								}
								continue
							}
							if math.Float32bits(v) != math.Float32bits(want[tok*tc.rows+i]) {
								t.Fatalf("dotQ8Tokens token %d row %d: %v, dotQ8Scalar %v", tok, i, v, want[tok*tc.rows+i])
							}
						}
					}
				}
			})
		}
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
			x := randVals(r, tc.n*cols, 1)
			xq, xd, xsum := make([]int8, tc.n*cols), make([]float32, tc.n*nb), make([]int32, tc.n*nb)
			quantQ8Scalar(xq, xd, x)
			blockSums(xsum, xq)
			groups := (tc.n + tokenGroup - 1) / tokenGroup
			xt := tokenPack{n: tc.n, nb: nb, xq: xq, xd: xd,
				xps: make([]uint32, groups*nb*8*tokenGroup), xdp: make([]float32, groups*nb*tokenGroup), xsp: make([]int32, groups*nb*tokenGroup)}
			for i := range xt.xps {
				xt.xps[i] = r.Uint32()
			}
			packTokens(&xt, xsum, 0, tc.n)
			ldo := tc.rows + 2
			out := make([]float32, tc.n*ldo)
			for i := range out {
				out[i] = -7
			}
			k.dotQ4KTokens(out, ldo, w, rb, tc.rows, xt, nil, Matrix{}, 0)
			want := make([]float32, tc.rows)
			for tok := 0; tok < tc.n; tok++ {
				k.dotQ4KRows(want, w, rb, xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], xsum[tok*nb:(tok+1)*nb])
				for i := 0; i < ldo; i++ {
					v := out[tok*ldo+i]
					if i >= tc.rows {
						if v != -7 {
							t.Fatalf("%s %+v: dotQ4KTokens wrote token %d value %d past its rows", k.name, tc, tok, i)
						}
						continue
					}
					if math.Float32bits(v) != math.Float32bits(want[i]) {
						t.Fatalf("%s %+v: token %d row %d: dotQ4KTokens %v, dotQ4KRows %v", k.name, tc, tok, i, v, want[i])
					}
				}
			}
		}
	}
}
