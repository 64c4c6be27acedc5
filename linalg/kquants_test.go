package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
)

// kQuantLayout is where a type of kquants.go keeps its binary16 super-block scales:
// d (multiplying the codes) and dmin (the minimums; -1: none), and its unit (bytes
// and values of one super-block, or of one block for IQ4_NL).
var kQuantLayout = map[gguf.TensorType]struct{ unitBytes, unitElems, d, dmin int }{
	gguf.TypeQ5_K:   {q5KBlockBytes, 256, 0, 2},
	gguf.TypeQ3_K:   {q3KBlockBytes, 256, 108, -1},
	gguf.TypeQ2_K:   {q2KBlockBytes, 256, 80, 82},
	gguf.TypeIQ4_NL: {iq4NLBlockBytes, 32, 0, -1},
	gguf.TypeIQ4_XS: {iq4XSBlockBytes, 256, 0, -1},
}

// TestKRowsMatchScalar: in every kernel set the rows kernel of each type of kquants.go
// gives each row the scalar kernel's sum within float32 rounding, for any super-block
// count, row stride and contents: random bytes (every code, scale and minimum; finite
// binary16 scales of either sign), and rows of the extreme codes (every byte 0x00 or
// 0xff but the scales, d = 1) against activations of ±127 and random ones, where a
// saturating or overflowing integer step would show.
func TestKRowsMatchScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 4))
	for typ, lay := range kQuantLayout {
		for _, units := range []int{1, 2, 3, 8, 11} {
			if lay.unitElems == 32 {
				units *= 8 // IQ4_NL: whole groups of 8 blocks, and not (the scalar path)
				units += r.IntN(2)
			}
			cols := units * lay.unitElems
			rb := units * lay.unitBytes
			stride := rb + 2*r.IntN(3)
			const rows = 9
			w := make([]byte, (rows-1)*stride+rb)
			for i := 0; i < rows; i++ {
				row := w[i*stride : i*stride+rb]
				fill := -1 // random bytes
				if i >= rows-2 {
					fill = 0xff * (i - (rows - 2)) // rows 7 and 8: all 0x00, all 0xff
				}
				for u := 0; u < units; u++ {
					blk := row[u*lay.unitBytes : (u+1)*lay.unitBytes]
					for j := range blk {
						if fill < 0 {
							blk[j] = byte(r.Uint32())
						} else {
							blk[j] = byte(fill)
						}
					}
					for _, o := range []int{lay.d, lay.dmin} {
						if o < 0 {
							continue
						}
						if fill < 0 {
							blk[o], blk[o+1] = byte(r.Uint32()), halfHigh(r)
						} else {
							blk[o], blk[o+1] = 0x00, 0x3c // 1
						}
					}
				}
			}
			for _, xs := range []string{"random", "+127", "-127"} {
				x := randVals(r, cols, 1)
				if xs != "random" {
					for i := range x {
						x[i] = 1 // every code +127
						if xs[0] == '-' {
							x[i] = -1
						}
					}
				}
				xq, xd, xsum := make([]int8, cols), make([]float32, cols/blockElems), make([]int32, cols/blockElems)
				scalarKernels.quantQ8(xq, xd, x)
				blockSums(xsum, xq)
				for _, k := range kernelModes(t) {
					got := nanSlice(rows)
					k.kRows[typ].rows(got, w, stride, xq, xd, xsum)
					for i := range got {
						row := w[i*stride : i*stride+rb]
						want := scalarKRows[typ].rows
						ref := nanSlice(1)
						want(ref, row, rb, xq, xd, xsum)
						bound := 1e-6 * kRowMagnitude(t, typ, row, cols, xq, xd)
						if d := math.Abs(float64(got[i]) - float64(ref[0])); !(d <= bound) {
							t.Errorf("%s %v units=%d x %s row %d: %v, scalar %v (off by %.3g, bound %.3g)",
								k.name, typ, units, xs, i, got[i], ref[0], d, bound)
						}
					}
				}
			}
		}
	}
}

// kRowMagnitude returns Σ|term| over the products of the row's values with the
// activations xq·xd, the scaled codes and the minimums counted apart (dequantized
// with dmin zeroed, then with d zeroed): a bound on what float32 rounding in any
// summation order can change, times the rounding error of one operation and the
// depth of the sums.
func kRowMagnitude(t *testing.T, typ gguf.TensorType, row []byte, cols int, xq []int8, xd []float32) float64 {
	t.Helper()
	lay := kQuantLayout[typ]
	zeroed := []int{-1} // the scale zeroed in each dequantization (-1: none)
	if lay.dmin >= 0 {
		zeroed = []int{lay.dmin, lay.d}
	}
	var mag float64
	vals := make([]float32, cols)
	for _, z := range zeroed {
		blk := append([]byte(nil), row...)
		if z >= 0 {
			for u := 0; u < len(blk)/lay.unitBytes; u++ {
				blk[u*lay.unitBytes+z], blk[u*lay.unitBytes+z+1] = 0, 0
			}
		}
		if err := gguf.Dequantize(typ, vals, blk); err != nil {
			t.Fatal(fmt.Errorf("dequantizing %v: %w", typ, err))
		}
		for i, v := range vals {
			mag += math.Abs(float64(v) * float64(xq[i]) * float64(xd[i/blockElems]))
		}
	}
	return mag
}
