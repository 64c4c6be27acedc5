package quant

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// allRowCodecs is every row codec configuration the conformance suite covers: the
// per-token codecs of every registry entry (entryRowCodecs), and group sizes whose
// codes do not fill whole bytes (every group still starts on a byte boundary).
func allRowCodecs() []RowCodec {
	var cs []RowCodec
	seen := map[string]bool{}
	add := func(c RowCodec) {
		if !seen[c.Name()] {
			seen[c.Name()] = true
			cs = append(cs, c)
		}
	}
	for _, e := range Registry() {
		for _, c := range entryRowCodecs(e) {
			add(c)
		}
	}
	for _, c := range oddGroupCodecs {
		add(c)
	}
	return cs
}

// oddGroupCodecs are Affine configurations outside the registry's defaults: groups
// whose codes do not fill whole bytes.
var oddGroupCodecs = []RowCodec{Affine{Bits: 8, Group: 3}, Affine{Bits: 4, Group: 7}, Affine{Bits: 3, Group: 5}, Affine{Bits: 2, Group: 5}}

// entryRowCodecs is the per-token codec of registry entry e (none if it has no Row)
// at group sizes 0, 32, 64 and 128 for the entries with groups, with and without a
// fixed scale for those that take one.
func entryRowCodecs(e Entry) []RowCodec {
	if e.Row == nil {
		return nil
	}
	groups, scales := []int{0}, []float32{0}
	if e.Takes(ParamGroup) {
		groups = []int{0, 32, 64, 128}
	}
	if e.Takes(ParamScale) {
		scales = append(scales, 0.01, 1.0/4096)
	}
	var cs []RowCodec
	for _, g := range groups {
		for _, sc := range scales {
			cs = append(cs, e.Row(RowParams{Group: g, Scale: sc}))
		}
	}
	return cs
}

// TestRegistryConformance runs the conformance suite over every entry of the
// registry, each in a subtest of its name: its per-token codecs (conformRowCodec),
// its per-channel key codec (conformKeyCodec) and its per-channel value codec
// (conformValueCodec). An entry with none of them, or with a codec of a kind the
// suite has no checks for, fails: a new cache type is covered by being listed.
func TestRegistryConformance(t *testing.T) {
	for _, e := range Registry() {
		t.Run(e.Name, func(t *testing.T) {
			if e.Row == nil && (e.Key == nil || e.Value == nil) {
				t.Fatalf("no row codec, key codec %v, value codec %v: a side has no codec", e.Key != nil, e.Value != nil)
			}
			for _, c := range entryRowCodecs(e) {
				t.Run("row/"+c.Name(), func(t *testing.T) { conformRowCodec(t, c) })
			}
			if e.Key != nil {
				t.Run("key", func(t *testing.T) { conformKeyCodec(t, e.Key()) })
			}
			if e.Value != nil {
				t.Run("value", func(t *testing.T) { conformValueCodec(t, e.Value(), e.Bits) })
			}
		})
	}
}

// TestOddGroupConformance runs the row conformance suite over oddGroupCodecs.
func TestOddGroupConformance(t *testing.T) {
	for _, c := range oddGroupCodecs {
		t.Run(c.Name(), func(t *testing.T) { conformRowCodec(t, c) })
	}
}

var testLengths = []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 256}

