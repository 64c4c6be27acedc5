package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
)

// blockRefs are the scalar references of the types with exact kernels, and their
// block sizes.
var blockRefs = map[gguf.TensorType]struct {
	bytes int
	dot   func(w []byte, xq []int8, xd []float32) float32
}{
	gguf.TypeQ4_0: {q4BlockBytes, dotQ4Scalar},
	gguf.TypeQ5_0: {q5BlockBytes, dotQ5Scalar},
}

// TestBlockExactTwins checks every kernel set's exact kernels of Q4_0 and Q5_0
// (exactBlocks) against the type's scalar reference bit for bit, for one token and
// for many: row counts with and without a partial 4-row tile or group of eight, 1 to
// 65 blocks, token counts from 1 to 40 (partial 16-token groups), rows with a gap after
// them, codes at both ends of their range (every nibble and fifth bit 0, then 1), and
// out values outside the results left alone.
func TestBlockExactTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for _, k := range kernelModes(t) {
		for typ, ek := range k.exactBlocks {
			ref, ok := blockRefs[typ]
			if !ok {
				t.Fatalf("%s: exact kernels of %v, which has no reference here", k.name, typ)
			}
			for _, tc := range []struct{ rows, nb, gap, n int }{
				{8, 1, 0, 1}, {16, 24, 0, 3}, {9, 13, 0, 7}, {13, 8, 6, 16}, {4, 2, 0, 17}, {21, 65, 2, 40}, {3, 5, 0, 33}, {32, 24, 0, 32},
			} {
				name := fmt.Sprintf("%s/%v/rows=%d/nb=%d/gap=%d/n=%d", k.name, typ, tc.rows, tc.nb, tc.gap, tc.n)
				cols, rb := tc.nb*blockElems, tc.nb*ref.bytes+tc.gap
				w := make([]byte, tc.rows*rb)
				for i := range w {
					w[i] = byte(r.Uint32())
				}
				for i := 0; i < tc.rows; i++ {
					for b := 0; b < tc.nb; b++ {
						o := i*rb + b*ref.bytes
						w[o], w[o+1] = byte(r.Uint32()), halfHigh(r)
						if b%3 == 0 { // every code at its least, or at its greatest
							fill := byte(0xff * (b / 3 % 2))
							for j := 2; j < ref.bytes; j++ {
								w[o+j] = fill
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
						want[tok*tc.rows+i] = ref.dot(w[i*rb:i*rb+tc.nb*ref.bytes], xq[tok*cols:(tok+1)*cols], xd[tok*tc.nb:(tok+1)*tc.nb])
					}
				}
				t.Run(name, func(t *testing.T) {
					got := make([]float32, tc.rows+2)
					for tok := 0; tok < tc.n; tok++ {
						got[0], got[tc.rows+1] = -7, -7
						ek.rows(got[1:tc.rows+1], w, rb, xq[tok*cols:(tok+1)*cols], xd[tok*tc.nb:(tok+1)*tc.nb], xsum[tok*tc.nb:(tok+1)*tc.nb])
						if got[0] != -7 || got[tc.rows+1] != -7 {
							t.Fatalf("rows kernel wrote outside its rows")
						}
						for i := 0; i < tc.rows; i++ {
							if math.Float32bits(got[1+i]) != math.Float32bits(want[tok*tc.rows+i]) {
								t.Fatalf("rows kernel token %d row %d: %v, reference %v", tok, i, got[1+i], want[tok*tc.rows+i])
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
					// A leading stride of rows+3: the 3 values after each token's rows
					// must stay untouched.
					ldo := tc.rows + 3
					out := make([]float32, tc.n*ldo)
					for i := range out {
						out[i] = -7
					}
					ek.tokens(out, ldo, w, rb, tc.rows, xt, nil, Matrix{}, 0)
					for tok := 0; tok < tc.n; tok++ {
						for i := 0; i < ldo; i++ {
							v := out[tok*ldo+i]
							if i >= tc.rows {
								if v != -7 {
									t.Fatalf("many-token kernel wrote token %d value %d past its rows", tok, i)
								}
								continue
							}
							if math.Float32bits(v) != math.Float32bits(want[tok*tc.rows+i]) {
								t.Fatalf("many-token kernel token %d row %d: %v, reference %v", tok, i, v, want[tok*tc.rows+i])
							}
						}
					}
				})
			}
		}
	}
}
