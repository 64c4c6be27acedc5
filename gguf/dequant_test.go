package gguf

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Hand-built blocks: each test packs chosen codes and scales following the layout
// written at the top of the type's file, computes the expected values from the formula
// (in float64), and checks Dequantize against them.

func putF16(b []byte, x float32) { binary.LittleEndian.PutUint16(b, F32ToF16(x)) }

// closeTo compares with a relative tolerance that covers float32 evaluation order.
func closeTo(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 1e-6*math.Max(1, math.Abs(want))
}

func checkValues(t *testing.T, typ TensorType, src []byte, want []float64) {
	t.Helper()
	got := make([]float32, len(want))
	if err := Dequantize(typ, got, src); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !closeTo(got[i], want[i]) {
			t.Fatalf("%v value %d = %v, want %v", typ, i, got[i], want[i])
		}
	}
}

func TestDequantFloatTypes(t *testing.T) {
	f32 := make([]byte, 12)
	binary.LittleEndian.PutUint32(f32[0:], math.Float32bits(1.25))
	binary.LittleEndian.PutUint32(f32[4:], math.Float32bits(-3))
	binary.LittleEndian.PutUint32(f32[8:], math.Float32bits(1e-30))
	checkValues(t, TypeF32, f32, []float64{1.25, -3, float64(float32(1e-30))})
	checkValues(t, TypeF16, []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0xff, 0x7b}, []float64{1, -2, math.Ldexp(1, -24), 65504})
	checkValues(t, TypeBF16, []byte{0x80, 0x3f, 0x49, 0x40, 0x00, 0xc1}, []float64{1, 3.140625, -8})
}

func TestDequantQ8_0(t *testing.T) {
	b := make([]byte, 34)
	putF16(b, 0.25)
	want := make([]float64, 32)
	for j := 0; j < 32; j++ {
		q := int8(j*8 - 128) // -128, -120, ..., 120
		b[2+j] = byte(q)
		want[j] = 0.25 * float64(q)
	}
	checkValues(t, TypeQ8_0, b, want)
	// A literal block: d = 1.0 (0x3c00), codes 1, -1, 127, -128, then zeros.
	lit := make([]byte, 34)
	copy(lit, []byte{0x00, 0x3c, 0x01, 0xff, 0x7f, 0x80})
	checkValues(t, TypeQ8_0, lit, append([]float64{1, -1, 127, -128}, make([]float64, 28)...))
}

// nibbles packs 32 4-bit codes the Q4/Q5 way: value j low nibble, value j+16 high nibble.
func nibbles(codes []int) []byte {
	qs := make([]byte, 16)
	for j := 0; j < 16; j++ {
		qs[j] = byte(codes[j]&15) | byte(codes[j+16]&15)<<4
	}
	return qs
}

func TestDequantQ4_0(t *testing.T) {
	codes := make([]int, 32)
	for j := range codes {
		codes[j] = (j * 7) % 16
	}
	b := append([]byte{0, 0}, nibbles(codes)...)
	putF16(b, -1.5)
	want := make([]float64, 32)
	for j, q := range codes {
		want[j] = -1.5 * float64(q-8)
	}
	checkValues(t, TypeQ4_0, b, want)
	// Literal: d = 2 (0x4000); qs[0] = 0x9f → value 0 = 2·(15−8) = 14, value 16 = 2·(9−8) = 2;
	// all other nibbles 8 → 0.
	lit := []byte{0x00, 0x40, 0x9f}
	for len(lit) < 18 {
		lit = append(lit, 0x88)
	}
	want = make([]float64, 32)
	want[0], want[16] = 14, 2
	checkValues(t, TypeQ4_0, lit, want)
}

func TestDequantQ4_1(t *testing.T) {
	codes := make([]int, 32)
	for j := range codes {
		codes[j] = 15 - j%16
	}
	b := append([]byte{0, 0, 0, 0}, nibbles(codes)...)
	putF16(b[0:], 0.5)
	putF16(b[2:], -3)
	want := make([]float64, 32)
	for j, q := range codes {
		want[j] = 0.5*float64(q) - 3
	}
	checkValues(t, TypeQ4_1, b, want)
}

// q5High packs the fifth bits of 32 codes into the u32 qh.
func q5High(codes []int) []byte {
	var qh uint32
	for j, q := range codes {
		qh |= uint32(q>>4&1) << j
	}
	return binary.LittleEndian.AppendUint32(nil, qh)
}

func TestDequantQ5_0(t *testing.T) {
	codes := make([]int, 32)
	for j := range codes {
		codes[j] = (j*11 + 3) % 32
	}
	b := []byte{0, 0}
	b = append(b, q5High(codes)...)
	b = append(b, nibbles(codes)...)
	putF16(b, 0.125)
	want := make([]float64, 32)
	for j, q := range codes {
		want[j] = 0.125 * float64(q-16)
	}
	checkValues(t, TypeQ5_0, b, want)
	// Literal: d = 1; qh = 0x00010001 sets the high bit of values 0 and 16; all low nibbles 0
	// → values 0 and 16 are 16−16 = 0, all others 0−16 = −16.
	lit := []byte{0x00, 0x3c, 0x01, 0x00, 0x01, 0x00}
	lit = append(lit, make([]byte, 16)...)
	want = make([]float64, 32)
	for j := range want {
		if j != 0 && j != 16 {
			want[j] = -16
		}
	}
	checkValues(t, TypeQ5_0, lit, want)
}