// rowKinds generates test rows of length d.
var rowKinds = []struct {
	name string
	gen  func(r *rand.Rand, d int) []float32
}{
	{"gauss", func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1) }},
	{"gauss-small", func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1e-3) }},
	{"gauss-large", func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 300) }},
	{"outlier", func(r *rand.Rand, d int) []float32 {
		x := gaussRow(r, d, 1)
		x[r.IntN(d)] *= 80
		return x
	}},
	{"offset", func(r *rand.Rand, d int) []float32 {
		x := gaussRow(r, d, 0.5)
		for i := range x {
			x[i] += 20
		}
		return x
	}},
	{"uniform-neg", func(r *rand.Rand, d int) []float32 {
		x := make([]float32, d)
		for i := range x {
			x[i] = -r.Float32() * 7
		}
		return x
	}},
	{"zero", func(r *rand.Rand, d int) []float32 { return make([]float32, d) }},
	{"neg-zero", func(r *rand.Rand, d int) []float32 { return constRow(d, float32(math.Copysign(0, -1))) }},
	{"equal-exact", func(r *rand.Rand, d int) []float32 { return constRow(d, 0.75) }},
	{"equal-inexact", func(r *rand.Rand, d int) []float32 { return constRow(d, 0.1) }},
	{"tiny", func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1e-7) }},
	{"huge", func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1e5) }},
	{"very-huge", func(r *rand.Rand, d int) []float32 { return gaussRow(r, d, 1e30) }},
	{"nan-inf", func(r *rand.Rand, d int) []float32 {
		x := gaussRow(r, d, 2)
		special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
		for i := range x {
			if r.IntN(5) == 0 {
				x[i] = special[r.IntN(3)]
			}
		}
		return x
	}},
}

func gaussRow(r *rand.Rand, d int, sigma float64) []float32 {
	x := make([]float32, d)
	for i := range x {
		x[i] = float32(r.NormFloat64() * sigma)
	}
	return x
}

func constRow(d int, v float32) []float32 {
	x := make([]float32, d)
	for i := range x {
		x[i] = v
	}
	return x
}

// sanitize is the value integer codecs store for x (params.go): NaN → 0,
// saturation to ±65504.
func sanitize(x float32) float32 {
	if x != x {
		return 0
	}
	if x > f16Max {
		return f16Max
	}
	if x < -f16Max {
		return -f16Max
	}
	return x
}

// expectation says what element i of a row must decode to: want (NaN for "must be
// NaN", ±Inf for "must be that infinity") within tol.
type expectation struct {
	want float64
	tol  float64
}

// expect computes, from the codec's documented contract and the parameters stored in
// enc, what each element of src must decode to.
func expect(t *testing.T, c RowCodec, src []float32, enc []byte) []expectation {
	t.Helper()
	d := len(src)
	out := make([]expectation, d)
	const rel = 0x1p-20 // float32 arithmetic slack, relative to the group's magnitude
	switch c := c.(type) {
	case F32:
		for i, x := range src {
			out[i] = expectation{float64(x), 0}
		}
	case F16:
		for i, x := range src {
			a := math.Abs(float64(x))
			switch {
			case x != x || math.IsInf(a, 0):
				out[i] = expectation{float64(x), 0}
			case a >= 65520:
				out[i] = expectation{math.Copysign(math.Inf(1), float64(x)), 0}
			case a < 0x1p-14:
				out[i] = expectation{float64(x), 0x1p-25}
			default:
				out[i] = expectation{float64(x), a * 0x1p-11}
			}
		}
	case BF16:
		for i, x := range src {
			a := math.Abs(float64(x))
			if x != x || math.IsInf(a, 0) {
				out[i] = expectation{float64(x), 0}
				continue
			}
			out[i] = expectation{float64(x), a*0x1p-8 + 0x1p-133}
		}
	case Int8:
		s := float64(getF16(enc))
		for i, x := range src {
			v := float64(sanitize(x)) + 0 // integer codecs do not keep the sign of zero
			out[i] = expectation{v, s/2 + rel*(127*s)}
		}
	case Affine:
		g := c.group(d)
		for start := 0; start < d; start += g {
			n := min(g, d-start)
			s, lo := float64(getF16(enc[0:])), float64(getF16(enc[2:]))
			for i := start; i < start+n; i++ {
				v := float64(sanitize(src[i])) + 0
				out[i] = expectation{v, s/2 + rel*(math.Abs(lo)+s*float64(int(1)<<c.Bits))}
			}
			enc = enc[4+packedBytes(n, c.Bits):]
		}
	case FP8:
		s := float64(c.TensorScale)
		if s == 0 {
			s = float64(getF16(enc))
		}
		// Codes are exactly the format's encoding of x/scale, a quotient that overflows
		// float32 counting as the largest finite value of its sign (a finite x never
		// becomes ±Inf).
		codes := enc
		if c.TensorScale == 0 {
			codes = enc[2:]
		}
		for i, x := range src {
			q := x / float32(s)
			if math.IsInf(float64(q), 0) && !math.IsInf(float64(x), 0) {
				q = float32(math.Copysign(math.MaxFloat32, float64(q)))
			}
			want := EncodeE4M3(q)
			if c.Format == E5M2 {
				want = EncodeE5M2(q)
			}
			if codes[i] != want {
				t.Fatalf("%s: code %d = %#02x, want Encode(%g/%g) = %#02x", c.Name(), i, codes[i], x, s, want)
			}
		}
		mx := float64(c.Format.Max())
		relErr, sub := 0x1p-4, 0x1p-10
		if c.Format == E5M2 {
			relErr, sub = 0x1p-3, 0x1p-17
		}
		for i, x := range src {
			v := float64(x)
			switch {
			case x != x:
				out[i] = expectation{math.NaN(), 0}
			case math.IsInf(v, 0) && c.Format == E5M2:
				out[i] = expectation{v, 0}
			default:
				v = math.Max(-mx*s, math.Min(mx*s, v)) // saturation
				out[i] = expectation{v, math.Max(math.Abs(v)*relErr, s*sub) * (1 + 1e-6)}
			}
		}
	default:
		t.Fatalf("no expectation for codec %T", c)
	}
	return out
}

