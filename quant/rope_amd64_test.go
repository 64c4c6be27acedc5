//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/cpufeat"
)

// TestDotRoPEFold1 compares the assembly kernel with its scalar twin, ropeFoldGo, for
// every code width, both pair layouts and 3-bit rows read with and without the byte
// past the last codes.
func TestDotRoPEFold1(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("no AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, bits := range []int{8, 4, 3, 2} {
		for _, tc := range []struct {
			d, n int
			neox bool
		}{{8, 1, false}, {16, 5, true}, {64, 32, false}, {64, 7, true}, {24, 3, false}, {32, 2, false}} {
			for _, past := range []bool{false, true} {
				name := fmt.Sprintf("bits=%d/d=%d/n=%d/neox=%v/past=%v", bits, tc.d, tc.n, tc.neox, past)
				d, n := tc.d, tc.n
				rope, err := NewRoPE(ropeFreqs(10000, d), tc.neox)
				if err != nil {
					t.Fatal(err)
				}
				rb := packedBytes(d, bits)
				buf := make([]byte, n*rb+1)
				for i := range buf {
					buf[i] = byte(r.Uint32())
				}
				codes := buf[: n*rb : n*rb]
				if past {
					codes = buf[:n*rb]
				}
				w := gaussRow(r, 4*d, 3)
				sp := rope.spread[7*2*d:]
				got, want := make([]float32, n), make([]float32, n)
				dotRoPEFold1(&got[0], &codes[0], &w[0], &sp[0], n, d, bits, past)
				ropeFoldGo(want, codes, w, sp, n, d, bits)
				for i := range n {
					var mag float64
					for c := range d {
						k := float64(codeAt(codes[i*rb:], c, bits))
						x := 32*(c/8) + c%8
						mag += math.Abs(float64(sp[i*2*d+c])*(k*float64(w[x])+float64(w[x+16]))) +
							math.Abs(float64(sp[i*2*d+d+c])*(k*float64(w[x+8])+float64(w[x+24])))
					}
					if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-6*mag {
						t.Fatalf("%s: row %d: %v, twin %v (±%.3g)", name, i, got[i], want[i], 1e-6*mag)
					}
				}
			}
		}
	}
}

// TestDotRoPEInt1 compares the integer pair kernel with its scalar twin, ropeIntGo,
// for 4-, 3- and 2-bit codes, and the twin with the float algebra (ropeFoldGo) within
// the bound ropeIntPrep's roundings allow.
func TestDotRoPEInt1(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("no AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, bits := range []int{4, 3, 2} {
		for _, tc := range []struct{ d, n, b0 int }{{32, 1, 0}, {64, 32, 0}, {64, 5, 900}, {128, 3, 17}} {
			name := fmt.Sprintf("bits=%d/d=%d/n=%d", bits, tc.d, tc.n)
			d, n := tc.d, tc.n
			rope, err := NewRoPE(ropeFreqs(10000, d), false)
			if err != nil {
				t.Fatal(err)
			}
			rb := packedBytes(d, bits)
			codes := make([]byte, n*rb+4)
			for i := range codes {
				codes[i] = byte(r.Uint32())
			}
			codes = codes[:n*rb]
			q, s, lo := gaussRow(r, d, 1), make([]float32, d), make([]float32, d)
			for c := range d {
				s[c] = 0.05 + float32(r.Float64())*0.3
				lo[c] = float32(r.NormFloat64())
				if c%7 == 0 {
					lo[c] += 3 // offset channels, as pre-RoPE keys have
				}
			}
			w := make([]float32, d/32*ropeIntGroup)
			if !ropeIntPrep(w, q, lo, s, bits) {
				t.Fatalf("%s: ropeIntPrep refused the block", name)
			}
			tab := rope.pairs[tc.b0*d:]
			got, want := make([]float32, n), make([]float32, n)
			dotRoPEInt1(&got[0], &codes[0], &w[0], &tab[0], n, d, bits)
			ropeIntGo(want, codes, w, tab, n, d, bits)
			// A row's score is the same bits scored alone (rows go four at a time).
			for i := range n {
				var one [1]float32
				dotRoPEInt1(&one[0], &codes[i*rb], &w[0], &tab[i*d], 1, d, bits)
				if math.Float32bits(one[0]) != math.Float32bits(got[i]) {
					t.Fatalf("%s: row %d alone %v, among %d rows %v", name, i, one[0], n, got[i])
				}
			}
			wf := make([]float32, 4*d)
			ropeFoldPrep(wf, q, lo, s, false)
			ref := make([]float32, n)
			ropeFoldGo(ref, codes, wf, rope.spread[tc.b0*2*d:], n, d, bits)
			for i := range n {
				var mag, bound float64
				for c := range d {
					k := float64(codeAt(codes[i*rb:], c, bits))
					mag += math.Abs(float64(q[c]) * (float64(lo[c]) + k*float64(s[c])))
				}
				for k := range d / 32 {
					dk := float64(w[ropeIntGroup*k+32]) * ropeQ14
					var sc float64
					for c := 32 * k; c < 32*k+32; c++ {
						sc += float64(codeAt(codes[i*rb:], c, bits))
					}
					bound += math.Sqrt2 * dk / 2 * (sc + 16)
				}
				if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-6*mag {
					t.Fatalf("%s: row %d: %v, twin %v", name, i, got[i], want[i])
				}
				if diff := math.Abs(float64(want[i] - ref[i])); diff > bound+1e-4*mag {
					t.Fatalf("%s: row %d: twin %v, float algebra %v (bound %.3g)", name, i, want[i], ref[i], bound+1e-4*mag)
				}
			}
		}
	}
}

