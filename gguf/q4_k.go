package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Q4_K super-block: 256 values in 144 bytes, as 8 sub-blocks of 32 values.
//
//	bytes 0–1     d       f16 super-block scale of the sub-block scales, little-endian
//	bytes 2–3     dmin    f16 super-block scale of the sub-block minimums, little-endian
//	bytes 4–15    scales  12 bytes holding eight 6-bit scales sc[i] and eight 6-bit
//	                      minimums m[i] (i = 0..7, s = scales):
//	                        i < 4:  sc[i] = s[i] & 63          m[i] = s[i+4] & 63
//	                        i ≥ 4:  sc[i] = s[i+4] & 15 | (s[i-4] >> 6) << 4
//	                                m[i]  = s[i+4] >> 4 | (s[i]   >> 6) << 4
//	bytes 16–143  qs      128 bytes of 4-bit codes in four groups of 32 bytes; group g
//	                      (bytes 16+32g .. 16+32g+31) holds sub-block 2g in its low
//	                      nibbles and sub-block 2g+1 in its high nibbles: value
//	                      64g + l is qs[32g+l] & 15, value 64g + 32 + l is qs[32g+l] >> 4
//
// value in sub-block i = d · sc[i] · code − dmin · m[i]

// scaleMinK4 unpacks the 6-bit scale and minimum of sub-block i (0..7) of a Q4_K block.
func scaleMinK4(i int, s []byte) (sc, m uint8) {
	if i < 4 {
		return s[i] & 63, s[i+4] & 63
	}
	return s[i+4]&15 | (s[i-4]>>6)<<4, s[i+4]>>4 | (s[i]>>6)<<4
}

func dequantQ4_K(dst *[256]float32, b *[144]byte) {
	d, dmin := f16At(b[0:]), f16At(b[2:])
	scales := b[4:16]
	for g := 0; g < 4; g++ {
		sc0, m0 := scaleMinK4(2*g, scales)
		sc1, m1 := scaleMinK4(2*g+1, scales)
		d0, o0 := d*float32(sc0), dmin*float32(m0)
		d1, o1 := d*float32(sc1), dmin*float32(m1)
		qs := b[16+32*g : 16+32*g+32]
		out := dst[64*g : 64*g+64]
		for l, q := range qs {
			out[l] = d0*float32(q&15) - o0
			out[32+l] = d1*float32(q>>4) - o1
		}
	}
}

// QuantizeQ4_K encodes src into Q4_K super-blocks in dst with a plain min/max
// quantizer (not llama.cpp's search for error-minimizing scales: good for synthetic
// models and tests, a little less accurate on real weights). Per sub-block of 32
// values x, the minimum m = ⌈−min(0, min x)/dmin⌉ against dmin = max(−min(0, min x))/63,
// then the scale sc = ⌈s/d⌉ with s = (max x + dmin·m)/15 against d = max s/63 (d and
// dmin stored as f16, rounded up so that sc and m ≤ 63 cover every sub-block), and each
// code round((x + dmin·m)/(d·sc)) clamped to [0, 15]: every value is within half a
// step d·sc of its code's value. len(src) must be a multiple of 256 and len(dst) equal
// len(src)/256 · 144. Non-finite inputs, and values so large that d or dmin overflows
// binary16, are rejected; on error dst is partly written.
func QuantizeQ4_K(dst []byte, src []float32) error {
	if len(src)%256 != 0 {
		return fmt.Errorf("gguf: quantize Q4_K: %d values is not a multiple of 256", len(src))
	}
	if len(dst) != len(src)/256*144 {
		return fmt.Errorf("gguf: quantize Q4_K: destination has %d bytes, want %d for %d values", len(dst), len(src)/256*144, len(src))
	}
	for b := 0; b < len(src)/256; b++ {
		x := (*[256]float32)(src[256*b:])
		out := (*[144]byte)(dst[144*b:])
		var lo, hi [8]float32
		var maxMin float32
		for j := range 8 {
			lo[j], hi[j] = 0, float32(math.Inf(-1))
			for i, v := range x[32*j : 32*j+32] {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("gguf: quantize Q4_K: value %d is %v", 256*b+32*j+i, v)
				}
				lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
			}
			maxMin = max(maxMin, -lo[j])
		}
		hm, dmin, err := f16AtLeast(maxMin / 63)
		if err != nil {
			return fmt.Errorf("gguf: quantize Q4_K: block %d: minimum %v: %w", b, -maxMin, err)
		}
		var sc, m [8]uint8
		var s [8]float32
		var maxS float32
		for j := range 8 {
			if dmin > 0 {
				m[j] = uint8(min(63, math.Ceil(float64(-lo[j]/dmin))))
			}
			s[j] = (hi[j] + dmin*float32(m[j])) / 15
			maxS = max(maxS, s[j])
		}
		hd, d, err := f16AtLeast(maxS / 63)
		if err != nil {
			return fmt.Errorf("gguf: quantize Q4_K: block %d: scale %v: %w", b, maxS, err)
		}
		binary.LittleEndian.PutUint16(out[0:], hd)
		binary.LittleEndian.PutUint16(out[2:], hm)
		for j := range 8 {
			if d > 0 {
				sc[j] = uint8(min(63, math.Ceil(float64(s[j]/d))))
			}
		}
		p := out[4:16]
		for i := range 4 {
			p[i] = sc[i] | sc[i+4]>>4<<6
			p[i+4] = m[i] | m[i+4]>>4<<6
			p[i+8] = sc[i+4]&15 | m[i+4]&15<<4
		}
		for g := range 4 {
			for l := range 32 {
				var c [2]uint8
				for h := range 2 {
					j := 2*g + h
					if step := d * float32(sc[j]); step > 0 {
						q := math.Round(float64((x[32*j+l] + dmin*float32(m[j])) / step))
						c[h] = uint8(min(15, max(0, q)))
					}
				}
				out[16+32*g+l] = c[0] | c[1]<<4
			}
		}
	}
	return nil
}

// f16AtLeast returns the smallest binary16 value h ≥ v ≥ 0 (as bits and as float32),
// or an error when v exceeds the largest finite one.
func f16AtLeast(v float32) (uint16, float32, error) {
	h := F32ToF16(v)
	if f := F16ToF32(h); f < v {
		h++ // the next binary16 up (v ≥ 0: bit patterns order like values)
	}
	f := F16ToF32(h)
	if math.IsInf(float64(f), 0) {
		return 0, 0, fmt.Errorf("%v is beyond binary16", v)
	}
	return h, f, nil
}
