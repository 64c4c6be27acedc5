package linalg

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"kvq/gguf"
)

// TestMatMulQuantized checks that products of activations quantized ahead, in token
// ranges of any split, run concurrently, are MatMulMany's bit for bit, for every type
// and kernel set, and that a product whose tokens were not all quantized fails.
func TestMatMulQuantized(t *testing.T) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewPCG(31, 32))
	cols := 256
	for _, typ := range testTypes {
		rows := 48
		data, _ := encodeRows(t, typ, randVals(r, rows*cols, 0.05), rows, cols)
		w, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		ws := []Matrix{w, w}
		for _, k := range kernelModes(t) {
			withKernels(t, k)
			for _, n := range []int{1, 3, 8, 12, 16, 21, 40} {
				x := randVals(r, n*cols, 1)
				want := [][]float32{make([]float32, n*rows), make([]float32, n*rows)}
				if err := MatMulMany(want, ws, x, n); err != nil {
					t.Fatal(err)
				}
				// Splits: whole, at every 4 tokens (not at 8-token groups), and
				// uneven runs quantized concurrently.
				for _, step := range []int{n, 4, 5} {
					var a Activations
					if err := a.Prepare(x, n, ws...); err != nil {
						t.Fatal(err)
					}
					var wg sync.WaitGroup
					for t0 := 0; t0 < n; t0 += step {
						wg.Go(func() { a.Quantize(t0, min(n, t0+step)) })
					}
					wg.Wait()
					got := [][]float32{make([]float32, n*rows), make([]float32, n*rows)}
					if err := MatMulQuantized(got, ws, &a); err != nil {
						t.Fatal(err)
					}
					for j := range got {
						for i := range got[j] {
							if math.Float32bits(got[j][i]) != math.Float32bits(want[j][i]) {
								t.Fatalf("%v %s n=%d step=%d: out %d[%d] = %v, MatMulMany gives %v",
									typ, k.name, n, step, j, i, got[j][i], want[j][i])
							}
						}
					}
				}
				if _, ok := quantTypes[typ]; ok && n > 1 {
					var a Activations
					if err := a.Prepare(x, n, ws...); err != nil {
						t.Fatal(err)
					}
					a.Quantize(0, n-1)
					got := [][]float32{make([]float32, n*rows), make([]float32, n*rows)}
					if err := MatMulQuantized(got, ws, &a); err == nil {
						t.Fatalf("%v n=%d: a token left unquantized: no error", typ, n)
					}
				}
			}
		}
	}

	// Activations prepared for a Q8_0 product serve an F32 one, and the reverse
	// quantizes again; a mismatch of columns is an error.
	data, _ := encodeRows(t, gguf.TypeQ8_0, randVals(r, 8*cols, 0.05), 8, cols)
	q8, _ := NewMatrix(gguf.TypeQ8_0, 8, cols, data)
	data, _ = encodeRows(t, gguf.TypeF32, randVals(r, 8*cols, 0.05), 8, cols)
	f32, _ := NewMatrix(gguf.TypeF32, 8, cols, data)
	x := randVals(r, 2*cols, 1)
	for _, c := range []struct{ prep, use Matrix }{{q8, f32}, {f32, q8}} {
		var a Activations
		if err := a.Prepare(x, 2, c.prep); err != nil {
			t.Fatal(err)
		}
		a.Quantize(0, 2)
		want, got := make([]float32, 16), make([]float32, 16)
		if err := MatMul(want, c.use, x, 2); err != nil {
			t.Fatal(err)
		}
		if err := MatMulQuantized([][]float32{got}, []Matrix{c.use}, &a); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("prepared for %v, used for %v: out[%d] = %v, want %v", c.prep.Type, c.use.Type, i, got[i], want[i])
			}
		}
	}
	small, _ := NewMatrix(gguf.TypeF32, 1, 32, make([]byte, 128))
	var a Activations
	if err := a.Prepare(x, 2, q8, small); err == nil {
		t.Error("Prepare with matrices of different columns: no error")
	}
	if err := a.Prepare(x, 3, q8); err == nil {
		t.Error("Prepare of 3 tokens from 2 tokens' values: no error")
	}
	if err := a.Prepare(x, 2, q8); err != nil {
		t.Fatal(err)
	}
	a.Quantize(0, 2)
	if err := MatMulQuantized([][]float32{make([]float32, 2)}, []Matrix{small}, &a); err == nil {
		t.Error("MatMulQuantized with matrices of other columns than prepared: no error")
	}
}
