package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// conformKeyCodec checks, for the key codec of a registry entry
// (TestRegistryConformance), sizes, guard bytes, per-element bounds against the
// stored per-channel parameters, and Dot against the decoded block.
func conformKeyCodec(t *testing.T, kc ChannelCodec) {
	shapes := [][2]int{{1, 1}, {1, 7}, {2, 3}, {7, 33}, {32, 64}, {32, 128}, {64, 128}, {5, 300}, {16, 100}}
	c, ok := kc.(Channel)
	if !ok {
		t.Fatalf("key codec %T has no conformance test", kc)
	}
	if n := c.BlockBytes(0, 128) + c.BlockBytes(32, 0); n != 0 {
		t.Fatalf("empty blocks take %d bytes", n)
	}
	c.Encode(nil, nil, 0, 128)
	c.Decode(nil, nil, 0, 128)
	c.Dot(nil, make([]float32, 128), nil, 0, 128)
	r := rand.New(rand.NewPCG(21, 22))
	for _, sh := range shapes {
		for _, kind := range rowKinds {
			tt, d := sh[0], sh[1]
			conformBlock(t, fmt.Sprintf("%dx%d/%s", tt, d, kind.name), c, channelBlockSrc(r, kind.gen, tt, d), tt, d, r)
		}
	}
}

// channelBlockSrc returns a block of tt tokens × d channels of rows from gen, the
// channels given different scales and one an outlier channel.
func channelBlockSrc(r *rand.Rand, gen func(r *rand.Rand, d int) []float32, tt, d int) []float32 {
	var src []float32
	for range tt {
		src = append(src, gen(r, d)...)
	}
	for i := range src {
		src[i] *= float32(1 + i%d%5)
		if i%d == d/2 {
			src[i] *= 50
		}
	}
	return src
}

// encodeBlockChecked encodes the block src (tt tokens × d channels) with c and
// returns its c.BlockBytes(tt, d) bytes, failing t if Encode writes past them or
// gives other bytes over another buffer.
func encodeBlockChecked(t *testing.T, name string, c ChannelCodec, src []float32, tt, d int) []byte {
	t.Helper()
	n := c.BlockBytes(tt, d)
	buf := make([]byte, n+16)
	for i := range buf {
		buf[i] = guard
	}
	c.Encode(buf[:n], src, tt, d)
	for i, b := range buf[n:] {
		if b != guard {
			t.Fatalf("%s: Encode wrote byte %d past BlockBytes %d", name, n+i, n)
		}
	}
	enc := buf[:n:n]
	other := make([]byte, n)
	c.Encode(other, src, tt, d)
	for i := range other {
		if other[i] != enc[i] {
			t.Fatalf("%s: byte %d differs between encodings over different buffers", name, i)
		}
	}
	return enc
}

func conformBlock(t *testing.T, name string, c Channel, src []float32, tt, d int, r *rand.Rand) {
	t.Helper()
	n := c.BlockBytes(tt, d)
	if want := 4*d + tt*((d*c.Bits+7)/8); n != want {
		t.Fatalf("%s: BlockBytes = %d, want %d", name, n, want)
	}
	enc := encodeBlockChecked(t, name, c, src, tt, d)
	dec := make([]float32, tt*d+3)
	dec[tt*d], dec[tt*d+1], dec[tt*d+2] = 7, 7, 7
	c.Decode(dec[:tt*d], enc, tt, d)
	if dec[tt*d] != 7 || dec[tt*d+2] != 7 {
		t.Fatalf("%s: Decode wrote past the block", name)
	}
	dec = dec[:tt*d]
	amax := make([]float64, d)
	for i, x := range src {
		ch := i % d
		s, lo := float64(getF16(enc[4*ch:])), float64(getF16(enc[4*ch+2:]))
		want := float64(sanitize(x))
		tol := s/2 + 0x1p-20*(math.Abs(lo)+s*float64(int(1)<<c.Bits))
		if g := float64(dec[i]); math.IsNaN(g) || math.Abs(g-want) > tol {
			t.Fatalf("%s: token %d channel %d: got %v, want %v ± %g", name, i/d, ch, g, want, tol)
		}
		amax[ch] = math.Max(amax[ch], math.Abs(float64(dec[i])))
	}
	q := gaussRow(r, d, 1)
	scores := make([]float32, tt+1)
	scores[tt] = 99
	c.Dot(scores, q, enc, tt, d)
	if scores[tt] != 99 {
		t.Fatalf("%s: Dot wrote past t scores", name)
	}
	for i := range tt {
		var want, mag float64
		for ch := range d {
			want += float64(q[ch]) * float64(dec[i*d+ch])
			mag += math.Abs(float64(q[ch])) * (math.Abs(float64(dec[i*d+ch])) + 2*amax[ch])
		}
		if g := float64(scores[i]); math.Abs(g-want) > 1e-5*mag+1e-30 {
			t.Fatalf("%s: score %d = %v, decoded dot %v", name, i, g, want)
		}
	}
}

