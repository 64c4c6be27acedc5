package quant

import (
	"fmt"
	"math"
	"strconv"
)

// This file holds the OCP 8-bit floating-point formats (OCP "8-bit Floating Point
// Specification (OFP8)" rev. 1.0) and the FP8 row codec.
//
// E4M3 (E4M3FN): bit 7 sign, bits 6..3 exponent (bias 7), bits 2..0 mantissa.
// Normal values (exponent 1..15) are 2^(e−7)·(1 + m/8); exponent 0 holds zero and
// subnormals m·2⁻⁹. There are no infinities: S.1111.111 (0x7F, 0xFF) is NaN, and
// the largest finite magnitude is S.1111.110 = 448.
//
// E5M2: bit 7 sign, bits 6..2 exponent (bias 15), bits 1..0 mantissa. Normal values
// (exponent 1..30) are 2^(e−15)·(1 + m/4); exponent 0 holds zero and subnormals
// m·2⁻¹⁶; exponent 31 is ±Inf (m = 0) or NaN (m ≠ 0). The largest finite magnitude
// is 57344.
//
// Encoding (EncodeE4M3, EncodeE5M2) rounds to nearest with ties to even, keeps the
// sign of zero, handles subnormals, saturates finite values beyond the largest
// finite magnitude to ±max, maps NaN to NaN (0x7F or 0xFF, keeping the sign) and
// ±Inf to ±Inf in E5M2 and to ±448 in E4M3.
//
// FP8 row layout, per-row scale (TensorScale 0), d values (d > 0), 2 + d bytes:
//
//	bytes 0..1    scale, little-endian IEEE-754 binary16: max|x| over the row's finite
//	              values divided by the format's max (448 or 57344), rounded up to f16
//	              so that no finite value saturates; 1 when every finite value is 0;
//	              saturated to 65504 (rows beyond ±2.9e7 in E4M3, ±3.7e9 in E5M2 then
//	              saturate)
//	bytes 2..d+1  code of element i at byte 2+i: Encode(x/scale) in the format
//
// An f16 scale costs no accuracy (the error of an FP8 code is relative to x/scale,
// whatever the scale) and saves 2 bytes per row against f32. Only near zero does it
// show: the scale cannot go below the smallest f16, 2⁻²⁴ ≈ 6e-8, so E4M3 rows whose
// largest magnitude is below about 1e-6 fall partly into FP8's subnormal range, where
// the error is absolute (at most 2⁻²⁴·2⁻¹⁰ ≈ 6e-11) rather than relative.
//
// FP8 row layout, per-tensor scale (TensorScale > 0), d bytes: code of element i at
// byte i, Encode(x/TensorScale); nothing else is stored, the scale is part of the
// codec. An empty row is 0 bytes in both modes.
//
// Value = Decode(code)·scale. NaN stays NaN; ±Inf stays ±Inf in E5M2 and becomes the
// largest finite value times the scale in E4M3; a finite value saturates to the
// largest finite code, even where x/scale overflows float32. Error: relative 2⁻⁴ (E4M3) or 2⁻³
// (E5M2) of |x| for values in the normal range, and at most scale·2⁻¹⁰ (E4M3) or
// scale·2⁻¹⁷ (E5M2) in the subnormal range.
//
// Names: "fp8e4m3", "fp8e5m2" (per-row scale); "fp8e4m3:s=0.25" with the tensor scale
// in shortest decimal form (per-tensor scale).

// FP8Format selects an OCP FP8 format.
type FP8Format uint8

// The two OCP FP8 formats.
const (
	E4M3 FP8Format = iota // E4M3FN: 4 exponent bits, 3 mantissa bits, no infinities, max 448
	E5M2                  // 5 exponent bits, 2 mantissa bits, ±Inf, max 57344
)

// String returns "e4m3" or "e5m2".
func (f FP8Format) String() string {
	switch f {
	case E4M3:
		return "e4m3"
	case E5M2:
		return "e5m2"
	}
	return "FP8Format(" + strconv.Itoa(int(f)) + ")"
}

// Max returns the largest finite magnitude of the format (448 or 57344), or 0 for an
// unknown format.
func (f FP8Format) Max() float32 {
	switch f {
	case E4M3:
		return 448
	case E5M2:
		return 57344
	}
	return 0
}

var e4m3Table, e5m2Table [256]float32

func init() {
	for i := range 256 {
		e4m3Table[i] = decodeFP8(uint8(i), 3, 7, false)
		e5m2Table[i] = decodeFP8(uint8(i), 2, 15, true)
	}
}

// decodeFP8 builds the float32 of code b for a format with man mantissa bits, the
// given exponent bias, and IEEE-style Inf/NaN in the top exponent (ieee) or a single
// NaN pattern S.1111.111 (E4M3FN).
func decodeFP8(b uint8, man uint, bias int32, ieee bool) float32 {
	sign := uint32(b&0x80) << 24
	e := int32(b&0x7f) >> man
	m := uint32(b) & (1<<man - 1)
	topExp := int32(0x7f) >> man
	switch {
	case ieee && e == topExp && m == 0:
		return math.Float32frombits(sign | 0x7f800000)
	case ieee && e == topExp, !ieee && b&0x7f == 0x7f:
		return math.Float32frombits(sign | 0x7fc00000)
	case e == 0:
		v := float32(math.Ldexp(float64(m), int(1-bias)-int(man)))
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | uint32(e-bias+127)<<23 | m<<(23-man))
}

