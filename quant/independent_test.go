package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowsQueriesIndependent checks RowsQueriesIndependent where it says true: each
// query of a DotRows or AddRows call of g queries gets the bits it gets alone, and an
// AddRows over n rows whose last ones weigh 0 gives a query the bits of the call over
// its own rows only, and rows split into two calls give the sums and scores of one
// call. Int8 and Affine rows are checked under the scalar kernels; with
// SIMD kernels the function must say false for them. Head sizes from 8 to 128.
func TestRowsQueriesIndependent(t *testing.T) {
	for _, d := range []int{8, 16, 64, 128} {
		t.Run(fmt.Sprintf("d=%d", d), func(t *testing.T) { testRowsQueriesIndependent(t, d) })
	}
}

func testRowsQueriesIndependent(t *testing.T, d int) {
	const n = 23
	rng := rand.New(rand.NewPCG(3, 4))
	codecs := []RowCodec{F32{}, F16{}, BF16{}, FP8{Format: E4M3}, FP8{Format: E5M2}, Int8{}, Affine{Bits: 4, Group: 32}, Affine{Bits: 2, Group: 32}}
	defer SetSIMD(active.Load() == simdKernels) // restored also when a check fails
	for _, simd := range []bool{true, false} {
		SetSIMD(simd)
		for _, c := range codecs {
			_, lossyInt := c.(Int8)
			if _, ok := c.(Affine); ok {
				lossyInt = true
			}
			if !RowsQueriesIndependent(c) {
				if !simd || !lossyInt {
					t.Errorf("simd %v, %s: not independent", simd, c.Name())
				}
				continue
			}
			rb := c.RowBytes(d)
			src := make([]byte, n*rb)
			x := make([]float32, d)
			for i := range n {
				for j := range x {
					x[j] = float32(rng.NormFloat64())
				}
				c.Encode(src[i*rb:(i+1)*rb], x)
			}
			const g = 9
			q := make([]float32, g*d)
			w := make([]float32, g*n)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			for i := range w {
				w[i] = rng.Float32()
			}
			tmp := make([]float32, ScratchFloats(d))
			all := make([]float32, g*n)
			DotRows(c, all, n, q, g, src, rb, n, tmp)
			accAll := make([]float32, g*d)
			AddRows(c, accAll, w, n, g, src, rb, n, tmp)
			for j := range g {
				one := make([]float32, n)
				DotRows(c, one, n, q[j*d:(j+1)*d], 1, src, rb, n, tmp)
				for i := range n {
					if math.Float32bits(one[i]) != math.Float32bits(all[j*n+i]) {
						t.Fatalf("simd %v, %s: query %d of %d, row %d: score %v, alone %v", simd, c.Name(), j, g, i, all[j*n+i], one[i])
					}
				}
				acc := make([]float32, d)
				AddRows(c, acc, w[j*n:(j+1)*n], n, 1, src, rb, n, tmp)
				for i := range d {
					if math.Float32bits(acc[i]) != math.Float32bits(accAll[j*d+i]) {
						t.Fatalf("simd %v, %s: query %d of %d, column %d: sum %v, alone %v", simd, c.Name(), j, g, i, accAll[j*d+i], acc[i])
					}
				}
				// The query's first v rows, alone and then followed by rows of weight 0.
				v := 1 + j*2
				short := make([]float32, d)
				AddRows(c, short, w[j*n:j*n+v], v, 1, src, rb, v, tmp)
				wz := make([]float32, n)
				copy(wz, w[j*n:j*n+v])
				long := make([]float32, d)
				AddRows(c, long, wz, n, 1, src, rb, n, tmp)
				for i := range d {
					if math.Float32bits(short[i]) != math.Float32bits(long[i]) {
						t.Fatalf("simd %v, %s: %d rows then %d of weight 0, column %d: %v, without them %v", simd, c.Name(), v, n-v, i, long[i], short[i])
					}
				}
				// The rows split into two calls at v: the same sums and scores as one call.
				split := make([]float32, d)
				AddRows(c, split, w[j*n:j*n+v], v, 1, src, rb, v, tmp)
				AddRows(c, split, w[j*n+v:(j+1)*n], n-v, 1, src[v*rb:], rb, n-v, tmp)
				DotRows(c, one, v, q[j*d:(j+1)*d], 1, src, rb, v, tmp)
				DotRows(c, one[v:], n-v, q[j*d:(j+1)*d], 1, src[v*rb:], rb, n-v, tmp)
				for i := range d {
					if math.Float32bits(split[i]) != math.Float32bits(acc[i]) {
						t.Fatalf("simd %v, %s: rows split at %d of %d, column %d: sum %v, in one call %v", simd, c.Name(), v, n, i, split[i], acc[i])
					}
				}
				for i := range n {
					if math.Float32bits(one[i]) != math.Float32bits(all[j*n+i]) {
						t.Fatalf("simd %v, %s: rows split at %d of %d, row %d: score %v, in one call %v", simd, c.Name(), v, n, i, one[i], all[j*n+i])
					}
				}
			}
		}
	}
}