// TestOutlierChannel shows why KIVI quantizes keys per channel: with one channel
// 100× larger than the rest, per-token grouping spends its range on the outlier and
// crushes the small channels; per-channel grouping keeps them sharp.
func TestOutlierChannel(t *testing.T) {
	const tt, d, outlier = 64, 128, 17
	r := rand.New(rand.NewPCG(31, 32))
	src := make([]float32, tt*d)
	for i := range src {
		src[i] = float32(r.NormFloat64())
		if i%d == outlier {
			src[i] = float32(100 + 10*r.NormFloat64())
		}
	}
	for _, bits := range []int{8, 4, 3, 2} {
		perTok := Affine{Bits: bits}
		perCh := Channel{Bits: bits}
		tokDec := make([]float32, tt*d)
		row := make([]byte, perTok.RowBytes(d))
		for i := range tt {
			perTok.Encode(row, src[i*d:(i+1)*d])
			perTok.Decode(tokDec[i*d:(i+1)*d], row)
		}
		blk := make([]byte, perCh.BlockBytes(tt, d))
		perCh.Encode(blk, src, tt, d)
		chDec := make([]float32, tt*d)
		perCh.Decode(chDec, blk, tt, d)
		var eTok, eCh float64
		for i, x := range src {
			if i%d == outlier {
				continue
			}
			eTok += sq(float64(tokDec[i] - x))
			eCh += sq(float64(chDec[i] - x))
		}
		n := float64(tt * (d - 1))
		rTok, rCh := math.Sqrt(eTok/n), math.Sqrt(eCh/n)
		t.Logf("%d bits, small channels RMSE: per-token %.4g, per-channel %.4g (×%.1f)", bits, rTok, rCh, rTok/rCh)
		factor := 10.0
		if bits == 2 { // four levels are coarse even per channel (step ≈ 1.7σ)
			factor = 5
		}
		if rCh*factor > rTok {
			t.Errorf("%d bits: per-channel RMSE %.4g not %g× below per-token %.4g", bits, rCh, factor, rTok)
		}
		// At 2 bits per token the step is ≥ 100/3: every small value collapses to the
		// same few codes, an error about the size of the signal itself.
		if bits == 2 && rTok < 0.9 {
			t.Errorf("2-bit per-token RMSE %.3g: expected the small channels to be crushed (≈1)", rTok)
		}
	}
}

func sq(x float64) float64 { return x * x }

// TestChannelQueryError measures the score error of the integer queries on Channel
// blocks (channelScores with int8 queries per 32 channels, and int16 ones per head)
// against the codec's own error (decoded keys against the original ones), RMS over
// random blocks whose keys have three outlier channels (offsets 1, 6 and 20 times the
// other channels' spread). The kernels use int8 queries for 2-bit codes, where the
// error must stay under a tenth of the codec's (measured 0.03–0.06; q4 rows' int8
// queries are about 0.06), and int16 ones for 4-bit codes, under a hundredth
// (0.0007–0.0014), and 8-bit codes, under a twentieth (0.012–0.023, against a codec
// error 17 times smaller); int8 on 4-bit codes is logged (0.16–0.35: why they take
// int16).
func TestChannelQueryError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const tt, d = 32, 64
	for _, tc := range []struct {
		bits, mode int
		limit      float64 // 0: logged only
	}{{2, 8, 0.1}, {4, 8, 0}, {4, 16, 0.01}, {8, 16, 0.05}} {
		for _, outl := range []float64{1, 6, 20} {
			c := Channel{Bits: tc.bits}
			var eInt, eCodec float64
			block := make([]byte, c.BlockBytes(tt, d))
			src, dec := make([]float32, tt*d), make([]float32, tt*d)
			q, ref := make([]float32, d), make([]float64, tt)
			for range 100 {
				for i := range src {
					src[i] = float32(r.NormFloat64())
				}
				for _, ch := range []int{3, 17, 40} {
					for i := range tt {
						src[i*d+ch] = float32(outl * (1 + 0.3*r.NormFloat64()))
					}
				}
				c.Encode(block, src, tt, d)
				c.Decode(dec, block, tt, d)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				channelScores(c, ref, q, block, tt, d, tc.mode)
				for i := range tt {
					var e, o float64
					for x := range d {
						e += float64(q[x]) * float64(dec[i*d+x])
						o += float64(q[x]) * float64(src[i*d+x])
					}
					eInt += (ref[i] - e) * (ref[i] - e)
					eCodec += (e - o) * (e - o)
				}
			}
			ratio := math.Sqrt(eInt / eCodec)
			t.Logf("%d-bit, int%d queries, outliers at %g: query error / codec error = %.4f", tc.bits, tc.mode, outl, ratio)
			if tc.limit > 0 && !(ratio < tc.limit) {
				t.Errorf("%d-bit, int%d queries, outliers at %g: query error is %.4f of the codec's, want < %g", tc.bits, tc.mode, outl, ratio, tc.limit)
			}
		}
	}
}

