//go:build amd64

package quant

import (
	"fmt"
	"testing"

	"kvq/internal/cpufeat"
	"kvq/internal/guardpage"
)

// TestTileAsmPageEnd runs MultiDot and MultiAxpy's assembly on rows, queries,
// weights and accumulators that end where an inaccessible page begins: the masked
// tails (d not a multiple of 8) must not read or write past them. Results are
// checked against the scalar twins.
func TestTileAsmPageEnd(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	for _, d := range []int{1, 3, 7, 8, 9, 15, 17, 20, 31, 33, 64} {
		for _, g := range []int{1, 2, 3, 4, 5} {
			for _, n := range []int{1, 2, 7, 9} {
				t.Run(fmt.Sprintf("d=%d/g=%d/n=%d", d, g, n), func(t *testing.T) {
					rows, queries, out := guardpage.Floats(t), guardpage.Floats(t), guardpage.Floats(t)
					x := rows[len(rows)-n*d:]
					q := queries[len(queries)-g*d:]
					for i := range x {
						x[i] = float32(i%13) - 6
					}
					for i := range q {
						q[i] = float32(i%5) - 2
					}
					scores := out[len(out)-g*n:]
					want := make([]float32, g*n)
					multiDotScalar(want, n, q, g, x, d, n, d)
					multiDotAsm(scores, n, q, g, x, d, n, d)
					for i := range want {
						if scores[i] != want[i] {
							t.Fatalf("score %d: %v, want %v", i, scores[i], want[i])
						}
					}
					// Weights are the queries' page, accumulators end at the page end.
					w := queries[len(queries)-g*n:]
					acc := out[len(out)-g*d:]
					clear(acc)
					ref := make([]float32, g*d)
					multiAxpyScalar(ref, w, n, g, x, d, n, d)
					multiAxpyAsm(acc, w, n, g, x, d, n, d)
					for i := range ref {
						if acc[i] != ref[i] {
							t.Fatalf("acc %d: %v, want %v", i, acc[i], ref[i])
						}
					}
				})
			}
		}
	}
}