func TestDequantQ5_1(t *testing.T) {
	codes := make([]int, 32)
	for j := range codes {
		codes[j] = 31 - j
	}
	b := []byte{0, 0, 0, 0}
	b = append(b, q5High(codes)...)
	b = append(b, nibbles(codes)...)
	putF16(b[0:], 0.75)
	putF16(b[2:], 1)
	want := make([]float64, 32)
	for j, q := range codes {
		want[j] = 0.75*float64(q) + 1
	}
	checkValues(t, TypeQ5_1, b, want)
}

// packQ4KScales packs eight 6-bit scales and minimums into the 12-byte Q4_K field.
func packQ4KScales(sc, m [8]int) []byte {
	s := make([]byte, 12)
	for i := 0; i < 4; i++ {
		s[i] = byte(sc[i]) | byte(sc[i+4]>>4)<<6
		s[i+4] = byte(m[i]) | byte(m[i+4]>>4)<<6
		s[i+8] = byte(sc[i+4]&15) | byte(m[i+4]&15)<<4
	}
	return s
}

func TestDequantQ4_K(t *testing.T) {
	sc := [8]int{1, 63, 17, 32, 48, 5, 60, 33}
	m := [8]int{0, 2, 63, 31, 16, 47, 1, 62}
	codes := make([]int, 256)
	for i := range codes {
		codes[i] = (i*5 + i/32) % 16
	}
	b := []byte{0, 0, 0, 0}
	putF16(b[0:], 0.0625)
	putF16(b[2:], 0.03125)
	b = append(b, packQ4KScales(sc, m)...)
	qs := make([]byte, 128)
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			qs[32*g+l] = byte(codes[64*g+l]) | byte(codes[64*g+32+l])<<4
		}
	}
	b = append(b, qs...)
	want := make([]float64, 256)
	for i, q := range codes {
		sub := i / 32
		want[i] = 0.0625*float64(sc[sub])*float64(q) - 0.03125*float64(m[sub])
	}
	checkValues(t, TypeQ4_K, b, want)
	for i := 0; i < 8; i++ {
		if s, mm := scaleMinK4(i, b[4:16]); int(s) != sc[i] || int(mm) != m[i] {
			t.Errorf("sub-block %d: scale, min = %d, %d; want %d, %d", i, s, mm, sc[i], m[i])
		}
	}
}

func TestDequantQ6_K(t *testing.T) {
	var scales [16]int8
	for k := range scales {
		scales[k] = int8(k*9 - 70)
	}
	codes := make([]int, 256)
	for i := range codes {
		codes[i] = (i*13 + 7) % 64
	}
	b := make([]byte, 210)
	for i, q := range codes {
		h, r := i/128, i%128
		k, l := r/32, r%32
		lo, hi := byte(q&15), byte(q>>4)
		ql := b[64*h:]
		qh := b[128+32*h:]
		switch k {
		case 0:
			ql[l] |= lo
		case 1:
			ql[l+32] |= lo
		case 2:
			ql[l] |= lo << 4
		case 3:
			ql[l+32] |= lo << 4
		}
		qh[l] |= hi << (2 * k)
	}
	for k, s := range scales {
		b[192+k] = byte(s)
	}
	putF16(b[208:], 0.01)
	d := float64(F16ToF32(F32ToF16(0.01)))
	want := make([]float64, 256)
	for i, q := range codes {
		want[i] = d * float64(scales[i/16]) * float64(q-32)
	}
	checkValues(t, TypeQ6_K, b, want)
}

func TestDequantMultipleBlocks(t *testing.T) {
	// Two Q8_0 blocks with different scales land in the right places.
	b := make([]byte, 68)
	putF16(b[0:], 1)
	putF16(b[34:], -2)
	b[2], b[36] = 5, 5
	got := make([]float32, 64)
	if err := Dequantize(TypeQ8_0, got, b); err != nil {
		t.Fatal(err)
	}
	if got[0] != 5 || got[32] != -10 || got[1] != 0 {
		t.Errorf("got %v %v %v", got[0], got[32], got[1])
	}
}

func TestDequantErrors(t *testing.T) {
	cases := []struct {
		typ  TensorType
		n    int
		src  int
		want string
	}{
		{TypeQ8_0, 31, 34, "whole number"},
		{TypeQ8_0, 32, 33, "source has 33 bytes, want 34"},
		{TypeQ4_K, 256, 145, "want 144"},
		{TypeF32, 2, 4, "want 8"},
		{TensorType(17), 256, 74, "IQ2_XS"},
		{TensorType(99), 1, 1, "type(99)"},
	}
	for _, c := range cases {
		err := Dequantize(c.typ, make([]float32, c.n), make([]byte, c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Dequantize(%v, %d values, %d bytes) = %v, want error containing %q", c.typ, c.n, c.src, err, c.want)
		}
	}
}

// TestDequantRandomBlocksFinite decodes random bytes of every type: values must be
// finite whenever the block's f16 scales are.
func TestDequantRandomBlocksFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for typ := range typeInfos {
		be := typ.BlockElems()
		n := 4 * be
		rb, _ := typ.RowBytes(n)
		src := make([]byte, rb)
		dst := make([]float32, n)
		for trial := 0; trial < 50; trial++ {
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			if typ != TypeF32 && typ != TypeBF16 {
				// keep every f16 finite: clear the top exponent bit of each high byte
				for i := 1; i < len(src); i += 2 {
					src[i] &^= 0x40
				}
			} else {
				continue
			}
			if err := Dequantize(typ, dst, src); err != nil {
				t.Fatal(err)
			}
			for i, v := range dst {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%v: value %d is %v", typ, i, v)
				}
			}
		}
	}
}
