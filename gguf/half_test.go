package gguf

import (
	"math"
	"testing"
)

// refF16 computes the value of f16 bits h from the IEEE-754 definition, in float64.
func refF16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(m, -24)
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// TestF16Exhaustive checks every f16 bit pattern against the IEEE definition and that
// converting back gives the same bits.
func TestF16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		want := refF16(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) || math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN of the same sign", h, f)
			}
			back := F32ToF16(f)
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back&0x8000 != h&0x8000 || back&0x1ff != h&0x1ff {
				t.Fatalf("F32ToF16(NaN from %#04x) = %#04x", h, back)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, f, want)
		}
		if back := F32ToF16(f); back != h {
			t.Fatalf("F32ToF16(%v) = %#04x, want %#04x", f, back, h)
		}
	}
}

// TestF32ToF16Rounding checks round-to-nearest-even at every boundary between adjacent
// f16 values: the exact midpoint goes to the even neighbour, one float32 ulp either side
// goes to the nearer one.
func TestF32ToF16Rounding(t *testing.T) {
	for h := uint16(0); h < 0x7c00; h++ {
		lo := refF16(h)
		hi := refF16(h + 1) // h+1 == 0x7c00 is +Inf: use the would-be next value 65536
		if h+1 == 0x7c00 {
			hi = 65536
		}
		mid := float32((lo + hi) / 2)
		if float64(mid) != (lo+hi)/2 {
			t.Fatalf("midpoint of %#04x not exact in float32", h)
		}
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		for _, sign := range []uint16{0, 0x8000} {
			s := float32(1)
			if sign != 0 {
				s = -1
			}
			cases := []struct {
				x    float32
				want uint16
			}{
				{s * mid, sign | even},
				{s * math.Nextafter32(mid, 0), sign | h},
				{s * math.Nextafter32(mid, float32(math.Inf(1))), sign | (h + 1)},
			}
			for _, c := range cases {
				if got := F32ToF16(c.x); got != c.want {
					t.Fatalf("F32ToF16(%g) = %#04x, want %#04x (between %#04x and %#04x)", c.x, got, c.want, h, h+1)
				}
			}
		}
	}
	extremes := []struct {
		x    float32
		want uint16
	}{
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{1e10, 0x7c00},
		{-70000, 0xfc00},
		{math.SmallestNonzeroFloat32, 0},
		{-math.SmallestNonzeroFloat32, 0x8000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},
	}
	for _, c := range extremes {
		if got := F32ToF16(c.x); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", h)
	}
}

func TestBF16ToF32(t *testing.T) {
	cases := []struct {
		h    uint16
		want float32
	}{
		{0x3f80, 1}, {0xbf80, -1}, {0x4049, 3.140625}, {0x0000, 0}, {0x7f80, float32(math.Inf(1))}, {0x3c00, 1.0 / 128},
	}
	for _, c := range cases {
		if got := BF16ToF32(c.h); got != c.want {
			t.Errorf("BF16ToF32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
}
