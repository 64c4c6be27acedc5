package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
)

// TestF16TokensMatchDot checks every kernel set's dotF16Tokens against its own dotF16
// bit for bit, token by token: rows with and without whole 32s of columns and a tail,
// token counts with partial 16-token groups and token blocks smaller than the count,
// rows with a gap after them, rows of no columns, and out values outside the results
// left alone.
func TestF16TokensMatchDot(t *testing.T) {
	r := rand.New(rand.NewPCG(111, 112))
	for _, k := range kernelModes(t) {
		if k.dotF16Tokens == nil {
			continue
		}
		for _, tc := range []struct{ rows, cols, gap, n, tb int }{
			{3, 32, 0, 16, 16}, {5, 71, 2, 17, 32}, {2, 20, 0, 40, 16}, {4, 768, 0, 64, 32}, {1, 96, 6, 33, 48},
			{3, 0, 0, 17, 16}, // no columns: every sum 0
		} {
			t.Run(fmt.Sprintf("%s/rows=%d/cols=%d/gap=%d/n=%d/tb=%d", k.name, tc.rows, tc.cols, tc.gap, tc.n, tc.tb), func(t *testing.T) {
				rb := 2*tc.cols + tc.gap
				w := make([]byte, tc.rows*rb)
				for i := 0; i < len(w); i += 2 {
					h := gguf.F32ToF16(float32(r.NormFloat64()))
					w[i], w[i+1] = byte(h), byte(h>>8)
				}
				x := randVals(r, tc.n*tc.cols, 1)
				xt := make([]float32, (tc.n+tokenGroup-1)/tokenGroup*tokenGroup*tc.cols)
				transposeTokens(xt, x, tc.cols, tc.n)
				ldo := tc.rows + 2
				out := tokensOut(tc.n, ldo)
				k.dotF16Tokens(out, ldo, w, rb, tc.rows, xt, x, tc.cols, tc.n, tc.tb)
				want := make([]float32, tc.rows)
				checkTokensOut(t, "dotF16Tokens", "dotF16", out, ldo, tc.rows, tc.n, func(tok int) []float32 {
					for i := range tc.rows {
						want[i] = k.dotF16(w[i*rb:i*rb+2*tc.cols], x[tok*tc.cols:(tok+1)*tc.cols])
					}
					return want
				})
			})
		}
	}
}
