package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"kvq/internal/cpufeat"
)

// q6kRandomRows returns rows Q6_K rows of nsb random super-blocks each (every code,
// scales of both signs, finite d).
func q6kRandomRows(r *rand.Rand, rows, nsb int) []byte {
	w := make([]byte, rows*nsb*q6KBlockBytes)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for i := 0; i < rows*nsb; i++ {
		w[i*q6KBlockBytes+209] = halfHigh(r)
	}
	return w
}

// TestQ6KExpandTwin checks q6kExpandZ against q6kExpandScalar value for value.
func TestQ6KExpandTwin(t *testing.T) {
	if !cpufeat.AVX512VNNI || !cpufeat.F16C {
		t.Skip("no AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(101, 102))
	for _, nsb := range []int{1, 3} {
		w := q6kRandomRows(r, 1, nsb)
		nb := 8 * nsb
		wc, wr, wd := make([]int8, 32*nb), make([]int32, 8*nb), make([]float32, 2*nb)
		q6kExpandScalar(wc, wr, wd, w)
		// One more value of each than the expansion writes: it must stay untouched.
		gc, gr, gd := make([]int8, 32*nb+1), make([]int32, 8*nb+1), make([]float32, 2*nb+1)
		gc[32*nb], gr[8*nb], gd[2*nb] = 99, 99, 99
		q6kExpandZ(&gc[0], &gr[0], &gd[0], &w[0], nsb)
		if !slices.Equal(gc[:32*nb], wc) || !slices.Equal(gr[:8*nb], wr) || gc[32*nb] != 99 || gr[8*nb] != 99 || gd[2*nb] != 99 {
			t.Errorf("nsb=%d: codes or corrections differ from the twin, or written past the row", nsb)
		}
		for i := range wd {
			if math.Float32bits(gd[i]) != math.Float32bits(wd[i]) {
				t.Errorf("nsb=%d: d·sc %d: %v, twin %v", nsb, i, gd[i], wd[i])
			}
		}
	}
}

// TestQ6KTokensMatchRows checks every kernel set's dotQ6KTokens against its own
// dotQ6KRows bit for bit (a token's sum must not depend on the tokens beside it): 1 to
// 3 super-blocks per row, token counts with partial 16-token groups, rows with a gap
// after them, and out values outside the results left alone.
func TestQ6KTokensMatchRows(t *testing.T) {
	r := rand.New(rand.NewPCG(103, 104))
	for _, k := range kernelModes(t) {
		if k.dotQ6KTokens == nil {
			continue
		}
		for _, tc := range []struct{ rows, nsb, gap, n int }{{1, 1, 0, 1}, {5, 1, 0, 16}, {3, 3, 4, 17}, {7, 2, 0, 40}, {2, 3, 0, 64}} {
			t.Run(fmt.Sprintf("%s/rows=%d/nsb=%d/gap=%d/n=%d", k.name, tc.rows, tc.nsb, tc.gap, tc.n), func(t *testing.T) {
				nb := 8 * tc.nsb
				cols, rb := nb*blockElems, tc.nsb*q6KBlockBytes+tc.gap
				w := make([]byte, tc.rows*rb)
				packed := q6kRandomRows(r, tc.rows, tc.nsb)
				for i := range tc.rows {
					copy(w[i*rb:], packed[i*tc.nsb*q6KBlockBytes:(i+1)*tc.nsb*q6KBlockBytes])
				}
				xt, _ := testTokens(r, tc.n, nb)
				xq, xd := xt.xq, xt.xd
				ldo := tc.rows + 2
				out := tokensOut(tc.n, ldo)
				k.dotQ6KTokens(out, ldo, w, rb, tc.rows, xt, nil, Matrix{}, 0)
				want := make([]float32, tc.rows)
				checkTokensOut(t, "dotQ6KTokens", "dotQ6KRows", out, ldo, tc.rows, tc.n, func(tok int) []float32 {
					k.dotQ6KRows(want, w, rb, xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb])
					return want
				})
			})
		}
	}
}
