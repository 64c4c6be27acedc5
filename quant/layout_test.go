package quant

import (
	"bytes"
	"math"
	"testing"
)

// TestLayoutGolden pins the documented byte layouts with hand-computed encodings:
// parameter order and precision, code packing order, odd tails, group boundaries.
func TestLayoutGolden(t *testing.T) {
	seq16 := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 7}
	cases := []struct {
		name string
		c    RowCodec
		src  []float32
		want []byte
	}{
		{"f32", F32{}, []float32{1, -2}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{"f16", F16{}, []float32{1, -2}, []byte{0x00, 0x3c, 0x00, 0xc0}},
		{"bf16", BF16{}, []float32{1, -2}, []byte{0x80, 0x3f, 0x00, 0xc0}},
		// scale 15/15 = 1 (0x3c00), lo 0; element 2j low nibble, 2j+1 high nibble; the
		// 17th code alone in the low nibble of the last byte.
		{"q4 whole row", Affine{Bits: 4}, seq16, []byte{0x00, 0x3c, 0x00, 0x00,
			0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0x07}},
		// Groups of 4: codes 0,1,2,3 → 0b11_10_01_00; 3,2,1,0 → 0b00_01_10_11; a last
		// group of one value 5: scale 0, lo 5 (0x4500), code 0.
		{"q2 g=4", Affine{Bits: 2, Group: 4}, []float32{0, 1, 2, 3, 3, 2, 1, 0, 5}, []byte{
			0x00, 0x3c, 0x00, 0x00, 0xe4,
			0x00, 0x3c, 0x00, 0x00, 0x1b,
			0x00, 0x00, 0x00, 0x45, 0x00}},
		// lo −1 (0xbc00); scale 2/255 = 0.0078431 rounded up to f16 2⁻⁷·(1+5/1024)
		// (0x2005); 2/scale = 254.76 → code 255.
		{"u8", Affine{Bits: 8}, []float32{-1, 1}, []byte{0x05, 0x20, 0x00, 0xbc, 0x00, 0xff}},
		// scale 2/127 rounded up to 2⁻⁶·(1+9/1024) (0x2409): codes −127, 63, 32.
		{"q8", Int8{}, []float32{-2, 1, 0.5}, []byte{0x09, 0x24, 0x81, 0x3f, 0x20}},
		// scale 1/448 rounded up to 2⁻⁹·(1+147/1024) (0x1893); 1/scale = 447.7 → 448
		// (0x7e); −0.5/scale = −223.9 → −224 (0xf6); 0 → 0x00.
		{"fp8e4m3", FP8{Format: E4M3}, []float32{1, -0.5, 0}, []byte{0x93, 0x18, 0x7e, 0xf6, 0x00}},
		// A row without non-zero finite values stores scale 1 (0x3c00); −0 and NaN keep
		// their codes.
		{"fp8e4m3 zero row", FP8{Format: E4M3}, []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN())}, []byte{0x00, 0x3c, 0x00, 0x80, 0x7f}},
		// Tensor scale 0.5, no header: 1/0.5 = 2 (0x40 in E5M2), −3/0.5 = −6 (0xc6).
		{"fp8e5m2 tensor", FP8{Format: E5M2, TensorScale: 0.5}, []float32{1, -3}, []byte{0x40, 0xc6}},
	}
	for _, tc := range cases {
		got := make([]byte, tc.c.RowBytes(len(tc.src)))
		tc.c.Encode(got, tc.src)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: Encode(%v) = % x, want % x", tc.name, tc.src, got, tc.want)
		}
	}
	// KIVI block, t=2 tokens × d=3 channels: per-channel (scale, lo) first, then token
	// rows of ⌈3·4/8⌉ = 2 bytes. Channel 0: 0..15 → scale 1, lo 0. Channel 1 constant
	// 10: scale 0, lo 10 (0x4900). Channel 2: −1..1 → lo −1, scale 2/15 rounded up to
	// 2⁻³·(1+69/1024) (0x3045), codes 0 and 15.
	ch := Channel{Bits: 4}
	got := make([]byte, ch.BlockBytes(2, 3))
	ch.Encode(got, []float32{0, 10, -1, 15, 10, 1}, 2, 3)
	want := []byte{
		0x00, 0x3c, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x49,
		0x45, 0x30, 0x00, 0xbc,
		0x00, 0x00,
		0x0f, 0x0f,
	}
	if !bytes.Equal(got, want) {
		t.Errorf("kivi4 block: % x, want % x", got, want)
	}
}
