package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// Fuzz targets. Seed corpora live in testdata/fuzz/<Target>; `go test` runs them,
// `go test -fuzz=<Target>` extends them.

func FuzzF16(f *testing.F) {
	for _, b := range []uint32{0, 0x80000000, 0x3f800000, 0x477fe000, 0x477ff000, 0x33000000, 0x33000001, 0x7f800000, 0x7fc00001, 0x38800000} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b uint32) {
		x := math.Float32frombits(b)
		h := F32ToF16(x)
		if x != x {
			if y := F16ToF32(h); y == y {
				t.Fatalf("F32ToF16(NaN %#08x) = %#04x, not NaN", b, h)
			}
		} else if want := refF32ToF16(x); h != want {
			t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", x, h, want)
		}
		bf := F32ToBF16(x)
		if x != x {
			if y := BF16ToF32(bf); y == y {
				t.Fatalf("F32ToBF16(NaN %#08x) = %#04x, not NaN", b, bf)
			}
		} else if want := refBF16(x); bf != want {
			t.Fatalf("F32ToBF16(%g) = %#04x, want %#04x", x, bf, want)
		}
	})
}

func FuzzFP8(f *testing.F) {
	for _, b := range []uint32{0, 0x80000000, 0x43e00000, 0x43f00000, 0x47600000, 0x3b000000, 0x37800000, 0x7f800000, 0xff800000, 0x7fc00000} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b uint32) {
		x := math.Float32frombits(b)
		for _, ff := range fp8Formats {
			got := ff.enc(x)
			if x != x {
				if y := ff.dec(got); y == y {
					t.Fatalf("%s: NaN encodes to %#02x, not NaN", ff.name, got)
				}
				continue
			}
			if want := refEncodeFP8(ff, x); got != want {
				t.Fatalf("%s: Encode(%g) = %#02x, want %#02x", ff.name, x, got, want)
			}
		}
	})
}

// fuzzFloats reads float32 values from data: raw little-endian bit patterns (any
// value, NaN and Inf included) when raw is set, else small integers ÷ 16 per byte.
func fuzzFloats(data []byte, raw bool) []float32 {
	if !raw {
		x := make([]float32, len(data))
		for i, b := range data {
			x[i] = float32(int8(b)) / 16
		}
		return x
	}
	x := make([]float32, len(data)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return x
}

// FuzzRowCodecs encodes fuzzed rows with a fuzzed codec and checks the whole
// conformance contract (sizes, guard bytes, error bounds, Dot and AddScaled).
func FuzzRowCodecs(f *testing.F) {
	f.Add([]byte{1, 2, 3, 250, 128, 127, 0, 9}, uint8(0), false)
	f.Add([]byte{0, 0, 128, 127, 0, 0, 192, 127, 0, 0, 128, 255, 0, 0, 0, 128}, uint8(13), true)
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox"), uint8(17), false)
	codecs := allRowCodecs()
	f.Fuzz(func(t *testing.T, data []byte, sel uint8, raw bool) {
		src := fuzzFloats(data, raw)
		if len(src) == 0 {
			return
		}
		c := codecs[int(sel)%len(codecs)]
		conformRow(t, c.Name(), c, src, rand.New(rand.NewPCG(uint64(len(data)), uint64(sel))))
	})
}

// FuzzRowDecode decodes arbitrary bytes as an encoded row: no panic, and Dot and
// AddScaled agree with Decode whenever the decoded row is finite.
func FuzzRowDecode(f *testing.F) {
	f.Add([]byte{0x00, 0x3c, 0x00, 0xbc, 0x12, 0x34, 0x56, 0x78, 0x9a}, uint8(3))
	f.Add([]byte{0xff, 0x7b, 0xff, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(9))
	f.Add([]byte{0x7f, 0x7c, 0x00, 0x7e, 0xff, 0x80}, uint8(4))
	codecs := allRowCodecs()
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		c := codecs[int(sel)%len(codecs)]
		d := 0
		for c.RowBytes(d+1) <= len(data) && d < 4096 {
			d++
		}
		src := data[:c.RowBytes(d)]
		dec := make([]float32, d)
		c.Decode(dec, src)
		q := make([]float32, d)
		var want, mag float64
		for i := range q {
			q[i] = float32(i%7) - 3
			want += float64(q[i]) * float64(dec[i])
			mag += math.Abs(float64(q[i])) * (math.Abs(float64(dec[i])) + 65504)
		}
		got := float64(c.Dot(q, src))
		if !math.IsNaN(want) && !overflows32(mag) && math.Abs(got-want) > 1e-5*mag {
			t.Fatalf("%s: Dot %v, decoded dot %v", c.Name(), got, want)
		}
		acc := make([]float32, d)
		c.AddScaled(acc, 1, src)
		for i := range acc {
			if v, w := float64(acc[i]), float64(dec[i]); v != w && !(v != v && w != w) && math.Abs(v-w) > 1e-6*65504 {
				t.Fatalf("%s: AddScaled element %d = %v, Decode %v", c.Name(), i, v, w)
			}
		}
	})
}

// FuzzChannel encodes a fuzzed t×d block per channel and checks the block contract;
// it also decodes the fuzzed bytes themselves as a block.
func FuzzChannel(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 250, 6, 7, 8, 128, 127, 0, 12}, uint8(3), uint8(1), false)
	f.Add([]byte{0, 0, 128, 127, 0, 0, 192, 127, 0, 0, 0, 0, 1, 0, 0, 0}, uint8(2), uint8(0), true)
	f.Fuzz(func(t *testing.T, data []byte, tt uint8, bitsSel uint8, raw bool) {
		c := Channel{Bits: []int{8, 4, 3, 2}[int(bitsSel)%4]}
		src := fuzzFloats(data, raw)
		n := int(tt%16) + 1
		d := len(src) / n
		if d == 0 {
			return
		}
		conformBlock(t, c.Name(), c, src[:n*d], n, d, rand.New(rand.NewPCG(uint64(d), uint64(n))))
		// Arbitrary bytes as an encoded block: no panic.
		if len(data) >= c.BlockBytes(n, 1) {
			dd := 1
			for c.BlockBytes(n, dd+1) <= len(data) {
				dd++
			}
			out := make([]float32, n*dd)
			c.Decode(out, data, n, dd)
			scores := make([]float32, n)
			c.Dot(scores, make([]float32, dd), data, n, dd)
		}
	})
}