func checkDecoded(t *testing.T, got []float32, exp []expectation) {
	t.Helper()
	for i, e := range exp {
		g := float64(got[i])
		switch {
		case math.IsNaN(e.want):
			if !math.IsNaN(g) {
				t.Fatalf("element %d: got %v, want NaN", i, g)
			}
		case math.IsInf(e.want, 0):
			if g != e.want {
				t.Fatalf("element %d: got %v, want %v", i, g, e.want)
			}
		case math.IsNaN(g) || math.Abs(g-e.want) > e.tol:
			t.Fatalf("element %d: got %v, want %v ± %g (error %g)", i, g, e.want, e.tol, math.Abs(g-e.want))
		case e.want == 0 && e.tol == 0 && math.Signbit(g) != math.Signbit(e.want):
			t.Fatalf("element %d: got %v, want %v (sign of zero)", i, g, e.want)
		}
	}
}

const guard = 0xa5

// conformRowCodec runs row codec c over every length and kind of row:
// exact sizes, no writes beyond the row, deterministic and fully written encodings,
// the documented per-element error bound against the stored parameters, and Dot and
// AddScaled equal to the computation on the decoded row.
func conformRowCodec(t *testing.T, c RowCodec) {
	if n := c.RowBytes(0); n != 0 {
		t.Fatalf("RowBytes(0) = %d", n)
	}
	// Empty rows: defined, no panic.
	c.Encode(nil, nil)
	c.Decode(nil, nil)
	if got := c.Dot(nil, nil); got != 0 {
		t.Fatalf("Dot of empty row = %v", got)
	}
	c.AddScaled(nil, 1, nil)
	r := rand.New(rand.NewPCG(11, 12))
	for _, d := range testLengths {
		for _, kind := range rowKinds {
			src := kind.gen(r, d)
			name := fmt.Sprintf("d=%d/%s", d, kind.name)
			conformRow(t, name, c, src, r)
		}
	}
}

