package quant

import (
	"fmt"
	"math"
)

// Axis selects how RoundTrip groups a matrix: one group per row or one per column.
type Axis int

const (
	ByRow    Axis = iota // one group per row (per token)
	ByColumn             // one group per column (per channel)
)

// String returns "row" or "column".
func (a Axis) String() string {
	switch a {
	case ByRow:
		return "row"
	case ByColumn:
		return "column"
	}
	return fmt.Sprintf("Axis(%d)", int(a))
}

// RoundTrip quantizes src, a rows×cols row-major matrix, to unsigned bits-bit codes
// with one min/max affine map per row (ByRow) or per column (ByColumn), and writes the
// dequantized matrix to dst: dst = lo + round((src−lo)/step)·step with
// step = (max−lo)/(2^bits−1) of the element's group, computed in float64 with exact
// (f32) parameters. Each element of dst is then within step/2 of src (up to float32
// rounding of the result). bits is 1..16. dst and src may be the same slice.
//
// It is the validation primitive for quality tools: it tells what a quantizer of a
// given width and grouping does to data, apart from any storage format. Errors name
// bad shapes, bits or axes, and non-finite inputs (rows·cols values are all read
// before anything is written).
func RoundTrip(dst, src []float32, rows, cols, bits int, axis Axis) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("%w: round trip: negative shape %d×%d", ErrInvalid, rows, cols)
	}
	if bits < 1 || bits > 16 {
		return fmt.Errorf("%w: round trip: %d bits out of range 1..16", ErrInvalid, bits)
	}
	if axis != ByRow && axis != ByColumn {
		return fmt.Errorf("%w: round trip: unknown axis %v", ErrInvalid, axis)
	}
	n := rows * cols
	if len(src) != n || len(dst) != n {
		return fmt.Errorf("%w: round trip: %d×%d matrix needs %d values, got src %d, dst %d", ErrInvalid, rows, cols, n, len(src), len(dst))
	}
	for i, x := range src {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: round trip: non-finite value %v at row %d, column %d", ErrInvalid, x, i/cols, i%cols)
		}
	}
	groups, stride, step := rows, cols, 1 // group g: elements g·stride + k·step, k < length
	length := cols
	if axis == ByColumn {
		groups, stride, step, length = cols, 1, cols, rows
	}
	levels := float64(int(1)<<bits - 1)
	for g := range groups {
		base := g * stride
		lo, hi := math.Inf(1), math.Inf(-1)
		for k := range length {
			x := float64(src[base+k*step])
			lo = math.Min(lo, x)
			hi = math.Max(hi, x)
		}
		s := (hi - lo) / levels
		for k := range length {
			i := base + k*step
			if s == 0 {
				dst[i] = float32(lo)
				continue
			}
			c := math.Round((float64(src[i]) - lo) / s)
			dst[i] = float32(lo + c*s)
		}
	}
	return nil
}
