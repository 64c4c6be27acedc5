package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/kernelsel"
)

// kernelSets returns every batched kernel set this build and CPU can run, the scalar
// reference first.
func kernelSets() []*kernelSet {
	ks := []*kernelSet{scalarKernels}
	if simdKernels != nil {
		ks = append(ks, simdKernels)
	}
	return ks
}

// withKernels runs fn with each kernel set active in turn, restoring the previous one;
// the SIMD set also without its ZMM kernels where the CPU has them (zmmModes).
func withKernels(t *testing.T, fn func(t *testing.T)) {
	prev := active.Load()
	defer active.Store(prev)
	defer setZMM(setZMM(true))
	for _, k := range kernelSets() {
		active.Store(k)
		if k != simdKernels {
			t.Run(k.name, fn)
			continue
		}
		for _, z := range zmmModes() {
			setZMM(z)
			name := k.name
			if !z {
				name += "-ymm"
			}
			t.Run(name, fn)
		}
	}
}

// sameBits reports whether a and b are the same float32, any NaN matching any NaN.
func sameBits(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// TestDecodeRowsMatchesDecode checks DecodeRows against per-row Decode, bit for bit,
// over every codec, row kind and length, with a row stride larger than the row and
// guard values after the output; with the F16C kernels on and off (off, F16, Int8 and
// FP8 rows take the scalar decoders).
func TestDecodeRowsMatchesDecode(t *testing.T) {
	defer setF16C(setF16C(true))
	for _, f16c := range f16cModes() {
		setF16C(f16c)
		t.Run(fmt.Sprintf("f16c=%v", f16c), func(t *testing.T) { withKernels(t, testDecodeRowsMatchesDecode) })
	}
}

func testDecodeRowsMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range allRowCodecs() {
		for _, d := range testLengths {
			for _, kind := range rowKinds {
				const n = 3
				rb := c.RowBytes(d)
				stride := rb + 5
				src := make([]byte, (n-1)*stride+rb)
				want := make([]float32, n*d)
				for i := range n {
					c.Encode(src[i*stride:][:rb], kind.gen(r, d))
					c.Decode(want[i*d:(i+1)*d], src[i*stride:][:rb])
				}
				got := make([]float32, n*d+4)
				for i := n * d; i < len(got); i++ {
					got[i] = 12345
				}
				DecodeRows(c, got[:n*d], src, stride, n, d)
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("%s d=%d %s: element %d = %v (%#x), Decode gives %v (%#x)", c.Name(), d, kind.name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
				for i := n * d; i < len(got); i++ {
					if got[i] != 12345 {
						t.Fatalf("%s d=%d: wrote past the output at %d", c.Name(), d, i)
					}
				}
			}
		}
	}
}

// TestDecodeBlockMatchesDecode checks DecodeBlock against Channel.Decode bit for bit.
func TestDecodeBlockMatchesDecode(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, bits := range []int{8, 4, 3, 2} {
			c := Channel{Bits: bits}
			for _, tt := range []int{1, 5, 32} {
				for _, d := range testLengths {
					for _, kind := range rowKinds {
						src := make([]float32, 0, tt*d)
						for range tt {
							src = append(src, kind.gen(r, d)...)
						}
						enc := make([]byte, c.BlockBytes(tt, d))
						c.Encode(enc, src, tt, d)
						want := make([]float32, tt*d)
						c.Decode(want, enc, tt, d)
						got := make([]float32, tt*d)
						lo, s := make([]float32, d), make([]float32, d)
						DecodeBlock(c, got, enc, tt, d, lo, s)
						for i := range want {
							if !sameBits(got[i], want[i]) {
								t.Fatalf("%s t=%d d=%d %s: element %d = %v, Decode gives %v", c.Name(), tt, d, kind.name, i, got[i], want[i])
							}
						}
						// Row ranges, through Channel and through the fallback.
						for _, cc := range []ChannelCodec{c, plainChannel{c}} {
							for _, rg := range [][2]int{{0, 1}, {tt / 2, tt}, {tt - 1, tt}} {
								if rg[0] >= rg[1] {
									continue
								}
								part := make([]float32, tt*d)
								DecodeBlockRows(cc, part, enc, tt, d, rg[0], rg[1], lo, s)
								for i := range (rg[1] - rg[0]) * d {
									if w := want[rg[0]*d+i]; !sameBits(part[i], w) {
										t.Fatalf("%s t=%d d=%d rows %v: element %d = %v, Decode gives %v", cc.Name(), tt, d, rg, i, part[i], w)
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestMultiDotAxpy checks MultiDot and MultiAxpy against float64 references over
// query counts, row counts and head sizes around the vector widths, with leading
// dimensions and row strides larger than needed and guard values around the outputs.
func TestMultiDotAxpy(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, g := range []int{1, 2, 3, 4, 5, 7, 8} {
			for _, n := range []int{1, 2, 7, 8, 9, 16, 33} {
				for _, d := range []int{1, 7, 8, 16, 24, 64, 65, 128} {
					t.Run(fmt.Sprintf("g=%d/n=%d/d=%d", g, n, d), func(t *testing.T) {
						ld, xs := n+3, d+2
						q := gaussRow(r, g*d, 1)
						x := gaussRow(r, (n-1)*xs+d, 1)
						w := gaussRow(r, (g-1)*ld+n, 1)
						const guard = -777
						scores := constRow((g-1)*ld+n+8, guard)
						MultiDot(scores, ld, q, g, x, xs, n, d)
						acc0 := gaussRow(r, g*d, 1)
						acc := append(append([]float32(nil), acc0...), guard, guard)
						MultiAxpy(acc[:g*d], w, ld, g, x, xs, n, d)
						for j := range g {
							for i := range ld {
								got := scores[j*ld+i]
								if i >= n {
									if got != guard && j*ld+i < len(scores) {
										t.Fatalf("score (%d,%d) outside the output written: %v", j, i, got)
									}
									continue
								}
								var want, mag float64
								for c := range d {
									p := float64(q[j*d+c]) * float64(x[i*xs+c])
									want += p
									mag += math.Abs(p)
								}
								if math.Abs(float64(got)-want) > 1e-5*mag+1e-6 {
									t.Fatalf("score (%d,%d) = %v, want %v", j, i, got, want)
								}
							}
							for c := range d {
								want, mag := float64(acc0[j*d+c]), math.Abs(float64(acc0[j*d+c]))
								for i := range n {
									p := float64(w[j*ld+i]) * float64(x[i*xs+c])
									want += p
									mag += math.Abs(p)
								}
								if got := acc[j*d+c]; math.Abs(float64(got)-want) > 1e-5*mag+1e-6 {
									t.Fatalf("acc (%d,%d) = %v, want %v", j, c, got, want)
								}
							}
						}
						for i := (g-1)*ld + n; i < len(scores); i++ {
							if scores[i] != guard {
								t.Fatalf("score %d past the output written: %v", i, scores[i])
							}
						}
						if acc[g*d] != guard || acc[g*d+1] != guard {
							t.Fatal("accumulator written past g·d")
						}
					})
				}
			}
		}
	})
}

// TestKernelSwitch checks SetSIMD and KernelName agree.
func TestKernelSwitch(t *testing.T) {
	prev := active.Load()
	defer active.Store(prev)
	if SetSIMD(false) || KernelName() != "scalar" {
		t.Fatalf("SetSIMD(false): kernel %q", KernelName())
	}
	on := SetSIMD(true)
	if on != (simdKernels != nil) {
		t.Fatalf("SetSIMD(true) = %v with simd kernels %v", on, simdKernels != nil)
	}
	if on && KernelName() == "scalar" {
		t.Fatal("SIMD on but kernel named scalar")
	}
	if kernelsel.Initial(scalarKernels, simdKernels, "1") != scalarKernels {
		t.Fatal("KVQ_NOSIMD=1 does not select the scalar kernels")
	}
}

// TestF16Bits checks the integer binary16 widening against F16ToF32 for all 65536
// values.
func TestF16Bits(t *testing.T) {
	for h := range 1 << 16 {
		b := []byte{byte(h), byte(h >> 8)}
		if got, want := f16Bits(b), math.Float32bits(F16ToF32(uint16(h))); got != want {
			t.Fatalf("f16Bits(%#04x) = %#08x, want %#08x", h, got, want)
		}
	}
}

// TestDotAddRows checks DotRows and AddRows of every codec (fused kernels, tiles, and
// the plain-method fallback for a codec without batched kernels) against float64
// products with the decoded rows, over query counts, row counts and head sizes, with
// leading dimensions and row strides larger than needed.
func TestDotAddRows(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		codecs := append(allRowCodecs(), plainCodec{Int8{}})
		for _, c := range codecs {
			for _, g := range []int{1, 3, 4, 5, 8} {
				for _, n := range []int{1, 7, 16, 40, 300} {
					for _, d := range []int{8, 16, 64, 65, 128} {
						rb := c.RowBytes(d)
						stride := rb + 3 // unaligned rows
						if n%2 == 0 {
							stride = rb + 4 // F32 rows read in place need 4-byte steps
						}
						src := make([]byte, (n-1)*stride+rb)
						dec := make([]float32, n*d)
						for i := range n {
							c.Encode(src[i*stride:][:rb], gaussRow(r, d, 2))
							c.Decode(dec[i*d:(i+1)*d], src[i*stride:][:rb])
						}
						ld := n + 2
						q := gaussRow(r, g*d, 1)
						w := gaussRow(r, (g-1)*ld+n, 1)
						tmp := make([]float32, ScratchFloats(d))
						scores := make([]float32, (g-1)*ld+n)
						DotRows(c, scores, ld, q, g, src, stride, n, tmp)
						acc0 := gaussRow(r, g*d, 1)
						acc := append([]float32(nil), acc0...)
						AddRows(c, acc, w, ld, g, src, stride, n, tmp)
						// Error scale: products with each row's largest magnitude, since
						// Affine kernels fold the zero separately (s·code and lo may be
						// larger than the value they sum to).
						rowMax := make([]float64, n)
						for i := range n {
							for _, x := range dec[i*d : (i+1)*d] {
								rowMax[i] = math.Max(rowMax[i], math.Abs(float64(x)))
							}
						}
						qk := scoredQuery(active.Load(), c, q, d)
						for j := range g {
							for i := range n {
								var want, mag float64
								for k := range d {
									p := float64(qk[j*d+k]) * float64(dec[i*d+k])
									want += p
									mag += math.Abs(float64(qk[j*d+k])) * 2 * rowMax[i]
								}
								if got := scores[j*ld+i]; math.Abs(float64(got)-want) > 2e-6*mag+1e-6 {
									t.Fatalf("%s g=%d n=%d d=%d: score (%d,%d) = %v, want %v", c.Name(), g, n, d, j, i, got, want)
								}
							}
							round := addRoundBound(AddRowsRounding(c, d), w[j*ld:j*ld+n], rowMax) // the integer value kernels' rounding
							for k := range d {
								want, mag := float64(acc0[j*d+k]), math.Abs(float64(acc0[j*d+k]))
								for i := range n {
									p := float64(w[j*ld+i]) * float64(dec[i*d+k])
									want += p
									mag += math.Abs(float64(w[j*ld+i])) * 2 * rowMax[i]
								}
								if got := acc[j*d+k]; math.Abs(float64(got)-want) > 2e-6*mag+round+1e-6 {
									t.Fatalf("%s g=%d n=%d d=%d: acc (%d,%d) = %v, want %v", c.Name(), g, n, d, j, k, got, want)
								}
							}
						}
					}
				}
			}
		}
	})
}

// plainCodec hides a codec's type: DotRows and AddRows fall back to its Dot and
// AddScaled.
type plainCodec struct{ RowCodec }

// plainChannel hides Channel's type: DecodeBlockRows falls back to its Decode.
type plainChannel struct{ ChannelCodec }
