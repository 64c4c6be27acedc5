package quant_test

import (
	"fmt"

	"kvq/quant"
)

// A key row stored as 4-bit codes in groups of 32, scored against a query without
// dequantizing it.
func ExampleAffine() {
	c := quant.Affine{Bits: 4, Group: 32}
	k := make([]float32, 64)
	q := make([]float32, 64)
	for i := range k {
		k[i] = float32(i%16) / 4 // 0, 0.25, … 3.75: exactly representable at 4 bits
		q[i] = 1
	}
	row := make([]byte, c.RowBytes(len(k)))
	c.Encode(row, k)
	fmt.Println(c.Name(), len(row), "bytes")
	fmt.Println("q·k =", c.Dot(q, row))
	// Output:
	// q4:g=32 40 bytes
	// q·k = 120
}

// FP8 conversions round to nearest even and saturate.
func ExampleEncodeE4M3() {
	for _, x := range []float32{1, 0.3, 300, 1e6} {
		b := quant.EncodeE4M3(x)
		fmt.Printf("%g → %#02x → %g\n", x, b, quant.DecodeE4M3(b))
	}
	// Output:
	// 1 → 0x38 → 1
	// 0.3 → 0x2a → 0.3125
	// 300 → 0x79 → 288
	// 1e+06 → 0x7e → 448
}

// The format-free round trip: what 2 bits per column (4 levels: min, min+step,
// min+2·step, max) do to a small matrix. Column 0 spans 0..3 and survives exactly;
// in columns 1 and 2 the middle value falls between two levels and moves by half a
// step (10/3 and 1/3).
func ExampleRoundTrip() {
	src := []float32{
		0, 10, -1,
		1, 20, 0,
		3, 30, 1,
	}
	dst := make([]float32, len(src))
	if err := quant.RoundTrip(dst, src, 3, 3, 2, quant.ByColumn); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dst)
	// Output:
	// [0 10 -1 1 23.333334 0.33333334 3 30 1]
}
