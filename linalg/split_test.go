package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
)

// TestMatMulSplitInvariant checks that how the rows are split between threads (runs
// of units for products that read each row once, chunks otherwise) changes no bit
// of the result: every row is one kernel sum whatever the split, and every row is
// written once. The products are large enough to run in parallel, with row counts
// that leave partial units and products of different row sizes in one call.
func TestMatMulSplitInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	shapes := []struct{ rows, cols int }{{1003, 256}, {161, 2048}, {40, 768}}
	for _, k := range kernelModes(t) {
		for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeF16, gguf.TypeF32, gguf.TypeQ4_K} {
			for _, n := range []int{1, 3, 8} {
				var ws []Matrix
				for _, sh := range shapes[:2] {
					data, _ := encodeRows(t, typ, randVals(r, sh.rows*sh.cols, 0.05), sh.rows, sh.cols)
					w, err := NewMatrix(typ, sh.rows, sh.cols, data)
					if err != nil {
						t.Fatal(err)
					}
					ws = append(ws, w)
				}
				// Matrices that share their input for MatMulMany: the first shape's
				// columns, three row counts.
				var many []Matrix
				for _, rows := range []int{1003, 37, 515} {
					data, _ := encodeRows(t, typ, randVals(r, rows*256, 0.05), rows, 256)
					w, err := NewMatrix(typ, rows, 256, data)
					if err != nil {
						t.Fatal(err)
					}
					many = append(many, w)
				}
				t.Run(fmt.Sprintf("%s/%v/n=%d", k.name, typ, n), func(t *testing.T) {
					withKernels(t, k)
					defer SetThreads(Threads())
					run := func(threads int) [][]float32 {
						if err := SetThreads(threads); err != nil {
							t.Fatal(err)
						}
						var outs [][]float32
						for _, w := range ws {
							x := randVals(rand.New(rand.NewPCG(uint64(w.Cols), 1)), n*w.Cols, 1)
							out := nanSlice(n * w.Rows)
							if err := MatMul(out, w, x, n); err != nil {
								t.Fatal(err)
							}
							outs = append(outs, out)
						}
						x := randVals(rand.New(rand.NewPCG(3, 3)), n*256, 1)
						mo := make([][]float32, len(many))
						for j, w := range many {
							mo[j] = nanSlice(n * w.Rows)
						}
						if err := MatMulMany(mo, many, x, n); err != nil {
							t.Fatal(err)
						}
						return append(outs, mo...)
					}
					want := run(1)
					for j := range want {
						for i, v := range want[j] {
							if v != v {
								t.Fatalf("one thread: product %d out[%d] not written", j, i)
							}
						}
					}
					for _, threads := range []int{2, 3, 4} {
						got := run(threads)
						for j := range want {
							for i := range want[j] {
								if math.Float32bits(got[j][i]) != math.Float32bits(want[j][i]) {
									t.Fatalf("threads=%d product %d out[%d] = %v, one thread gives %v", threads, j, i, got[j][i], want[j][i])
								}
							}
						}
					}
				})
			}
		}
	}
}

// nanSlice returns n NaNs: a value a product does not write stays NaN, which no
// comparison takes for a result.
func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}
