package quant

import (
	"fmt"
	"strconv"
)

// Affine stores a row in groups of Group consecutive values, each group as unsigned
// Bits-bit codes with its own f16 scale and zero: value = lo + code·scale, where lo
// is the group minimum rounded down to f16 and scale = (max − lo)/(2^Bits − 1)
// rounded up to f16. This is the asymmetric min/max quantization of UINT8, INT4 and
// INT2 KV caches, and of KIVI values (per token).
//
// Bits is 8, 4, 3 or 2. Group is the number of values per group; 0 means the whole row
// is one group, and a row (or the row's tail) shorter than Group forms one shorter
// group. Group sizes used by kvq are 32, 64, 128 and 0.
//
// Layout of a row of d values: ⌈d/Group⌉ groups back to back (one group when Group is
// 0), the first d/Group of Group values and a last one of d mod Group values if that
// is not 0. A group of n values is 4 + ⌈n·Bits/8⌉ bytes:
//
//	bytes 0..1  scale, little-endian IEEE-754 binary16 (≥ 0)
//	bytes 2..3  lo (zero), little-endian IEEE-754 binary16
//	bytes 4..   n codes packed as in pack.go: 8-bit one per byte; 4-bit element 2j in
//	            the low nibble and 2j+1 in the high nibble of byte j; 2-bit element
//	            4j+k in bits 2k..2k+1 of byte j; 3-bit element i in bits 3i..3i+2 of
//	            the little-endian bit stream (eight elements in three bytes, byte by
//	            byte in pack.go). Unused bits of the last byte are 0.
//
// Parameters are f16, a measured choice (params.go: against f32 parameters they
// save 17% of a q4:g=32 row and raise the RMSE by < 0.5% on K/V data). Every group
// starts on a byte boundary. RowBytes(128) is 132 (u8), 68 (q4) or 36
// (q2) for Group 0; 144, 80, 64 (q3), 48 for Group 32. 3-bit rows have no SIMD
// kernels: they are decoded and scored through the generic tiles.
//
// Error: every finite value x with |x| ≤ 65504 decodes within scale/2 of x (scale as
// stored), up to float32 rounding. A group whose values all equal an f16 value has
// scale 0 and decodes exactly. NaN is stored as 0, values beyond ±65504 saturate (see
// params.go) and the sign of zero is not kept; an empty row is 0 bytes.
//
// Names: "u8", "q4", "q3", "q2" for a whole-row group; "u8:g=32", "q4:g=64", "q2:g=128" etc.
// for Group > 0.
type Affine struct {
	Bits  int // bits per code: 8, 4, 3 or 2
	Group int // values per group; 0 = whole row
}

// Validate reports whether a is a usable codec. RowBytes, Encode, Decode, Dot and
// AddScaled of an Affine that fails Validate panic.
func (a Affine) Validate() error {
	if a.Bits != 8 && a.Bits != 4 && a.Bits != 3 && a.Bits != 2 {
		return fmt.Errorf("%w: affine codec: %d bits unsupported (want 8, 4, 3 or 2)", ErrInvalid, a.Bits)
	}
	if a.Group < 0 {
		return fmt.Errorf("%w: affine codec: negative group size %d", ErrInvalid, a.Group)
	}
	return nil
}

// mustValid panics with Validate's error when a is not usable. RowBytes runs it on
// every kernel call, so the check is a few comparisons, without a call to Validate.
func (a Affine) mustValid() {
	if (a.Bits != 8 && a.Bits != 4 && a.Bits != 3 && a.Bits != 2) || a.Group < 0 {
		panic(a.Validate())
	}
}

// affineRowKernels is Affine's entry in the kernel table (kernels.go), filled by its SIMD
// kernels' files.
var affineRowKernels rowKernels

func (Affine) kernels() *rowKernels { return &affineRowKernels }

// Name implements RowCodec; see the type documentation.
func (a Affine) Name() string {
	p := "q" + strconv.Itoa(a.Bits)
	if a.Bits == 8 {
		p = "u8"
	}
	if a.Group == 0 {
		return p
	}
	return p + ":g=" + strconv.Itoa(a.Group)
}

// group returns the group length for a row of d values.
func (a Affine) group(d int) int {
	if a.Group == 0 || a.Group > d {
		return d
	}
	return a.Group
}

// RowBytes implements RowCodec.
func (a Affine) RowBytes(d int) int {
	a.mustValid()
	if d <= 0 {
		return 0
	}
	g := a.group(d)
	n := (d / g) * (4 + packedBytes(g, a.Bits))
	if r := d % g; r != 0 {
		n += 4 + packedBytes(r, a.Bits)
	}
	return n
}

// Encode implements RowCodec.
func (a Affine) Encode(dst []byte, src []float32) {
	dst = dst[:a.RowBytes(len(src))]
	g := a.group(len(src))
	maxCode := 1<<a.Bits - 1
	k := active.Load()
	for len(src) > 0 {
		n := min(g, len(src))
		nb := 4 + packedBytes(n, a.Bits)
		grp := src[:n]
		lo, hi := k.encRange(grp)
		lo16, s16, lof, sf := affineParams(lo, hi, maxCode)
		putF16(dst[0:2], s16)
		putF16(dst[2:4], lo16)
		k.encPack(dst[4:nb], grp, lof, reciprocal(sf), a.Bits)
		dst, src = dst[nb:], src[n:]
	}
}

// Decode implements RowCodec.
func (a Affine) Decode(dst []float32, src []byte) {
	src = src[:a.RowBytes(len(dst))]
	g := a.group(len(dst))
	for len(dst) > 0 {
		n := min(g, len(dst))
		nb := 4 + packedBytes(n, a.Bits)
		decodeCodes(dst[:n], getF16(src[2:4]), getF16(src[0:2]), src[4:nb], a.Bits)
		dst, src = dst[n:], src[nb:]
	}
}

// Dot implements RowCodec: per group, scale·(q·codes) + lo·Σq.
func (a Affine) Dot(q []float32, src []byte) float32 {
	src = src[:a.RowBytes(len(q))] // validates a
	g := a.group(len(q))
	var dot func(q []float32, c []byte) (acc, sq float32)
	switch a.Bits {
	case 8:
		dot = dot8
	case 4:
		dot = dot4
	case 3:
		dot = dot3
	default:
		dot = dot2
	}
	gb := 4 + packedBytes(g, a.Bits)
	var s float32
	for len(q) >= g && len(src) >= gb { // full groups
		acc, sq := dot(q[:g], src[4:gb])
		s += getF16(src[0:2])*acc + getF16(src[2:4])*sq
		q, src = q[g:], src[gb:]
	}
	if len(q) > 0 { // the shorter last group
		acc, sq := dot(q, src[4:])
		s += getF16(src[0:2])*acc + getF16(src[2:4])*sq
	}
	return s
}

// AddScaled implements RowCodec: per group, dst += (w·scale)·codes + w·lo.
func (a Affine) AddScaled(dst []float32, w float32, src []byte) {
	src = src[:a.RowBytes(len(dst))] // validates a
	g := a.group(len(dst))
	gb := 4 + packedBytes(g, a.Bits)
	for len(dst) >= g && len(src) >= gb { // full groups
		addCodes(dst[:g], w*getF16(src[0:2]), w*getF16(src[2:4]), src[4:gb], a.Bits)
		dst, src = dst[g:], src[gb:]
	}
	if len(dst) > 0 { // the shorter last group
		addCodes(dst, w*getF16(src[0:2]), w*getF16(src[2:4]), src[4:], a.Bits)
	}
}