// TestDotChannelRowsExtremes scores Channel blocks whose rows past the first hold the
// largest code in every channel (the first row the smallest, so the scales are not
// 0) against a query of equal values, whose int16 codes are all 32767: the largest
// integer sums the int16 kernels can meet, at the head sizes chanMode allows them and
// past those. The scores must match ChannelScores.
func TestDotChannelRowsExtremes(t *testing.T) {
	const tt = 8
	for _, tc := range []struct{ bits, d int }{{8, 256}, {8, 288}, {4, 4096}, {4, 4128}, {2, 64}} {
		c := Channel{Bits: tc.bits}
		d := tc.d
		src := make([]float32, tt*d)
		for i := d; i < len(src); i++ {
			src[i] = 1 // row 0 stays 0: each channel spans [0, 1]
		}
		block := make([]byte, c.BlockBytes(tt, d))
		c.Encode(block, src, tt, d)
		q := constRow(d, 1)
		want := make([]float64, tt)
		ChannelScores(c, want, q, block, tt, d)
		scores := make([]float32, tt)
		tmp := make([]float32, max(ScratchFloats(d), tt*d))
		DotChannelRows(c, scores, tt, q, 1, block, tt, d, 0, tt, tmp, make([]float32, d), make([]float32, d))
		for i, s := range scores {
			if math.Abs(float64(s)-want[i]) > 1e-5*float64(d) {
				t.Errorf("%s d=%d: score %d = %v, want %v", c.Name(), d, i, s, want[i])
			}
		}
	}
}

// conformValueCodec checks the value codec of a registry entry of the given bits
// (TestRegistryConformance): sizes, guard bytes and deterministic encodings, each
// decoded value within one code step of its channel's range (bits-bit codes over
// [min, max] of the channel in the block, with f16 parameters) of the value, Dot
// against the decoded block, and, under every kernel set, AddChannelSpan (and so
// AddRows) against the weighted sums of the decoded tokens, each query's sums the
// same bits alone as beside others.
func conformValueCodec(t *testing.T, c ChannelAdder, bits int) {
	if n := c.BlockBytes(0, 128) + c.BlockBytes(32, 0); n != 0 {
		t.Fatalf("empty blocks take %d bytes", n)
	}
	r := rand.New(rand.NewPCG(23, 24))
	levels := float64(int(1)<<bits - 1)
	for _, sh := range [][2]int{{1, 1}, {2, 3}, {7, 33}, {32, 64}, {16, 100}, {32, 128}} {
		for _, kind := range rowKinds {
			tt, d := sh[0], sh[1]
			name := fmt.Sprintf("%dx%d/%s", tt, d, kind.name)
			src := channelBlockSrc(r, kind.gen, tt, d)
			enc := encodeBlockChecked(t, name, c, src, tt, d)
			dec := make([]float32, tt*d+1)
			dec[tt*d] = 7
			c.Decode(dec[:tt*d], enc, tt, d)
			if dec[tt*d] != 7 {
				t.Fatalf("%s: Decode wrote past the block", name)
			}
			dec = dec[:tt*d]
			lo, hi := make([]float64, d), make([]float64, d)
			for ch := range d {
				lo[ch], hi[ch] = math.Inf(1), math.Inf(-1)
			}
			for i, x := range src {
				v := float64(sanitize(x))
				lo[i%d], hi[i%d] = math.Min(lo[i%d], v), math.Max(hi[i%d], v)
			}
			amax := make([]float64, d)
			for i, x := range src {
				ch := i % d
				// f16 parameters: relative rounding, and subnormal steps of 2⁻²⁴.
				tol := (hi[ch]-lo[ch])/levels + 0x1p-9*(math.Abs(lo[ch])+math.Abs(hi[ch])) + 0x1p-24*(levels+1)
				if g := float64(dec[i]); math.IsNaN(g) || math.Abs(g-float64(sanitize(x))) > tol {
					t.Fatalf("%s: token %d channel %d: got %v, want %v ± %g", name, i/d, ch, g, sanitize(x), tol)
				}
				amax[ch] = math.Max(amax[ch], math.Abs(float64(dec[i])))
			}
			q := gaussRow(r, d, 1)
			scores := make([]float32, tt)
			c.Dot(scores, q, enc, tt, d)
			for i := range tt {
				var want, mag float64
				for ch := range d {
					want += float64(q[ch]) * float64(dec[i*d+ch])
					mag += math.Abs(float64(q[ch])) * (math.Abs(float64(dec[i*d+ch])) + 2*amax[ch])
				}
				if g := float64(scores[i]); math.Abs(g-want) > 1e-5*mag+1e-30 {
					t.Fatalf("%s: score %d = %v, decoded dot %v", name, i, g, want)
				}
			}
			conformValueAdd(t, name, c, enc, dec, amax, tt, d, r)
		}
	}
}

