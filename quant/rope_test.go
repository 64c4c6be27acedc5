package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refRotate rotates x (one head vector) to position pos in float64 with angles
// formed directly, as a model's RoPE does: the reference of RoPE's tables.
func refRotate(x []float32, freqs []float64, neox bool, pos int) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	h := len(freqs)
	for j, f := range freqs {
		s, c := math.Sincos(float64(pos) * f)
		i0, i1 := 2*j, 2*j+1
		if neox {
			i0, i1 = j, j+h
		}
		a, b := out[i0], out[i1]
		out[i0], out[i1] = a*c-b*s, a*s+b*c
	}
	return out
}

func ropeFreqs(base float64, dims int) []float64 {
	f := make([]float64, dims/2)
	for j := range f {
		f[j] = math.Pow(base, -2*float64(j)/float64(dims))
	}
	return f
}

func TestRoPEAngles(t *testing.T) {
	r, err := NewRoPE(ropeFreqs(10000, 64), false)
	if err != nil {
		t.Fatal(err)
	}
	cos, sin := make([]float32, 32), make([]float32, 32)
	for _, pos := range []int{0, 1, 31, 1023, 1024, 1025, 4097, 32767, 131071, -5, -70000} {
		r.Angles(cos, sin, pos)
		for j, f := range r.freqs {
			s, c := math.Sincos(float64(pos) * f)
			if math.Abs(float64(cos[j])-c) > 3e-7 || math.Abs(float64(sin[j])-s) > 3e-7 {
				t.Fatalf("pos %d pair %d: cos, sin = %v, %v, want %v, %v", pos, j, cos[j], sin[j], c, s)
			}
		}
	}
	if _, err := NewRoPE(nil, false); err == nil {
		t.Error("NewRoPE(nil): no error")
	}
	if _, err := NewRoPE([]float64{math.NaN()}, false); err == nil {
		t.Error("NewRoPE(NaN): no error")
	}
}