// encodeFP8 is the shared encoder; see the file comment for the rules. maxCode is the
// largest finite positive code and nan the NaN code (without sign).
func encodeFP8(x float32, man uint, bias int32, maxCode, nan uint8, ieee bool) uint8 {
	b := math.Float32bits(x)
	sign := uint8(b>>24) & 0x80
	a := b & 0x7fffffff
	if a > 0x7f800000 {
		return sign | nan
	}
	if a == 0x7f800000 {
		if ieee {
			return sign | (maxCode + 1)
		}
		return sign | maxCode
	}
	if a < uint32(128-bias)<<23 { // below the smallest normal 2^(1−bias)
		v := float64(math.Float32frombits(a)) * math.Ldexp(1, int(bias)-1+int(man))
		return sign | uint8(math.RoundToEven(v)) // 2^man is the smallest normal's code
	}
	shift := 23 - man
	r := (a + (1<<(shift-1) - 1) + (a>>shift)&1) >> shift
	r -= uint32(127-bias) << man
	if r > uint32(maxCode) {
		r = uint32(maxCode)
	}
	return sign | uint8(r)
}

// EncodeE4M3 converts x to OCP FP8 E4M3FN with round-to-nearest-even, saturating
// finite overflow and ±Inf to ±448; NaN gives NaN (0x7F or 0xFF). No scaling.
func EncodeE4M3(x float32) uint8 {
	if b := math.Float32bits(x); e4m3IsNormal(b) {
		return e4m3Normal(b)
	}
	return encodeFP8(x, 3, 7, 0x7e, 0x7f, false)
}

// e4m3IsNormal reports whether float32 bits b have 2⁻⁶ ≤ |x| ≤ 448, the magnitudes
// that encode to a normal E4M3 value without saturating.
func e4m3IsNormal(b uint32) bool { return b&0x7fffffff-0x3c800000 <= 0x43e00000-0x3c800000 }

// e4m3Normal encodes bits for which e4m3IsNormal holds: round the mantissa to 3 bits
// (ties to even; a carry moves into the exponent) and rebias the exponent from 127 to 7.
func e4m3Normal(b uint32) uint8 {
	a := b & 0x7fffffff
	return uint8(b>>24)&0x80 | uint8((a+0x7ffff+(a>>20)&1)>>20-120<<3)
}

// DecodeE4M3 returns the value of an OCP FP8 E4M3FN code (0x7F and 0xFF are NaN).
func DecodeE4M3(b uint8) float32 { return e4m3Table[b] }

// EncodeE5M2 converts x to OCP FP8 E5M2 with round-to-nearest-even, saturating finite
// overflow to ±57344, keeping ±Inf; NaN gives NaN (0x7F or 0xFF). No scaling.
func EncodeE5M2(x float32) uint8 {
	if b := math.Float32bits(x); e5m2IsNormal(b) {
		return e5m2Normal(b)
	}
	return encodeFP8(x, 2, 15, 0x7b, 0x7f, true)
}

// e5m2IsNormal reports whether float32 bits b have 2⁻¹⁴ ≤ |x| ≤ 57344.
func e5m2IsNormal(b uint32) bool { return b&0x7fffffff-0x38800000 <= 0x47600000-0x38800000 }

// e5m2Normal encodes bits for which e5m2IsNormal holds: round the mantissa to 2 bits
// (ties to even) and rebias the exponent from 127 to 15.
func e5m2Normal(b uint32) uint8 {
	a := b & 0x7fffffff
	return uint8(b>>24)&0x80 | uint8((a+0xfffff+(a>>21)&1)>>21-112<<2)
}

// DecodeE5M2 returns the value of an OCP FP8 E5M2 code.
func DecodeE5M2(b uint8) float32 { return e5m2Table[b] }

// FP8 stores a row as OCP FP8 codes with a per-row f16 scale (TensorScale 0) or a
// fixed per-tensor scale (TensorScale > 0); see the layout at the top of fp8.go.
type FP8 struct {
	Format      FP8Format
	TensorScale float32 // 0: per-row scale stored in the row; > 0: fixed scale, not stored
}

// Validate reports whether f is a usable codec. RowBytes, Encode, Decode, Dot and
// AddScaled of an FP8 that fails Validate panic on rows that are not empty.
func (f FP8) Validate() error {
	if f.Format != E4M3 && f.Format != E5M2 {
		return fmt.Errorf("%w: fp8 codec: unknown format %v", ErrInvalid, f.Format)
	}
	if s := f.TensorScale; s < 0 || s != s || math.IsInf(float64(s), 0) {
		return fmt.Errorf("%w: fp8 codec: tensor scale %v is not a finite value ≥ 0", ErrInvalid, s)
	}
	return nil
}