// conformValueAdd checks AddChannelSpan over three copies of the block enc (tt
// tokens, decoded dec) against the decoded sums, for spans starting in the first
// block and ending in any, g = 1, 3, 4 and 5 queries, under every kernel set; that
// a query's sums beside four others are the bits of its sums alone, and that tokens
// of weight 0 after its own change no bit.
func conformValueAdd(t *testing.T, name string, c ChannelAdder, enc []byte, dec []float32, amax []float64, tt, d int, r *rand.Rand) {
	t.Helper()
	const blocks, stride0 = 3, 5 // blocks apart by their bytes and 5 more
	stride := len(enc) + stride0
	src := make([]byte, blocks*stride)
	for j := range blocks {
		copy(src[j*stride:], enc)
	}
	withKernels(t, func(t *testing.T) {
		for _, off := range []int{0, tt / 2, tt - 1} {
			for _, n := range []int{1, tt - off, blocks*tt - off} {
				if n < 1 {
					continue
				}
				for _, g := range []int{1, 3, 4, 5} {
					ld := n + 1
					w := gaussRow(r, g*ld, 1)
					acc0 := gaussRow(r, g*d, 1)
					acc := append([]float32(nil), acc0...)
					tmp := make([]float32, ChannelAddFloats(d)+r.IntN(2)*tt*d)
					AddChannelSpan(c, acc, w, ld, g, src, stride, tt, off, n, d, tmp)
					for j := range g {
						for x := range d {
							want, mag := float64(acc0[j*d+x]), math.Abs(float64(acc0[j*d+x]))
							for i := range n {
								v := float64(dec[(off+i)%tt*d+x])
								want += float64(w[j*ld+i]) * v
								mag += math.Abs(float64(w[j*ld+i])) * (math.Abs(v) + 2*amax[x])
							}
							if got := float64(acc[j*d+x]); math.Abs(got-want) > 1e-5*mag+1e-30 {
								t.Fatalf("%s: off %d n %d g %d: acc[%d][%d] = %v, decoded sum %v", name, off, n, g, j, x, got, want)
							}
						}
						one := append([]float32(nil), acc0[j*d:(j+1)*d]...)
						AddChannelSpan(c, one, w[j*ld:], ld, 1, src, stride, tt, off, n, d, tmp)
						for x := range d {
							if math.Float32bits(one[x]) != math.Float32bits(acc[j*d+x]) {
								t.Fatalf("%s: off %d n %d: query %d of %d sums %v beside others, %v alone", name, off, n, j, g, acc[j*d+x], one[x])
							}
						}
						// Tokens of weight 0 after its own (a causal mask) change nothing.
						if k := min(3, n-1); k > 0 {
							masked := append([]float32(nil), w[j*ld:j*ld+n]...)
							clear(masked[n-k:])
							a0 := append([]float32(nil), acc0[j*d:(j+1)*d]...)
							a1 := append([]float32(nil), a0...)
							AddChannelSpan(c, a0, masked, n, 1, src, stride, tt, off, n, d, tmp)
							AddChannelSpan(c, a1, masked, n, 1, src, stride, tt, off, n-k, d, tmp)
							for x := range d {
								if math.Float32bits(a0[x]) != math.Float32bits(a1[x]) {
									t.Fatalf("%s: off %d n %d: query %d: %v with %d tokens of weight 0 after its own, %v without", name, off, n, j, a0[x], k, a1[x])
								}
							}
						}
					}
				}
			}
		}
	})
}