// TestDotChannelRoPE is the conformance test of pre-RoPE key scoring: for every
// channel codec width, pair layout and shape, the scores equal q · R(p)·Decode(block)
// computed in float64 with angles formed directly, within float32 rounding of the
// terms (scaled by the magnitudes summed), for both kernel sets.
func TestDotChannelRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	def := active.Load() == simdKernels
	defer SetSIMD(def)
	for _, simd := range []bool{false, true} {
		SetSIMD(simd)
		for _, bits := range []int{8, 4, 3, 2} {
			c := Channel{Bits: bits}
			for _, tc := range []struct {
				d, dims, tt int
				neox        bool
			}{{64, 64, 32, false}, {64, 64, 16, true}, {16, 8, 8, false}, {128, 96, 32, true}, {8, 8, 5, false}, {8, 8, 5, true}, {24, 24, 7, true}} {
				rope, err := NewRoPE(ropeFreqs(10000, tc.dims), tc.neox)
				if err != nil {
					t.Fatal(err)
				}
				d, tt := tc.d, tc.tt
				const blocks = 3
				stride := c.BlockBytes(tt, d) + 5
				src := make([]byte, blocks*stride)
				keys := make([]float32, blocks*tt*d)
				for i := range keys {
					keys[i] = float32(r.NormFloat64())
					if i%d%7 == 0 {
						keys[i] += 20 // fixed-channel offsets, as pre-RoPE keys have
					}
				}
				dec := make([]float32, blocks*tt*d)
				for j := range blocks {
					c.Encode(src[j*stride:][:c.BlockBytes(tt, d)], keys[j*tt*d:][:tt*d], tt, d)
					c.Decode(dec[j*tt*d:][:tt*d], src[j*stride:], tt, d)
				}
				for _, g := range []int{1, 4, 5} {
					q := gaussRow(r, g*d, 1)
					for _, pos := range []int{0, 96, 70000 - 7} {
						for _, rg := range [][2]int{{0, blocks * tt}, {3, blocks*tt - 3}, {tt - 1, 2}, {1, 1}} {
							off, n := rg[0], rg[1]
							if off >= tt {
								continue
							}
							ld := n + 2
							scores := make([]float32, g*ld)
							tmp, qr, lo, s := make([]float32, tt*d), make([]float32, g*d), make([]float32, d), make([]float32, d)
							DotChannelRoPE(c, rope, pos, scores, ld, q, g, src, stride, tt, off, n, d, tmp, qr, lo, s)
							for x := range g {
								qx := q[x*d : (x+1)*d]
								for i := range n {
									tok := off + i
									k := refRotate(dec[tok*d:(tok+1)*d], rope.freqs, tc.neox, pos+tok)
									var want, mag float64
									for ch := range d {
										want += float64(qx[ch]) * k[ch]
										mag += math.Abs(float64(qx[ch]) * k[ch])
									}
									got := float64(scores[x*ld+i])
									tol := 1e-5*mag + 1e-6
									if simd && g == 1 && bits <= 4 && d%32 == 0 && !tc.neox && tc.dims == d {
										// The integer pair kernel: int8 query products, whose
										// step is at most |query pair|·max scale/127 (ropeIntPrep).
										tol = 1e-4*mag + ropeIntTol(qx, src[tok/tt*stride:], d, bits)
									}
									if math.Abs(got-want) > tol {
										t.Fatalf("simd=%v kivi%d d=%d dims=%d neox=%v t=%d g=%d pos=%d off=%d n=%d: query %d token %d: %v, want %v (±%.3g)",
											simd, bits, d, tc.dims, tc.neox, tt, g, pos, off, n, x, i, got, want, tol)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// ropeIntTol bounds the integer pair kernel's error for query q against a Channel
// block (header at block): per group of 32 channels, √2·(D/2)·(Σ codes + 16) with
// the step D at most the largest pair norm of q times the largest scale over 127,
// and the codes at most 2^bits − 1.
func ropeIntTol(q []float32, block []byte, d, bits int) float64 {
	var qn, smax float64
	for c := 0; c+1 < d; c += 2 {
		qn = max(qn, math.Hypot(float64(q[c]), float64(q[c+1])))
	}
	for c := range d {
		smax = max(smax, float64(getF16(block[4*c:])))
	}
	return math.Sqrt2 / 2 * qn * smax / 127 * float64(d*(1<<bits-1)+16*d/32)
}

// TestRotateRows checks the SIMD set's row kernel against rotateRowsGo, bit for bit,
// for both pair layouts and rotated widths short of the row. (The scalar set's row
// kernel is rotateRowsGo itself, so it runs on the SIMD set whichever set is active.)
func TestRotateRows(t *testing.T) {
	if simdKernels == nil {
		t.Skip("no SIMD kernels: the row kernel is rotateRowsGo")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		d, dims int
		neox    bool
	}{{64, 64, false}, {64, 64, true}, {128, 128, false}, {128, 64, true}, {80, 48, false}, {8, 8, false}, {6, 4, true}, {256, 256, true}} {
		rope, err := NewRoPE(ropeFreqs(500000, tc.dims), tc.neox)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 32} {
			x := gaussRow(r, n*tc.d, 3)
			want := append([]float32(nil), x...)
			rotateRowsGo(want, n, tc.d, rope.spread[5*2*tc.dims:], tc.dims, tc.neox)
			simdKernels.ropeRows(x, n, tc.d, rope.spread[5*2*tc.dims:], tc.dims, tc.neox)
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("d=%d dims=%d neox=%v n=%d: value %d = %v, want %v", tc.d, tc.dims, tc.neox, n, i, x[i], want[i])
				}
			}
		}
	}
}

// BenchmarkDotChannelRoPE scores one query against 128 tokens of KIVI keys of 64
// channels in blocks of 32 (a cache block of llama-134m's shape), stored before RoPE
// (DotChannelRoPE) and after (DotChannelSpan), per bit width.
func BenchmarkDotChannelRoPE(b *testing.B) {
	const d, tt, n, g = 64, 32, 128, 1
	r := rand.New(rand.NewPCG(1, 2))
	rope, err := NewRoPE(ropeFreqs(10000, d), false)
	if err != nil {
		b.Fatal(err)
	}
	for _, bits := range []int{4, 3, 2} {
		c := Channel{Bits: bits}
		bb := c.BlockBytes(tt, d)
		src := make([]byte, n/tt*bb)
		for j := range n / tt {
			c.Encode(src[j*bb:][:bb], gaussRow(r, tt*d, 1), tt, d)
		}
		q := gaussRow(r, g*d, 1)
		scores := make([]float32, g*n)
		tmp, qr, lo, s := make([]float32, max(tt*d, ScratchFloats(d))), make([]float32, g*d), make([]float32, d), make([]float32, d)
		b.Run(fmt.Sprintf("kivi%d/pre", bits), func(b *testing.B) {
			for b.Loop() {
				DotChannelRoPE(c, rope, 4096, scores, n, q, g, src, bb, tt, 0, n, d, tmp, qr, lo, s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
		b.Run(fmt.Sprintf("kivi%d/post", bits), func(b *testing.B) {
			for b.Loop() {
				DotChannelSpan(c, scores, n, q, g, src, bb, tt, 0, n, d, tmp, lo, s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}

// TestRoPEBackSpread checks the kept inverse rotations of block starts against
// Angles and RotatePairs, bit for bit, across the table's growth, and positions off
// the spacing, for both pair layouts and the active row kernel.
func TestRoPEBackSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, neox := range []bool{false, true} {
		rope, err := NewRoPE(ropeFreqs(10000, 64), neox)
		if err != nil {
			t.Fatal(err)
		}
		h := rope.Dims() / 2
		cos, sin := make([]float32, h), make([]float32, h)
		for _, p := range []int{0, 32, 96, 4096, 32, 70000 - 16, 70000 - 7, 3 * ropeBack * 1000, ropeBackMax * ropeBack, ropeBackMax*ropeBack - ropeBack, -64} {
			q := gaussRow(r, 2*h, 1)
			want := append([]float32(nil), q...)
			rope.Angles(cos, sin, -p)
			RotatePairs(want, cos, sin, neox)
			active.Load().ropeRows(q, 1, 2*h, rope.backSpread(p), 2*h, neox)
			for c := range q {
				if math.Float32bits(q[c]) != math.Float32bits(want[c]) {
					t.Fatalf("neox=%v position %d value %d: %v, RotatePairs %v", neox, p, c, q[c], want[c])
				}
			}
		}
	}
}

// TestRotateHeads: RotateHeads gives each head RotatePairs's bits, under every
// kernel set, for both pair layouts, rotated widths the SIMD kernel takes and not
// (and one too wide for its buffer), all, part or none of each head, values and angles
// with signed zeros among them; and it allocates nothing.
func TestRotateHeads(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	prev := active.Load()
	defer active.Store(prev)
	vals := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			switch r.IntN(10) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(math.Copysign(0, -1))
			default:
				x[i] = float32(r.NormFloat64() * 3)
			}
		}
		return x
	}
	for _, set := range kernelSets() {
		active.Store(set)
		for _, neox := range []bool{false, true} {
			for _, c := range [][2]int{{64, 64}, {64, 32}, {128, 128}, {80, 80}, {24, 24}, {6, 6}, {64, 48}, {320, 320}, {64, 0}} {
				d, dims := c[0], c[1]
				for _, n := range []int{1, 3, 12} {
					name := fmt.Sprintf("%s/neox=%v/d=%d/dims=%d/n=%d", set.name, neox, d, dims, n)
					cos, sin := vals(dims/2), vals(dims/2)
					got := vals(n * d)
					want := append([]float32(nil), got...)
					for i := range n {
						RotatePairs(want[i*d:(i+1)*d], cos, sin, neox)
					}
					RotateHeads(got, n, d, cos, sin, neox)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: value %d = %v, RotatePairs %v", name, i, got[i], want[i])
						}
					}
					if a := testing.AllocsPerRun(10, func() { RotateHeads(got, n, d, cos, sin, neox) }); a != 0 {
						t.Fatalf("%s: %v allocations", name, a)
					}
				}
			}
		}
	}
}

// BenchmarkRotateHeads rotates a token's 12 query heads of 64 values (llama-134m) by
// one position's angles: RotateHeads against RotatePairs per head.
//
//	go test ./quant -run '^$' -bench RotateHeads
func BenchmarkRotateHeads(b *testing.B) {
	const heads, d = 12, 64
	x := make([]float32, heads*d)
	cos, sin := make([]float32, d/2), make([]float32, d/2)
	for j := range cos {
		s, c := math.Sincos(float64(j) / 7)
		sin[j], cos[j] = float32(s), float32(c)
	}
	b.Run("pairs", func(b *testing.B) {
		for range b.N {
			for h := range heads {
				RotatePairs(x[h*d:(h+1)*d], cos, sin, false)
			}
		}
	})
	b.Run("heads", func(b *testing.B) {
		for range b.N {
			RotateHeads(x, heads, d, cos, sin, false)
		}
	})
}
