package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ocpValue is the value of an FP8 code per the OCP OFP8 specification, computed in
// float64 from its fields. ieee selects E5M2 special values, otherwise E4M3FN.
func ocpValue(b uint8, expBits, manBits, bias int, ieee bool) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	e := int(b&0x7f) >> manBits
	m := float64(int(b) & (1<<manBits - 1))
	top := 1<<expBits - 1
	frac := m / float64(int(1)<<manBits)
	switch {
	case ieee && e == top && m == 0:
		return math.Inf(int(sign))
	case ieee && e == top:
		return math.NaN()
	case !ieee && e == top && int(m) == 1<<manBits-1:
		return math.NaN()
	case e == 0:
		return sign * frac * math.Pow(2, float64(1-bias))
	}
	return sign * (1 + frac) * math.Pow(2, float64(e-bias))
}

type fp8Fmt struct {
	name   string
	enc    func(float32) uint8
	dec    func(uint8) float32
	ref    func(uint8) float64
	max    float64
	maxHex uint8
}

var fp8Formats = []fp8Fmt{
	{"E4M3", EncodeE4M3, DecodeE4M3, func(b uint8) float64 { return ocpValue(b, 4, 3, 7, false) }, 448, 0x7e},
	{"E5M2", EncodeE5M2, DecodeE5M2, func(b uint8) float64 { return ocpValue(b, 5, 2, 15, true) }, 57344, 0x7b},
}

func TestFP8TableExhaustive(t *testing.T) {
	for _, f := range fp8Formats {
		for i := range 256 {
			b := uint8(i)
			got, want := float64(f.dec(b)), f.ref(b)
			if math.IsNaN(want) {
				if !math.IsNaN(got) {
					t.Errorf("%s: Decode(%#02x) = %v, want NaN", f.name, b, got)
				}
				continue
			}
			if got != want || math.Signbit(got) != math.Signbit(want) {
				t.Errorf("%s: Decode(%#02x) = %v, want %v", f.name, b, got, want)
			}
		}
	}
	// Landmarks from the OCP specification's tables.
	known := []struct {
		f    func(uint8) float32
		b    uint8
		want float64
	}{
		{DecodeE4M3, 0x7e, 448}, {DecodeE4M3, 0xfe, -448}, {DecodeE4M3, 0x08, 0x1p-6},
		{DecodeE4M3, 0x07, 0.875 * 0x1p-6}, {DecodeE4M3, 0x01, 0x1p-9}, {DecodeE4M3, 0x38, 1},
		{DecodeE4M3, 0x77, 240}, {DecodeE4M3, 0x80, 0},
		{DecodeE5M2, 0x7b, 57344}, {DecodeE5M2, 0xfb, -57344}, {DecodeE5M2, 0x04, 0x1p-14},
		{DecodeE5M2, 0x03, 0.75 * 0x1p-14}, {DecodeE5M2, 0x01, 0x1p-16}, {DecodeE5M2, 0x3c, 1},
		{DecodeE5M2, 0x7c, math.Inf(1)}, {DecodeE5M2, 0xfc, math.Inf(-1)},
	}
	for _, k := range known {
		if got := float64(k.f(k.b)); got != k.want {
			t.Errorf("Decode(%#02x) = %v, want %v", k.b, got, k.want)
		}
	}
	for _, b := range []uint8{0x7f, 0xff} {
		if !math.IsNaN(float64(DecodeE4M3(b))) {
			t.Errorf("E4M3 %#02x is not NaN", b)
		}
	}
	for _, b := range []uint8{0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff} {
		if !math.IsNaN(float64(DecodeE5M2(b))) {
			t.Errorf("E5M2 %#02x is not NaN", b)
		}
	}
	if !math.Signbit(float64(DecodeE4M3(0x80))) || !math.Signbit(float64(DecodeE5M2(0x80))) {
		t.Error("0x80 does not decode to −0")
	}
}

func TestFP8FormatMax(t *testing.T) {
	if E4M3.Max() != 448 || E5M2.Max() != 57344 || FP8Format(7).Max() != 0 {
		t.Errorf("Max: %v %v %v", E4M3.Max(), E5M2.Max(), FP8Format(7).Max())
	}
	if E4M3.String() != "e4m3" || E5M2.String() != "e5m2" || FP8Format(7).String() != "FP8Format(7)" {
		t.Errorf("String: %v %v %v", E4M3, E5M2, FP8Format(7))
	}
}