// mustValid panics with Validate's error when f is not usable. The check itself is
// two comparisons per field (NaN fails s ≥ 0, +Inf fails s ≤ MaxFloat32), small
// enough to inline: RowBytes runs it on every kernel call.
func (f FP8) mustValid() {
	if s := f.TensorScale; (f.Format != E4M3 && f.Format != E5M2) || !(s >= 0 && s <= math.MaxFloat32) {
		panic(f.Validate())
	}
}

// fp8RowKernels is FP8's entry in the kernel table (kernels.go), filled by its SIMD
// kernels' files.
var fp8RowKernels rowKernels

func (FP8) kernels() *rowKernels { return &fp8RowKernels }

// Name implements RowCodec; see the file comment.
func (f FP8) Name() string {
	n := "fp8" + f.Format.String()
	if f.TensorScale != 0 {
		n += ":s=" + strconv.FormatFloat(float64(f.TensorScale), 'g', -1, 32)
	}
	return n
}

func (f FP8) header() int {
	if f.TensorScale != 0 {
		return 0
	}
	return 2
}

// RowBytes implements RowCodec.
func (f FP8) RowBytes(d int) int {
	f.mustValid()
	if d <= 0 {
		return 0
	}
	return f.header() + d
}

func (f FP8) table() *[256]float32 {
	if f.Format == E5M2 {
		return &e5m2Table
	}
	return &e4m3Table
}

// Encode implements RowCodec.
func (f FP8) Encode(dst []byte, src []float32) {
	if len(src) == 0 {
		return
	}
	dst = dst[:f.RowBytes(len(src))]
	s := f.TensorScale
	if s == 0 {
		var m uint32 // largest finite |x|, as float32 bits (ordered like the values)
		for _, x := range src {
			if a := math.Float32bits(x) &^ (1 << 31); a < 0x7f800000 {
				m = max(m, a)
			}
		}
		s16 := uint16(0x3c00) // 1.0
		if m > 0 {
			s16 = f16Up(float64(math.Float32frombits(m)) / float64(f.Format.Max()))
		}
		putF16(dst, s16)
		s = F16ToF32(s16)
		dst = dst[2:]
	}
	dst = dst[:len(src)]
	// The normal-range test and encoding inline here; other values take the full
	// encoder. Either way code i is EncodeE4M3(x/s) (EncodeE5M2(x/s)).
	if f.Format == E5M2 {
		for i, x := range src {
			if v := x / s; e5m2IsNormal(math.Float32bits(v)) {
				dst[i] = e5m2Normal(math.Float32bits(v))
			} else {
				dst[i] = EncodeE5M2(finiteQuotient(x, v))
			}
		}
		return
	}
	for i, x := range src {
		if v := x / s; e4m3IsNormal(math.Float32bits(v)) {
			dst[i] = e4m3Normal(math.Float32bits(v))
		} else {
			dst[i] = EncodeE4M3(v)
		}
	}
}

// finiteQuotient is v = x/scale, except that a finite x whose quotient overflowed
// to ±Inf (a small fixed tensor scale) gives ±MaxFloat32, which E5M2 saturates to
// its largest finite code: only ±Inf itself encodes as ±Inf.
func finiteQuotient(x, v float32) float32 {
	if math.IsInf(float64(v), 0) && !math.IsInf(float64(x), 0) {
		return float32(math.Copysign(math.MaxFloat32, float64(v)))
	}
	return v
}

func (f FP8) scale(src []byte) (float32, []byte) {
	if f.TensorScale != 0 {
		return f.TensorScale, src
	}
	return getF16(src), src[2:]
}

// Decode implements RowCodec.
func (f FP8) Decode(dst []float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	src = src[:f.RowBytes(len(dst))]
	s, c := f.scale(src)
	c = c[:len(dst)]
	t := f.table()
	for i, b := range c {
		dst[i] = t[b] * s
	}
}

// Dot implements RowCodec: scale·Σ q[i]·value(code[i]).
func (f FP8) Dot(q []float32, src []byte) float32 {
	if len(q) == 0 {
		return 0
	}
	src = src[:f.RowBytes(len(q))]
	s, c := f.scale(src)
	c = c[:len(q)]
	t := f.table()
	var a0, a1 float32
	for len(q) >= 4 {
		qq := (*[4]float32)(q)
		cc := (*[4]byte)(c)
		a0 += qq[0]*t[cc[0]] + qq[1]*t[cc[1]]
		a1 += qq[2]*t[cc[2]] + qq[3]*t[cc[3]]
		q, c = q[4:], c[4:]
	}
	for i, x := range q {
		a0 += x * t[c[i]]
	}
	return s * (a0 + a1)
}

// AddScaled implements RowCodec: dst += (w·scale)·value(code).
func (f FP8) AddScaled(dst []float32, w float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	src = src[:f.RowBytes(len(dst))]
	s, c := f.scale(src)
	c = c[:len(dst)]
	t := f.table()
	a := w * s
	for i, b := range c {
		dst[i] += a * t[b]
	}
}
