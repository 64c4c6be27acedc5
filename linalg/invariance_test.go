package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBatchInvariant checks the package's batch contract: a token's output is the same
// bits whatever other tokens share the call. For every weight type, kernel set and 1
// and 2 threads, each token of a batch of n (n = 2..64, and MatMulMany's shared
// input) must equal the same token multiplied alone. Shapes: a small product that stays
// on one thread, and one large enough to be split between threads.
func TestBatchInvariant(t *testing.T) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewPCG(31, 32))
	ns := []int{2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 33, 48, 64}
	if testing.Short() {
		ns = []int{2, 4, 6, 9, 16, 33}
	}
	const maxN = 64
	for _, typ := range testTypes {
		for _, sh := range []struct{ rows, cols int }{{37, 256}, {300, 512}} {
			data, _ := encodeRows(t, typ, randVals(r, sh.rows*sh.cols, 0.05), sh.rows, sh.cols)
			w, err := NewMatrix(typ, sh.rows, sh.cols, data)
			if err != nil {
				t.Fatal(err)
			}
			x := randVals(r, maxN*sh.cols, 1)
			for _, k := range kernelModes(t) {
				for _, threads := range []int{1, 2} {
					name := fmt.Sprintf("%s/%v/%dx%d/threads=%d", k.name, typ, sh.rows, sh.cols, threads)
					t.Run(name, func(t *testing.T) {
						withKernels(t, k)
						if err := SetThreads(threads); err != nil {
							t.Fatal(err)
						}
						alone := make([]float32, maxN*sh.rows)
						for tok := range maxN {
							if err := MatMul(alone[tok*sh.rows:(tok+1)*sh.rows], w, x[tok*sh.cols:(tok+1)*sh.cols], 1); err != nil {
								t.Fatal(err)
							}
						}
						got := make([]float32, maxN*sh.rows)
						other := make([]float32, maxN*sh.rows)
						for _, n := range ns {
							// Tokens [off, off+n): every token meets every position class.
							off := (n * 7) % (maxN - n + 1)
							xs := x[off*sh.cols : (off+n)*sh.cols]
							if err := MatMul(got[:n*sh.rows], w, xs, n); err != nil {
								t.Fatal(err)
							}
							compareTokens(t, fmt.Sprintf("MatMul n=%d", n), got, alone[off*sh.rows:], n, sh.rows)
							if err := MatMulMany([][]float32{other[:n*sh.rows], got[:n*sh.rows]}, []Matrix{w, w}, xs, n); err != nil {
								t.Fatal(err)
							}
							compareTokens(t, fmt.Sprintf("MatMulMany n=%d", n), got, alone[off*sh.rows:], n, sh.rows)
						}
					})
				}
			}
		}
	}
}

// compareTokens fails t at the first value of got's n tokens of rows values that differs
// in its bits from want's.
func compareTokens(t *testing.T, what string, got, want []float32, n, rows int) {
	t.Helper()
	for i := range n * rows {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: token %d row %d: %v in the batch, %v alone", what, i/rows, i%rows, got[i], want[i])
		}
	}
}