func conformRow(t *testing.T, name string, c RowCodec, src []float32, r *rand.Rand) {
	t.Helper()
	d := len(src)
	n := c.RowBytes(d)
	if n <= 0 {
		t.Fatalf("%s: RowBytes(%d) = %d", name, d, n)
	}
	// Encode into a buffer whose spare capacity holds guard bytes, twice from different
	// prior contents: the bytes must match (every byte written, deterministic).
	buf := make([]byte, n+16)
	for i := range buf {
		buf[i] = guard
	}
	c.Encode(buf[:n], src)
	for i, b := range buf[n:] {
		if b != guard {
			t.Fatalf("%s: Encode wrote byte %d past RowBytes %d", name, n+i, n)
		}
	}
	enc := buf[:n:n]
	other := make([]byte, n)
	c.Encode(other, src)
	for i := range other {
		if other[i] != enc[i] {
			t.Fatalf("%s: byte %d differs between encodings over different buffers (%#02x vs %#02x)", name, i, enc[i], other[i])
		}
	}
	// Decode with guard values after the row.
	out := make([]float32, d+4)
	for i := range out {
		out[i] = -12345
	}
	c.Decode(out[:d], enc)
	for i, v := range out[d:] {
		if v != -12345 {
			t.Fatalf("%s: Decode wrote element %d past d=%d", name, d+i, d)
		}
	}
	dec := out[:d]
	func() {
		t.Helper()
		defer func() {
			if t.Failed() {
				t.Logf("%s: src %v", name, src[:min(d, 8)])
			}
		}()
		checkDecoded(t, dec, expect(t, c, src, enc))
	}()
	// Dot and AddScaled against the decoded row.
	// The fused forms add group terms (scale·codes, zero) whose magnitude is bounded
	// by the row's largest decoded magnitude; float tolerance is relative to that.
	var amax float64
	for _, v := range dec {
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	q := gaussRow(r, d, 1)
	var want, mag float64
	for i := range q {
		want += float64(q[i]) * float64(dec[i])
		mag += math.Abs(float64(q[i])) * (math.Abs(float64(dec[i])) + 2*amax)
	}
	got := float64(c.Dot(q, enc))
	if overflows32(mag) {
		// float32 accumulation may overflow; any result is the defined one.
	} else if math.IsNaN(want) || math.IsInf(mag, 0) {
		if !math.IsNaN(got) && !math.IsInf(got, 0) {
			t.Fatalf("%s: Dot = %v, want non-finite like %v", name, got, want)
		}
	} else if math.Abs(got-want) > 1e-5*mag+1e-30 {
		t.Fatalf("%s: Dot = %v, decoded dot = %v (|q|·|x| = %g)", name, got, want, mag)
	}
	acc := gaussRow(r, d+2, 1)
	before := append([]float32(nil), acc...)
	w := float32(r.NormFloat64())
	c.AddScaled(acc[:d], w, enc)
	for i := range acc {
		if i >= d {
			if acc[i] != before[i] {
				t.Fatalf("%s: AddScaled wrote element %d past d=%d", name, i, d)
			}
			continue
		}
		want := float64(before[i]) + float64(w)*float64(dec[i])
		tol := 1e-6 * (math.Abs(float64(before[i])) + math.Abs(float64(w))*(math.Abs(float64(dec[i]))+2*amax))
		g := float64(acc[i])
		if overflows32(tol * 1e6) {
			continue
		}
		if math.IsNaN(want) || math.IsInf(want, 0) {
			if !math.IsNaN(g) && !math.IsInf(g, 0) {
				t.Fatalf("%s: AddScaled element %d = %v, want non-finite", name, i, g)
			}
			continue
		}
		if math.Abs(g-want) > tol+1e-37 {
			t.Fatalf("%s: AddScaled element %d = %v, want %v", name, i, g, want)
		}
	}
}

// TestRowBytesTable pins the documented sizes.
func TestRowBytesTable(t *testing.T) {
	cases := []struct {
		c    RowCodec
		d    int
		want int
	}{
		{F32{}, 128, 512}, {F16{}, 128, 256}, {BF16{}, 7, 14},
		{Int8{}, 128, 130}, {Int8{}, 1, 3},
		{Affine{8, 0}, 128, 132}, {Affine{4, 0}, 128, 68}, {Affine{2, 0}, 128, 36},
		{Affine{8, 32}, 128, 144}, {Affine{4, 32}, 128, 80}, {Affine{2, 32}, 128, 48},
		{Affine{4, 64}, 128, 72}, {Affine{3, 32}, 128, 64}, {Affine{3, 32}, 7, 4 + 3}, {Affine{3, 0}, 9, 4 + 4}, {Affine{4, 128}, 100, 54},
		{Affine{4, 32}, 33, 4 + 16 + 4 + 1}, {Affine{2, 32}, 33, 4 + 8 + 4 + 1},
		{Affine{2, 32}, 7, 4 + 2}, {Affine{4, 32}, 7, 4 + 4}, {Affine{8, 64}, 100, 4 + 64 + 4 + 36},
		{FP8{Format: E4M3}, 128, 130}, {FP8{Format: E5M2, TensorScale: 2}, 128, 128},
	}
	for _, tc := range cases {
		if got := tc.c.RowBytes(tc.d); got != tc.want {
			t.Errorf("%s.RowBytes(%d) = %d, want %d", tc.c.Name(), tc.d, got, tc.want)
		}
	}
	for bits, want := range map[int]int{8: 4608, 4: 2560, 3: 2048, 2: 1536} {
		if got := (Channel{Bits: bits}).BlockBytes(32, 128); got != want {
			t.Errorf("kivi%d.BlockBytes(32, 128) = %d, want %d", bits, got, want)
		}
	}
}

// TestSpecialRows pins documented behaviour on degenerate rows.
func TestSpecialRows(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range allRowCodecs() {
		// All-zero rows decode to exact zeros.
		z := make([]float32, 40)
		enc := make([]byte, c.RowBytes(40))
		c.Encode(enc, z)
		dec := make([]float32, 40)
		c.Decode(dec, enc)
		for i, v := range dec {
			if v != 0 {
				t.Errorf("%s: zero row element %d decodes to %v", c.Name(), i, v)
			}
		}
		// Rows equal to an f16 value decode exactly, except with a symmetric or FP8
		// scale, which maps the row maximum to the largest code.
		switch c.(type) {
		case Int8, FP8:
			continue
		}
		c.Encode(enc, constRow(40, -3.5))
		c.Decode(dec, enc)
		for i, v := range dec {
			if v != -3.5 {
				t.Errorf("%s: constant −3.5 row element %d decodes to %v", c.Name(), i, v)
				break
			}
		}
	}
	// NaN and Inf per family.
	row := []float32{1, nan, -2, inf, 0.5, -inf}
	for _, tc := range []struct {
		c    RowCodec
		want []float64 // NaN = must be NaN; others within the codec's bound (checked loosely)
	}{
		{F16{}, []float64{1, math.NaN(), -2, math.Inf(1), 0.5, math.Inf(-1)}},
		{BF16{}, []float64{1, math.NaN(), -2, math.Inf(1), 0.5, math.Inf(-1)}},
		{FP8{Format: E5M2}, []float64{1, math.NaN(), -2, math.Inf(1), 0.5, math.Inf(-1)}},
		{FP8{Format: E4M3}, []float64{1, math.NaN(), -2, 448, 0.5, -448}},
		{Int8{}, []float64{0, 0, 0, 65504, 0, -65504}},
		{Affine{Bits: 8, Group: 32}, []float64{0, 0, 0, 65504, 0, -65504}},
	} {
		enc := make([]byte, tc.c.RowBytes(len(row)))
		tc.c.Encode(enc, row)
		dec := make([]float32, len(row))
		tc.c.Decode(dec, enc)
		for i, w := range tc.want {
			g := float64(dec[i])
			switch {
			case math.IsNaN(w):
				if !math.IsNaN(g) {
					t.Errorf("%s: element %d = %v, want NaN", tc.c.Name(), i, g)
				}
			case math.IsInf(w, 0):
				if g != w {
					t.Errorf("%s: element %d = %v, want %v", tc.c.Name(), i, g, w)
				}
			case math.Abs(g-w) > 1024:
				t.Errorf("%s: element %d = %v, want about %v", tc.c.Name(), i, g, w)
			}
		}
	}
}

// TestNames pins the documented names and checks they are distinct.
func TestNames(t *testing.T) {
	want := map[string]RowCodec{
		"f32": F32{}, "f16": F16{}, "bf16": BF16{}, "q8": Int8{},
		"u8": Affine{8, 0}, "q4": Affine{4, 0}, "q2": Affine{2, 0},
		"u8:g=32": Affine{8, 32}, "q4:g=64": Affine{4, 64}, "q2:g=128": Affine{2, 128},
		"fp8e4m3": FP8{Format: E4M3}, "fp8e5m2": FP8{Format: E5M2},
		"fp8e4m3:s=0.25": FP8{Format: E4M3, TensorScale: 0.25},
	}
	for n, c := range want {
		if c.Name() != n {
			t.Errorf("%#v.Name() = %q, want %q", c, c.Name(), n)
		}
	}
	seen := map[string]bool{}
	for _, c := range allRowCodecs() {
		if seen[c.Name()] {
			t.Errorf("duplicate name %q", c.Name())
		}
		seen[c.Name()] = true
	}
	for b, n := range map[int]string{8: "kivi8", 4: "kivi4", 3: "kivi3", 2: "kivi2"} {
		if got := (Channel{Bits: b}).Name(); got != n {
			t.Errorf("Channel{%d}.Name() = %q, want %q", b, got, n)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []interface{ Validate() error }{
		Affine{Bits: 5}, Affine{Bits: 0}, Affine{Bits: 4, Group: -1}, Channel{Bits: 16}, Channel{},
		FP8{Format: 7}, FP8{TensorScale: -1}, FP8{TensorScale: float32(math.NaN())}, FP8{TensorScale: float32(math.Inf(1))},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%#v.Validate() = %v, want an ErrInvalid", c, err)
		}
	}
	good := []interface{ Validate() error }{Affine{Bits: 2, Group: 32}, Channel{Bits: 4}, FP8{Format: E5M2, TensorScale: 3}}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%#v.Validate() = %v", c, err)
		}
	}
}

