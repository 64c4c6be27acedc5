package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// affineEncodeAll encodes src with c under every kernel set and fails unless each
// writes the scalar set's bytes and nothing past the row.
func affineEncodeAll(t *testing.T, c Affine, src []float32) {
	t.Helper()
	prev := active.Load()
	defer active.Store(prev)
	rb := c.RowBytes(len(src))
	var want []byte
	for _, k := range kernelSets() {
		active.Store(k)
		dst := make([]byte, rb+1)
		dst[rb] = 0xA5 // must stay
		c.Encode(dst[:rb], src)
		if dst[rb] != 0xA5 {
			t.Fatalf("%s %s, %d values: wrote past the row", k.name, c.Name(), len(src))
		}
		if want == nil {
			want = dst[:rb]
			continue
		}
		if !bytes.Equal(dst[:rb], want) {
			for i := range want {
				if dst[i] != want[i] {
					t.Fatalf("%s %s, %d values: byte %d is %#02x, the scalar encoder's %#02x (row %v)", k.name, c.Name(), len(src), i, dst[i], want[i], src)
				}
			}
		}
	}
}

// TestAffineEncodeKernels: every kernel set's Affine encoding equals the scalar one
// byte for byte, for every width, groups of 8 to 128 values and whole rows, rows of
// lengths that leave every tail, and values that take every branch of groupRange and
// quantCode: NaN, ±Inf, ±0 as extremes, beyond ±65504, subnormal, constant groups.
func TestAffineEncodeKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negz := float32(math.Copysign(0, -1))
	specials := []float32{nan, inf, -inf, 0, negz, 65504, -65504, 70000, -1e9, 1e-40, -1e-40, 1, -1}
	kinds := []func(i int) float32{
		func(int) float32 { return float32(r.NormFloat64()) },
		func(int) float32 { return float32(r.NormFloat64() * 1000) },
		func(int) float32 { return float32(math.Abs(r.NormFloat64())) }, // non-negative
		func(int) float32 { return 3.5 },                                // constant: zero range
		func(int) float32 { return 0 },
		func(i int) float32 { // a special here and there
			if r.IntN(6) == 0 {
				return specials[r.IntN(len(specials))]
			}
			return float32(r.NormFloat64())
		},
		func(int) float32 { return specials[r.IntN(len(specials))] },
		func(i int) float32 { // +0 and −0 at the bottom of a non-negative group
			if i%4 < 2 {
				return []float32{0, negz}[i%2]
			}
			return float32(i % 5)
		},
		func(i int) float32 { // −0 and +0 at the top of a non-positive group
			if i%4 < 2 {
				return []float32{negz, 0}[i%2]
			}
			return -float32(i % 5)
		},
		func(i int) float32 { return -float32(i % 7) },
		func(i int) float32 { return nan },
	}
	for _, bits := range []int{8, 4, 3, 2} {
		for _, g := range []int{0, 8, 16, 32, 64, 128} {
			c := Affine{Bits: bits, Group: g}
			for _, d := range []int{1, 7, 8, 9, 16, 24, 31, 32, 33, 40, 64, 100, 128, 136} {
				for _, kind := range kinds {
					for rep := range 3 {
						src := make([]float32, d)
						for i := range src {
							src[i] = kind(i + rep)
						}
						affineEncodeAll(t, c, src)
					}
				}
			}
		}
	}
}

// FuzzAffineEncodeKernels: fuzzed rows (raw float32 bits or small values) encode to
// the same bytes under every kernel set, for each width and group size.
func FuzzAffineEncodeKernels(f *testing.F) {
	f.Add([]byte{1, 2, 3, 250, 128, 127, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8}, uint8(0), false)
	f.Add([]byte{0, 0, 128, 127, 0, 0, 192, 127, 0, 0, 128, 255, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(4), true)
	groups := []int{0, 8, 16, 32, 64}
	f.Fuzz(func(t *testing.T, data []byte, sel uint8, raw bool) {
		src := fuzzFloats(data, raw)
		if len(src) == 0 {
			return
		}
		bits := []int{8, 4, 3, 2}[int(sel)%4]
		g := groups[int(sel)/4%len(groups)]
		affineEncodeAll(t, Affine{Bits: bits, Group: g}, src)
	})
}
