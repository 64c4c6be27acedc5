//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ropeZBlock returns a block header of d channels (f16 scale and zero pairs) whose
// scales are drawn in [0.01, 0.31) and zeros around 0, every fifth channel moved by
// offset, and the header's values as widened.
func ropeZBlock(r *rand.Rand, d int, offset float32) (hdr []byte, lo, s []float32) {
	hdr, lo, s = make([]byte, 4*d), make([]float32, d), make([]float32, d)
	for c := range d {
		sc := 0.01 + float32(r.Float64())*0.3
		z := float32(r.NormFloat64())
		if c%5 == 0 {
			z += offset
		}
		putF16(hdr[4*c:], F32ToF16(sc))
		putF16(hdr[4*c+2:], F32ToF16(z))
		s[c], lo[c] = getF16(hdr[4*c:]), getF16(hdr[4*c+2:])
	}
	return hdr, lo, s
}

// TestRopeIntPrepZ compares the ZMM preparation (the query rotated back, then the
// int8 products, int16 zero terms and steps) with its scalar twin bit for bit,
// refusals included.
func TestRopeIntPrepZ(t *testing.T) {
	if !haveRoPEZ {
		t.Skip("no AVX-512 VBMI and VNNI")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		name   string
		d, pos int
		offset float32
		edit   func(q []float32)
		refuse bool
	}{
		{"d=64", 64, 96, 3, nil, false},
		{"d=128", 128, 4096, 20, nil, false},
		{"d=256", 256, 70000, 1, nil, false},
		{"far zeros", 64, 8, 5000, nil, true},
		{"zero query", 64, 0, 1, func(q []float32) { clear(q) }, true},
		{"NaN", 128, 0, 1, func(q []float32) { q[77] = float32(math.NaN()) }, true},
		{"Inf", 64, 0, 1, func(q []float32) { q[3] = float32(math.Inf(-1)) }, true},
	} {
		for _, bits := range []int{4, 3, 2} {
			d := tc.d
			rope, err := NewRoPE(ropeFreqs(10000, d), false)
			if err != nil {
				t.Fatal(err)
			}
			hdr, lo, s := ropeZBlock(r, d, tc.offset)
			q := gaussRow(r, d, 1)
			if tc.edit != nil {
				tc.edit(q)
			}
			sp := rope.backSpread(tc.pos)
			want, got := make([]float32, d/64*ropeIntChunk), make([]float32, d/64*ropeIntChunk)
			okWant := ropeIntPrepZGo(want, q, sp, make([]float32, d), make([]float32, d/32*ropeIntGroup), lo, s, bits)
			okGot := ropeIntPrepZ(&got[0], &q[0], &sp[0], &hdr[0], d, ropeZMax(bits))
			if okWant == tc.refuse {
				t.Fatalf("%s bits=%d: twin reports %v", tc.name, bits, okWant)
			}
			if okGot != okWant {
				t.Fatalf("%s bits=%d: asm reports %v, twin %v", tc.name, bits, okGot, okWant)
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

// TestDotRoPEIntZ compares the ZMM pair kernel with its scalar twin (bit for bit for
// d = 64) and with the AVX2 kernel's twin (the same integers in another layout), for
// row counts around the kernel's eight, and checks that a row scores the same bits
// alone.
func TestDotRoPEIntZ(t *testing.T) {
	if !haveRoPEZ {
		t.Skip("no AVX-512 VBMI and VNNI")
	}
	r := rand.New(rand.NewPCG(23, 24))
	for _, bits := range []int{4, 3, 2} {
		for _, tc := range []struct{ d, n, b0 int }{{64, 32, 0}, {64, 1, 3}, {64, 7, 1017}, {64, 13, 5}, {128, 9, 17}, {192, 16, 0}, {256, 24, 1000}} {
			name := fmt.Sprintf("bits=%d/d=%d/n=%d/b0=%d", bits, tc.d, tc.n, tc.b0)
			d, n := tc.d, tc.n
			rope, err := NewRoPE(ropeFreqs(10000, d), false)
			if err != nil {
				t.Fatal(err)
			}
			rb := packedBytes(d, bits)
			codes := make([]byte, n*rb)
			for i := range codes {
				codes[i] = byte(r.Uint32())
			}
			_, lo, s := ropeZBlock(r, d, 4)
			q := gaussRow(r, d, 1)
			g := make([]float32, d/32*ropeIntGroup)
			if !ropeIntPrep(g, q, lo, s, bits) {
				t.Fatalf("%s: ropeIntPrep refused the block", name)
			}
			w := make([]float32, d/64*ropeIntChunk)
			for m := range d / 64 {
				ropeChunkZ(w[m*ropeIntChunk:][:ropeIntChunk], g[m*ropeIntChunk:][:ropeIntChunk], 5)
			}
			got, want, grp := make([]float32, n), make([]float32, n), make([]float32, n)
			ropeRowsZ(got, codes, w, rope.pairsZ[tc.b0*d:], n, d, bits)
			ropeIntGoZ(want, codes, w, rope.pairsZ[tc.b0*d:], n, d, bits)
			ropeIntGo(grp, codes, g, rope.pairs[tc.b0*d:], n, d, bits)
			for i := range n {
				var one [1]float32
				ropeRowsZ(one[:], codes[i*rb:(i+1)*rb], w, rope.pairsZ[(tc.b0+i)*d:], 1, d, bits)
				if math.Float32bits(one[0]) != math.Float32bits(got[i]) {
					t.Fatalf("%s: row %d alone %v, among %d rows %v", name, i, one[0], n, got[i])
				}
				var mag float64
				for c := range d {
					mag += math.Abs(float64(q[c]) * (float64(lo[c]) + float64(codeAt(codes[i*rb:], c, bits))*float64(s[c])))
				}
				if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-6*mag || d == 64 && got[i] != want[i] {
					t.Fatalf("%s: row %d: %v, twin %v", name, i, got[i], want[i])
				}
				if diff := math.Abs(float64(want[i] - grp[i])); diff > 1e-6*mag {
					t.Fatalf("%s: row %d: twin %v, AVX2 kernel's twin %v", name, i, want[i], grp[i])
				}
			}
		}
	}
}

// TestRoPESpanZ checks DotChannelRoPE's one-query run through ropeSpanZ against the
// blocks scored one by one (ropeDotAsm), bit for bit, with a block in the middle
// whose zero terms do not fit the pair kernel (it goes to ropeDotAsm's other
// kernels), runs starting and ending inside blocks, and fewer than eight rows.
func TestRoPESpanZ(t *testing.T) {
	if !haveRoPEZ || active.Load() != simdKernels {
		t.Skip("no AVX-512 VBMI and VNNI")
	}
	r := rand.New(rand.NewPCG(25, 26))
	for _, bits := range []int{4, 3, 2} {
		for _, d := range []int{64, 128} {
			c := Channel{Bits: bits}
			const tt, blocks, pos = 32, 4, 1000
			rope, err := NewRoPE(ropeFreqs(10000, d), false)
			if err != nil {
				t.Fatal(err)
			}
			bb := c.BlockBytes(tt, d)
			src := make([]byte, blocks*bb)
			for j := range blocks {
				keys := gaussRow(r, tt*d, 1)
				if j == 2 {
					for i := range keys {
						if i%d%5 == 0 {
							keys[i] += 30000 // far zeros: the float kernel
						}
					}
				}
				c.Encode(src[j*bb:][:bb], keys, tt, d)
			}
			q := gaussRow(r, d, 1)
			tmp, qr, lo, s := make([]float32, tt*d), make([]float32, d), make([]float32, d), make([]float32, d)
			for _, rg := range [][2]int{{0, blocks * tt}, {5, blocks*tt - 9}, {tt - 3, 4}, {tt - 2, 2*tt + 9}} {
				off, n := rg[0], rg[1]
				got := make([]float32, n)
				DotChannelRoPE(c, rope, pos, got, n, q, 1, src, bb, tt, off, n, d, tmp, qr, lo, s)
				want := make([]float32, n)
				for j := off / tt; j*tt < off+n; j++ {
					b0, b1 := max(0, off-j*tt), min(tt, off+n-j*tt)
					if !ropeDotAsm(c, rope, want[j*tt+b0-off:], q, rope.backSpread(pos+j*tt), src[j*bb:][:bb], tt, d, b0, b1, qr, lo, s, tmp) {
						t.Fatalf("bits=%d d=%d: ropeDotAsm refused block %d", bits, d, j)
					}
				}
				for i := range n {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("bits=%d d=%d off=%d n=%d: token %d: %v, block by block %v", bits, d, off, n, i, got[i], want[i])
					}
				}
			}
			if w := make([]float32, d/64*ropeIntChunk); ropeIntPrepZ(&w[0], &q[0], &rope.backSpread(pos + 2*tt)[0], &src[2*bb], d, ropeZMax(bits)) {
				t.Fatalf("bits=%d d=%d: the far block was taken by the pair kernel", bits, d)
			}
		}
	}
}