// overflows32 reports whether float32 arithmetic on terms of total magnitude m may
// overflow (or already has: m is Inf or NaN).
func overflows32(m float64) bool { return !(m < math.MaxFloat32/4) }

// TestInvalidCodecPanics pins the documented behaviour of codecs that fail Validate:
// they panic with the Validate error instead of writing a wrong layout.
func TestInvalidCodecPanics(t *testing.T) {
	calls := []struct {
		name string
		f    func()
	}{
		{"Affine{Bits: 5}.RowBytes", func() { Affine{Bits: 5}.RowBytes(8) }},
		{"Affine{Bits: 5}.Encode", func() { Affine{Bits: 5}.Encode(make([]byte, 64), make([]float32, 8)) }},
		{"Affine{Group: -1}.Dot", func() { Affine{Bits: 4, Group: -1}.Dot(make([]float32, 8), make([]byte, 64)) }},
		{"Channel{Bits: 1}.BlockBytes", func() { Channel{Bits: 1}.BlockBytes(2, 2) }},
		{"FP8{Format: 9}.Decode", func() { FP8{Format: 9}.Decode(make([]float32, 4), make([]byte, 8)) }},
		{"FP8{TensorScale: -1}.Encode", func() { FP8{TensorScale: -1}.Encode(make([]byte, 8), make([]float32, 4)) }},
	}
	for _, c := range calls {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok || !errors.Is(err, ErrInvalid) {
					t.Errorf("%s: recovered %v, want a panic with an ErrInvalid", c.name, r)
				}
			}()
			c.f()
		}()
	}
}