func TestFP8EncodeDecodeIdentity(t *testing.T) {
	for _, f := range fp8Formats {
		for i := range 256 {
			b := uint8(i)
			v := f.dec(b)
			got := f.enc(v)
			switch {
			case v != v:
				if g := f.dec(got); g == g {
					t.Errorf("%s: NaN code %#02x re-encodes to non-NaN %#02x", f.name, b, got)
				}
			case got != b:
				t.Errorf("%s: Encode(Decode(%#02x) = %v) = %#02x", f.name, b, v, got)
			}
		}
	}
}

// refEncodeFP8 finds the nearest finite code by scanning all codes (ties to the
// even code, i.e. mantissa LSB 0), saturating beyond max; Inf and NaN per format.
func refEncodeFP8(f fp8Fmt, x float32) uint8 {
	a := float64(x)
	var sign uint8
	if math.Signbit(a) {
		sign, a = 0x80, -a
	}
	if math.IsNaN(a) {
		return 0x7f
	}
	if math.IsInf(a, 0) && f.name == "E5M2" {
		return sign | 0x7c
	}
	if a >= f.max {
		return sign | f.maxHex
	}
	best := uint8(0)
	for c := uint8(1); c <= f.maxHex; c++ {
		d, db := math.Abs(f.ref(c)-a), math.Abs(f.ref(best)-a)
		if d < db || (d == db && c%2 == 0) {
			best = c
		}
	}
	return sign | best
}

func TestFP8Rounding(t *testing.T) {
	for _, f := range fp8Formats {
		// Midpoints between consecutive finite codes round to even; neighbours to nearest.
		for c := uint8(0); c < f.maxHex; c++ {
			lo, hi := f.ref(c), f.ref(c+1)
			mid := float32((lo + hi) / 2)
			even := c
			if c%2 == 1 {
				even = c + 1
			}
			for _, tc := range []struct {
				x    float32
				want uint8
			}{{mid, even}, {math.Nextafter32(mid, 0), c}, {math.Nextafter32(mid, 1e30), c + 1}} {
				if got := f.enc(tc.x); got != tc.want {
					t.Errorf("%s: Encode(%g) = %#02x, want %#02x", f.name, tc.x, got, tc.want)
				}
				if got := f.enc(-tc.x); got != tc.want|0x80 {
					t.Errorf("%s: Encode(%g) = %#02x, want %#02x", f.name, -tc.x, got, tc.want|0x80)
				}
			}
		}
		// Saturation, signed zero, tiny values, NaN.
		inf := float32(math.Inf(1))
		satInf := f.maxHex
		if f.name == "E5M2" {
			satInf = 0x7c
		}
		for _, tc := range []struct {
			x    float32
			want uint8
		}{
			{float32(f.max), f.maxHex},
			{float32(f.max * 1.05), f.maxHex},
			{float32(f.max * 1.2), f.maxHex},
			{float32(f.max * 4), f.maxHex},
			{math.MaxFloat32, f.maxHex},
			{-math.MaxFloat32, f.maxHex | 0x80},
			{inf, satInf},
			{-inf, satInf | 0x80},
			{0, 0},
			{float32(math.Copysign(0, -1)), 0x80},
			{math.SmallestNonzeroFloat32, 0},
			{-math.SmallestNonzeroFloat32, 0x80},
			{float32(f.ref(1) / 2), 0},                       // tie with zero → 0
			{math.Nextafter32(float32(f.ref(1)/2), 1), 0x01}, // just above → smallest subnormal
			{float32(f.ref(1) * 1.5), 0x02},                  // tie 1|2 → 2
			{float32(f.ref(1) * 2.5), 0x02},                  // tie 2|3 → 2
		} {
			if got := f.enc(tc.x); got != tc.want {
				t.Errorf("%s: Encode(%g) = %#02x, want %#02x", f.name, tc.x, got, tc.want)
			}
		}
		for _, x := range []float32{float32(math.NaN()), -float32(math.NaN())} {
			if d := f.dec(f.enc(x)); d == d {
				t.Errorf("%s: NaN encodes to non-NaN %#02x", f.name, f.enc(x))
			}
		}
		// Random values against the scanning reference, across the whole range.
		r := rand.New(rand.NewPCG(7, 8))
		for range 4000 {
			x := float32((r.Float64()*2 - 1) * math.Pow(2, float64(r.IntN(50)-25)))
			if got, want := f.enc(x), refEncodeFP8(f, x); got != want {
				t.Fatalf("%s: Encode(%g) = %#02x, want %#02x", f.name, x, got, want)
			}
		}
	}
}
