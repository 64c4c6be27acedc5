package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

func refBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if math.IsInf(float64(x), 0) {
		return uint16(b >> 16)
	}
	lo := b &^ 0xffff
	hi := lo + 0x10000
	d0 := math.Abs(float64(x) - float64(math.Float32frombits(lo)))
	d1 := math.Abs(float64(math.Float32frombits(hi)) - float64(x))
	if hi&0x7fffffff == 0x7f800000 { // next step is Inf: treat as the value 2^128
		d1 = math.Abs(math.Ldexp(1, 128) - math.Abs(float64(x)))
	}
	switch {
	case d0 < d1, d0 == d1 && (lo>>16)&1 == 0:
		return uint16(lo >> 16)
	}
	return uint16(hi >> 16)
}

func TestBF16(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		x := BF16ToF32(h)
		if math.Float32bits(x) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", h, math.Float32bits(x))
		}
		back := F32ToBF16(x)
		if x != x {
			if BF16ToF32(back) == BF16ToF32(back) || back&0x40 == 0 || back&0x8000 != h&0x8000 {
				t.Fatalf("NaN %#04x → %#04x", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
		// Midpoint to the next value rounds to even, neighbours to nearest.
		if h&0x7f80 == 0x7f80 {
			continue
		}
		mid := math.Float32frombits(uint32(h)<<16 | 0x8000)
		want := h
		if h&1 == 1 {
			want = h + 1
		}
		if got := F32ToBF16(mid); got != want {
			t.Fatalf("F32ToBF16(mid %#08x) = %#04x, want %#04x", math.Float32bits(mid), got, want)
		}
		if got := F32ToBF16(math.Float32frombits(uint32(h)<<16 | 0x8001)); got != h+1 {
			t.Fatalf("above midpoint of %#04x: got %#04x", h, got)
		}
		if got := F32ToBF16(math.Float32frombits(uint32(h)<<16 | 0x7fff)); got != h {
			t.Fatalf("below midpoint of %#04x: got %#04x", h, got)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		x := math.Float32frombits(r.Uint32())
		if x != x {
			continue
		}
		if got, want := F32ToBF16(x), refBF16(x); got != want {
			t.Fatalf("F32ToBF16(%g) = %#04x, want %#04x", x, got, want)
		}
	}
}