// TestRopeIntPrepAsm compares the AVX2 preparation of the integer pair kernel with
// ropeIntPrep bit for bit, refusals included (zero terms too large for int16, a
// zero query, a NaN).
func TestRopeIntPrepAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("no AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		name   string
		d      int
		offset float32
		edit   func(q []float32)
		refuse bool
	}{
		{"d=32", 32, 3, nil, false},
		{"d=64", 64, 20, nil, false},
		{"d=256", 256, 1, nil, false},
		{"far zeros", 64, 5000, nil, true},
		{"zero query", 64, 1, func(q []float32) { clear(q) }, true},
		{"NaN", 64, 1, func(q []float32) { q[37] = float32(math.NaN()) }, true},
	} {
		for _, bits := range []int{4, 3, 2} {
			d := tc.d
			q, s, lo := gaussRow(r, d, 1), make([]float32, d), make([]float32, d)
			for c := range d {
				s[c] = 0.01 + float32(r.Float64())*0.3
				lo[c] = float32(r.NormFloat64())
				if c%5 == 0 {
					lo[c] += tc.offset
				}
			}
			if tc.edit != nil {
				tc.edit(q)
			}
			want, got := make([]float32, d/32*ropeIntGroup), make([]float32, d/32*ropeIntGroup)
			okWant := ropeIntPrep(want, q, lo, s, bits)
			okGot := ropeIntPrepAsm(got, q, lo, s, bits)
			if okWant == tc.refuse {
				t.Fatalf("%s bits=%d: ropeIntPrep reports %v", tc.name, bits, okWant)
			}
			if okGot != okWant {
				t.Fatalf("%s bits=%d: asm reports %v, ropeIntPrep %v", tc.name, bits, okGot, okWant)
			}
			if !okWant {
				continue
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s bits=%d: scratch word %d: %#x, want %#x", tc.name, bits, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestDotChannelRoPEPad checks that 3-bit blocks with nothing readable past their
// last codes (the last row read from a padded copy) score as those followed by other
// bytes, bit for bit.
func TestDotChannelRoPEPad(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const d, tt, blocks = 64, 32, 2
	c := Channel{Bits: 3}
	rope, err := NewRoPE(ropeFreqs(10000, d), false)
	if err != nil {
		t.Fatal(err)
	}
	bb := c.BlockBytes(tt, d)
	src := make([]byte, blocks*bb+8)
	for j := range blocks {
		c.Encode(src[j*bb:][:bb], gaussRow(r, tt*d, 1), tt, d)
	}
	q := gaussRow(r, d, 1)
	tmp, qr, lo, s := make([]float32, tt*d), make([]float32, d), make([]float32, d), make([]float32, d)
	for _, rg := range [][2]int{{0, blocks * tt}, {5, blocks*tt - 5}, {tt - 1, tt + 1}} {
		off, n := rg[0], rg[1]
		want, got := make([]float32, n), make([]float32, n)
		DotChannelRoPE(c, rope, 64, want, n, q, 1, src, bb, tt, off, n, d, tmp, qr, lo, s)
		exact := src[: blocks*bb : blocks*bb]
		DotChannelRoPE(c, rope, 64, got, n, q, 1, exact, bb, tt, off, n, d, tmp, qr, lo, s)
		for i := range n {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("off=%d n=%d token %d: %v without bytes past the block, %v with", off, n, i, got[i], want[i])
			}
		}
	}
}
