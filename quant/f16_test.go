package quant

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refF16 is the value of half h computed from the IEEE-754 definition in float64.
func refF16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * m * math.Pow(2, -24)
	case 31:
		if m == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

func TestF16ToF32Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := F16ToF32(h)
		want := refF16(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN", h, got)
			}
			if math.Signbit(float64(got)) != (h&0x8000 != 0) {
				t.Fatalf("F16ToF32(%#04x) lost the NaN sign", h)
			}
			if math.Float32bits(got)>>13&0x3ff != uint32(h&0x3ff) {
				t.Fatalf("F16ToF32(%#04x) = %#08x lost the NaN payload", h, math.Float32bits(got))
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
}

func TestF16IdentityExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		back := F32ToF16(F16ToF32(h))
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 { // NaN: stays NaN, quiet, same sign
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back&0x200 == 0 || back&0x8000 != h&0x8000 {
				t.Fatalf("NaN %#04x → %#04x", h, back)
			}
			if h&0x200 != 0 && back != h {
				t.Fatalf("quiet NaN %#04x → %#04x, want unchanged", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

// positiveHalves are the finite non-negative halves in increasing order, with values.
var positiveHalves = func() []float64 {
	v := make([]float64, 0x7c00)
	for h := range 0x7c00 {
		v[h] = refF16(uint16(h))
	}
	return v
}()

// refF32ToF16 rounds x to the nearest half (ties to even) by searching the sorted
// table of halves; beyond 65520 the result is Inf (IEEE overflow under RNE).
func refF32ToF16(x float32) uint16 {
	var sign uint16
	a := float64(x)
	if math.Signbit(a) {
		sign, a = 0x8000, -a
	}
	if math.IsNaN(a) {
		return 0x7e00
	}
	if a >= 65520 {
		return sign | 0x7c00
	}
	i := sort.SearchFloat64s(positiveHalves, a) // first half ≥ a
	if i < len(positiveHalves) && positiveHalves[i] == a {
		return sign | uint16(i)
	}
	if i == len(positiveHalves) { // between 65504 and 65520
		return sign | 0x7bff
	}
	lo, hi := positiveHalves[i-1], positiveHalves[i]
	switch {
	case a-lo < hi-a:
		return sign | uint16(i-1)
	case a-lo > hi-a:
		return sign | uint16(i)
	case (i-1)%2 == 0:
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

func TestF32ToF16Midpoints(t *testing.T) {
	for h := range 0x7bff {
		lo, hi := positiveHalves[h], positiveHalves[h+1]
		mid := float32((lo + hi) / 2) // 12 significant bits: exact in float32
		if float64(mid) != (lo+hi)/2 {
			t.Fatalf("midpoint of %#04x not exact", h)
		}
		even := uint16(h)
		if h%2 == 1 {
			even = uint16(h + 1)
		}
		cases := []struct {
			x    float32
			want uint16
		}{
			{mid, even},
			{math.Nextafter32(mid, 0), uint16(h)},
			{math.Nextafter32(mid, 1e9), uint16(h + 1)},
		}
		for _, c := range cases {
			if got := F32ToF16(c.x); got != c.want {
				t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", c.x, got, c.want)
			}
			if got := F32ToF16(-c.x); got != c.want|0x8000 {
				t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", -c.x, got, c.want|0x8000)
			}
		}
	}
}

func TestF32ToF16Special(t *testing.T) {
	cases := []struct {
		x    float32
		want uint16
	}{
		{0, 0},
		{float32(math.Copysign(0, -1)), 0x8000},
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00}, // tie between 65504 and 2^16 goes to the even exponent: Inf
		{1e10, 0x7c00},
		{-1e10, 0xfc00},
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{0x1p-24, 0x0001},
		{0x1p-25, 0x0000},                      // tie with 0 → even (0)
		{math.Nextafter32(0x1p-25, 1), 0x0001}, // just above the tie
		{0x3p-25, 0x0002},                      // tie between 1 and 2 → 2
		{0x1p-14, 0x0400},                      // smallest normal
		{0x1p-14 - 0x1p-25, 0x0400},            // tie between 0x3ff and 0x400 → 0x400
		{1e-30, 0},
		{math.SmallestNonzeroFloat32, 0},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.1, 0x2e66},
	}
	for _, c := range cases {
		if got := F32ToF16(c.x); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", h)
	}
}

func TestF32ToF16Sweep(t *testing.T) {
	// Every 977th float32 bit pattern plus random ones, against the table search.
	check := func(b uint32) {
		x := math.Float32frombits(b)
		if x != x {
			return
		}
		if got, want := F32ToF16(x), refF32ToF16(x); got != want {
			t.Fatalf("F32ToF16(%g [%#08x]) = %#04x, want %#04x", x, b, got, want)
		}
	}
	for b := uint64(0); b < 1<<32; b += 977 {
		check(uint32(b))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		check(r.Uint32())
	}
}

func TestF16ParamRounding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		x := (r.Float64()*2 - 1) * math.Pow(2, float64(r.IntN(40)-30))
		up, down := F16ToF32(f16Up(x)), F16ToF32(f16Down(x))
		if float64(up) < x || float64(down) > x {
			t.Fatalf("x=%g: up %g, down %g", x, up, down)
		}
		// Tight: the neighbours on the other side are beyond x.
		if up != down && (F32ToF16(up) == F32ToF16(down)) {
			t.Fatalf("x=%g: up and down not adjacent", x)
		}
		if float64(up) != x && refF16Next(f16Up(x), -1) >= x {
			t.Fatalf("x=%g: f16Up %g not the smallest ≥ x", x, up)
		}
		if float64(down) != x && refF16Next(f16Down(x), 1) <= x {
			t.Fatalf("x=%g: f16Down %g not the largest ≤ x", x, down)
		}
	}
	if f16Up(1e9) != 0x7bff || f16Down(-1e9) != 0xfbff {
		t.Fatal("f16Up/f16Down do not saturate")
	}
	// Around zero: tiny magnitudes step to the smallest subnormal or to a signed zero.
	for _, c := range []struct {
		x        float64
		up, down uint16
	}{
		{1e-12, 0x0001, 0x0000},
		{-1e-12, 0x8000, 0x8001},
		{0, 0x0000, 0x0000},
		{0x1p-24, 0x0001, 0x0001},
		{-0x1p-24, 0x8001, 0x8001},
	} {
		if u, d := f16Up(c.x), f16Down(c.x); u != c.up || d != c.down {
			t.Errorf("x=%g: f16Up %#04x f16Down %#04x, want %#04x %#04x", c.x, u, d, c.up, c.down)
		}
	}
}

// refF16Next is the half value adjacent to h in direction dir (±1), via the sorted table.
func refF16Next(h uint16, dir int) float64 {
	v := refF16(h)
	if v == 0 {
		return float64(dir) * math.Pow(2, -24)
	}
	i := int(h & 0x7fff)
	if v < 0 {
		dir = -dir
	}
	j := i + dir
	if j < 0 {
		return 0
	}
	return math.Copysign(positiveHalves[j], v)
}

// TestF16EncodeKernels: every kernel set's F16.Encode writes F32ToF16 of each value,
// bit for bit, over every sign and exponent with mantissas at the rounding edges
// (ties, just above and below, the extremes: subnormal outputs, overflow to Inf,
// NaN payloads) and random ones, at lengths that leave every tail.
func TestF16EncodeKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var src []float32
	mants := []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fe000, 0x7fefff, 0x7ff000, 0x7fffff}
	for se := uint32(0); se < 512; se++ {
		for _, m := range mants {
			src = append(src, math.Float32frombits(se<<23|m))
		}
		for range 16 {
			src = append(src, math.Float32frombits(se<<23|r.Uint32()&0x7fffff))
		}
	}
	withKernels(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, len(src)} {
			dst := make([]byte, 2*n+2)
			dst[2*n], dst[2*n+1] = 0xAA, 0x55 // must stay
			F16{}.Encode(dst[:2*n], src[:n])
			for i, x := range src[:n] {
				if got, want := uint16(dst[2*i])|uint16(dst[2*i+1])<<8, F32ToF16(x); got != want {
					t.Fatalf("n=%d: %#08x encoded as %#04x, want %#04x", n, math.Float32bits(x), got, want)
				}
			}
			if dst[2*n] != 0xAA || dst[2*n+1] != 0x55 {
				t.Fatalf("n=%d: wrote past the row", n)
			}
		}
	})
}
