package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// addChanRowsGo is the scalar twin of addChanRows and of each query of addChanRows4:
// per row in order, each value decoded as code·s + lo (a multiply and an add) and
// added times the row's weight with one fused multiply-add.
func addChanRowsGo(acc, w []float32, codes []byte, n, rb int, s, lo []float32, d, bits int) {
	row := make([]float32, d)
	for i := range n {
		decodeCodes(row, 0, 1, codes[i*rb:][:rb], bits)
		for c := range d {
			v := row[c]*s[c] + lo[c]
			acc[c] = float32(math.FMA(float64(w[i]), float64(v), float64(acc[c])))
		}
	}
}

// TestAddChanRows checks addChanRows and addChanRows4 against their scalar twin bit
// for bit, over 8-, 4- and 2-bit codes, head sizes with and without whole groups of
// 32 channels and rows up to a block of 64; and that the SIMD AddRows gives the
// sums of the SIMD tile path (DecodeBlockRows, then MultiAxpy), bit for bit.
func TestAddChanRows(t *testing.T) {
	if !haveF16C || simdKernels == nil {
		t.Skip("no F16C: the kernels do not run")
	}
	prev := active.Load()
	defer active.Store(prev)
	active.Store(simdKernels)
	r := rand.New(rand.NewPCG(51, 52))
	for _, bits := range []int{8, 4, 2} {
		for _, d := range []int{8, 24, 32, 64, 72, 128} {
			for _, n := range []int{1, 3, 32, 64} {
				rb := packedBytes(d, bits)
				codes := make([]byte, n*rb+rb) // a row past the last, which no kernel may add
				for i := range codes {
					codes[i] = byte(r.Uint32())
				}
				s, lo := gaussRow(r, d, 0.1), gaussRow(r, d, 2)
				w := gaussRow(r, 4*n, 1)
				a0 := gaussRow(r, 4*d, 1)
				want := append([]float32(nil), a0...)
				for q := range 4 {
					addChanRowsGo(want[q*d:(q+1)*d], w[q*n:(q+1)*n], codes, n, rb, s, lo, d, bits)
				}
				one := append([]float32(nil), a0...)
				for q := range 4 {
					addChanRows(&one[q*d], &w[q*n], &codes[0], n, uintptr(rb), &s[0], &lo[0], d, bits)
				}
				four := append([]float32(nil), a0...)
				addChanRows4(&four[0], uintptr(4*d), &w[0], uintptr(4*n), &codes[0], n, uintptr(rb), &s[0], &lo[0], d, bits)
				for i := range want {
					if math.Float32bits(one[i]) != math.Float32bits(want[i]) || math.Float32bits(four[i]) != math.Float32bits(want[i]) {
						t.Fatalf("bits %d d %d n %d: query %d channel %d: one query %v, four %v, twin %v", bits, d, n, i/d, i%d, one[i], four[i], want[i])
					}
				}
			}
		}
	}
	// The fused AddRows against the tile path, on encoded blocks.
	for _, bits := range []int{4, 2} {
		c := ChannelValues{Bits: bits}
		for _, d := range []int{64, 128} {
			const tt, g = 32, 5
			block := make([]byte, c.BlockBytes(tt, d))
			c.Encode(block, gaussRow(r, tt*d, 1), tt, d)
			w := gaussRow(r, g*tt, 1)
			a0 := gaussRow(r, g*d, 1)
			fused := append([]float32(nil), a0...)
			c.AddRows(fused, w, tt, g, block, tt, d, 3, tt, make([]float32, ChannelAddFloats(d)))
			tiled := append([]float32(nil), a0...)
			tile, lo, s := make([]float32, tt*d), make([]float32, d), make([]float32, d)
			DecodeBlockRows(c.layout(), tile, block, tt, d, 3, tt, lo, s)
			MultiAxpy(tiled, w, tt, g, tile, d, tt-3, d)
			for i := range fused {
				if math.Float32bits(fused[i]) != math.Float32bits(tiled[i]) {
					t.Fatalf("%s d %d: query %d channel %d: fused %v, tiles %v", c.Name(), d, i/d, i%d, fused[i], tiled[i])
				}
			}
		}
	}
}
