package quant

import (
	"encoding/binary"
	"math/bits"
)

// Scale and zero parameters of the integer and FP8 codecs are stored as little-endian
// IEEE-754 binary16. The choice was measured (precision_test.go, TestParamPrecision,
// 256 rows of 128 values): against exact f32 parameters, f16 parameters
//
//   - save 4 bytes per group: 10% of a u8:g=32 row (144 vs 160 bytes), 17% of
//     q4:g=32 (80 vs 96), 25% of q2:g=32 (48 vs 64), 3–10% with whole-row groups;
//   - raise the RMSE by 0.03%–0.4% on K/V-like rows (Gaussian, Laplace, Gaussian
//     with a 30σ outlier channel), e.g. q4:g=32 on Gaussian rows 0.07847 vs 0.07842;
//   - on real keys and values (all 5 layers of stories260K over 69 tokens,
//     rows of 32, realkv_test.go) raise the RMSE by at most 0.04% at 4 and 2 bits and
//     by 0.2% (keys) and 0.6% (values) at 8 bits, where a step is smallest against the
//     f16 rounding, while saving 17% (q4:g=32, 20 vs 24 bytes) to 25% (q2:g=32);
//   - cost most when a group rides on a large offset (values 20 ± 0.5σ): +1.8% at
//     u8:g=32, +0.5% at q4:g=32, since the zero then moves by up to 2⁻¹¹·20 while a
//     step is only 0.01.
//
// A parameter rounded to f16 moves by at most 2⁻¹¹ relative, while a 4-bit step is
// 2⁻⁴ of the range: the bytes are worth far more than the error.
//
// To keep every element within half a step of its stored parameters, the zero (group
// minimum) is rounded down and the scale rounded up to the next f16, so that
// lo + maxCode·scale ≥ max and codes never clamp.
//
// Integer codecs read NaN as 0 and saturate values to ±65504 (the f16 range, beyond
// which f16 parameters cannot describe a group). KV activations of models that run
// in f16 never leave that range.

const f16Max = 65504

// f16Up returns the smallest f16 ≥ x, saturated to the largest finite f16. x must
// not be NaN.
func f16Up(x float64) uint16 {
	if x >= f16Max {
		return 0x7bff
	}
	h := F32ToF16(float32(x)) // nearest, with x's sign (a zero too)
	if float64(F16ToF32(h)) < x {
		// One step up: away from zero for x > 0 (from +0 to the smallest subnormal),
		// toward zero for x < 0 (from −2⁻²⁴ to −0).
		if h&0x8000 != 0 {
			h--
		} else {
			h++
		}
	}
	return h
}

// f16Down returns the largest f16 ≤ x, saturated to the most negative finite f16.
// x must not be NaN.
func f16Down(x float64) uint16 {
	if x <= -f16Max {
		return 0xfbff
	}
	h := F32ToF16(float32(x)) // nearest, with x's sign (a zero too)
	if float64(F16ToF32(h)) > x {
		// One step down: toward zero for x > 0, away from zero for x < 0 (from −0 to
		// −2⁻²⁴).
		if h&0x8000 != 0 {
			h++
		} else {
			h--
		}
	}
	return h
}

func putF16(b []byte, h uint16) { b[0], b[1] = byte(h), byte(h>>8) }

func getF16(b []byte) float32 { return F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

// affineParams returns the stored f16 zero and scale for values in [lo, hi] (already
// read as groupRange does) with codes 0..maxCode, and their float32 values.
func affineParams(lo, hi float32, maxCode int) (lo16, s16 uint16, lof, sf float32) {
	lo16 = f16Down(float64(lo))
	lof = F16ToF32(lo16)
	rng := float64(hi) - float64(lof)
	if rng > 0 {
		s16 = f16Up(rng / float64(maxCode))
	}
	return lo16, s16, lof, F16ToF32(s16)
}

// quantCode returns the code of v (NaN read as 0, saturated to ±65504) for zero lo
// and reciprocal step inv, clamped to [0, maxCode], where lo and lo + maxCode/inv are
// within ±65504. Values outside that range clamp, which equals saturating them first;
// NaN takes the code of 0. The common case costs no data-dependent branch.
//
// Every product is rounded to float32 before the 0.5 is added (no fused
// multiply-add, which GOAMD64=v3 builds would otherwise use): the SIMD encoder
// computes the same steps.
func quantCode(v, lo, inv float32, maxCode int) int {
	c := float32((v-lo)*inv) + 0.5
	if !(c >= 0) { // below the range, −Inf or NaN
		c = 0
		if v != v {
			c = nanCode(lo, inv)
		}
	}
	return min(int(min(c, float32(maxCode))), maxCode)
}

// nanCode is quantCode's value of NaN (read as 0) before clamping.
func nanCode(lo, inv float32) float32 { return float32(-lo*inv) + 0.5 }

// groupRange returns the minimum and maximum over grp (not empty) of its values read
// as integer codecs read them: NaN as 0, saturated to ±65504.
func groupRange(grp []float32) (lo, hi float32) {
	lo, hi = f16Max, -f16Max
	nan := false
	for _, x := range grp {
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
		if x != x {
			nan = true
		}
	}
	if nan { // NaN reads as 0
		lo, hi = min(lo, 0), max(hi, 0)
	}
	return max(lo, -f16Max), min(hi, f16Max)
}

// reciprocal is 1/s, or 0 when s is 0 (every code is then 0).
func reciprocal(s float32) float32 {
	if s == 0 {
		return 0
	}
	return 1 / s
}

// f16Bits returns the float32 bits of the little-endian binary16 at b[0:2], exactly
// as math.Float32bits(getF16(b)), using integer operations only (vector kernels use
// it to broadcast parameters without scalar float code) and small enough to inline:
// the magnitude bits shifted into float32 position plus an exponent rebias by table
// (112 for normals, 224 for Inf and NaN), subnormals by table.
func f16Bits(b []byte) uint32 {
	h := uint32(binary.LittleEndian.Uint16(b))
	e := h >> 10 & 31
	v := (h&0x7fff)<<13 + f16Rebias[e]
	if e == 0 {
		v = f16Subnormal[h&0x3ff]
	}
	return v | (h&0x8000)<<16
}

// f16Rebias[e] turns a binary16 exponent e, shifted into float32 position, into the
// float32 exponent: +112 for normals (bias 15 → 127), +224 for 31 (Inf, NaN → 255).
var f16Rebias = func() (t [32]uint32) {
	for e := 1; e < 31; e++ {
		t[e] = 112 << 23
	}
	t[31] = 224 << 23
	return t
}()

// f16Subnormal[m] is the float32 bits of the binary16 subnormal m·2⁻²⁴ (m = 0: +0).
var f16Subnormal = func() (t [1024]uint32) {
	for m := 1; m < 1024; m++ {
		s := uint32(bits.LeadingZeros32(uint32(m)) - 21) // normalize so that bit 10 is set
		t[m] = (113-s)<<23 | (uint32(m)<<s&0x3ff)<<13
	}
	return t
}()
