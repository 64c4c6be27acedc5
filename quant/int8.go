package quant

import "math"

// Int8 stores a row as signed 8-bit codes with one symmetric scale per row:
// scale = max|x|/127 rounded up to f16, code = round(x/scale) in [−127, 127] (−128 is
// never written), value = code·scale. This is the INT8 KV format. Name "q8".
//
// Layout of a row of d values (d > 0), 2 + d bytes:
//
//	bytes 0..1    scale, little-endian IEEE-754 binary16 (≥ 0)
//	bytes 2..d+1  code of element i at byte 2+i, two's complement int8
//
// The f16 scale is a measured choice (see params.go). An empty row is 0 bytes. An
// all-zero row has scale 0 and codes 0. Error: every value x with |x| ≤ 65504 decodes
// within scale/2 of x. NaN is stored as 0, values beyond ±65504 saturate (see
// params.go) and the sign of zero is not kept.
type Int8 struct{}

// int8F32[b] is float32(int8(b)): code values by table lookup (see codeF32).
var int8F32 = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(int8(uint8(i)))
	}
	return t
}()

// int8Kernels is Int8's entry in the kernel table (kernels.go), filled by its SIMD
// kernels' files.
var int8Kernels rowKernels

func (Int8) kernels() *rowKernels { return &int8Kernels }

// Name implements RowCodec.
func (Int8) Name() string { return "q8" }

// RowBytes implements RowCodec.
func (Int8) RowBytes(d int) int {
	if d <= 0 {
		return 0
	}
	return 2 + d
}

// Encode implements RowCodec.
func (Int8) Encode(dst []byte, src []float32) {
	if len(src) == 0 {
		return
	}
	dst = dst[:2+len(src)]
	var m uint32 // largest |x| over non-NaN x, as float32 bits (ordered like the values)
	for _, x := range src {
		if a := math.Float32bits(x) &^ (1 << 31); a <= 0x7f800000 {
			m = max(m, a)
		}
	}
	mf := min(math.Float32frombits(m), f16Max) // saturation
	var s16 uint16
	if mf > 0 {
		s16 = f16Up(float64(mf) / 127)
	}
	putF16(dst, s16)
	inv := reciprocal(F16ToF32(s16))
	c := dst[2:]
	c = c[:len(src)]
	for i, x := range src {
		// |x·inv| ≤ 127 once saturated: offset to a non-negative value so that
		// truncation rounds (half up) without a data-dependent branch on the sign.
		f := x*inv + 127.5
		if !(f >= 0) { // below −127, −Inf or NaN (stored as 0)
			f = 0
			if x != x {
				f = 127.5
			}
		}
		c[i] = byte(int8(int(min(f, 254)) - 127))
	}
}

// Decode implements RowCodec.
func (Int8) Decode(dst []float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	src = src[:2+len(dst)]
	s := getF16(src)
	c := src[2:]
	c = c[:len(dst)]
	for i := range dst {
		dst[i] = s * int8F32[c[i]]
	}
}

// Dot implements RowCodec: scale·(q·codes).
func (Int8) Dot(q []float32, src []byte) float32 {
	if len(q) == 0 {
		return 0
	}
	src = src[:2+len(q)]
	s := getF16(src)
	c := src[2:]
	t := &int8F32
	var a0, a1 float32
	for len(q) >= 4 && len(c) >= 4 {
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

// AddScaled implements RowCodec: dst += (w·scale)·codes.
func (Int8) AddScaled(dst []float32, w float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	src = src[:2+len(dst)]
	a := w * getF16(src)
	c := src[2 : 2+len(dst)]
	t := &int8F32
	for i := range dst {
		dst[i] += a * t[c[i]]
	}
}
