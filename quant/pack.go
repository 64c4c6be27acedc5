package quant

import "encoding/binary"

// Packing of unsigned codes, shared by Affine and Channel. Codes of n elements take
// packedBytes(n, bits) bytes:
//
//   - 8 bits: element i is byte i.
//   - 4 bits: element 2j is the low nibble (bits 0..3) and element 2j+1 the high nibble
//     (bits 4..7) of byte j. An odd count leaves the last high nibble 0.
//   - 2 bits: element 4j+k occupies bits 2k..2k+1 of byte j (element 4j in the lowest
//     bits). Unused trailing bit pairs of the last byte are 0.
//   - 3 bits: the codes are one little-endian bit stream, element i in bits 3i..3i+2
//     (the lowest bit first). Eight elements fill three bytes: with w = b0 | b1<<8 |
//     b2<<16, element 8j+k is w>>3k & 7, so byte 3j holds elements 8j (bits 0..2),
//     8j+1 (bits 3..5) and the low two bits of 8j+2 (bits 6..7); byte 3j+1 the high
//     bit of 8j+2 (bit 0), 8j+3 (bits 1..3), 8j+4 (bits 4..6) and the low bit of 8j+5
//     (bit 7); byte 3j+2 the high two bits of 8j+5 (bits 0..1), 8j+6 (bits 2..4) and
//     8j+7 (bits 5..7). Unused trailing bits of the last byte are 0.

func packedBytes(n, bits int) int { return (n*bits + 7) / 8 }

// code3 returns element i of 3-bit codes packed in c.
func code3(c []byte, i int) uint32 {
	b := 3 * i
	w := uint32(c[b>>3])
	if b>>3+1 < len(c) {
		w |= uint32(c[b>>3+1]) << 8
	}
	return w >> (b & 7) & 7
}

// word3 returns the 24-bit word of the eight 3-bit codes in c[0:3].
func word3(c []byte) uint32 { return uint32(c[0]) | uint32(c[1])<<8 | uint32(c[2])<<16 }

// dot3 is dot8 for 3-bit codes.
func dot3(q []float32, c []byte) (acc, sq float32) {
	c = c[:packedBytes(len(q), 3)]
	t := &codeF32
	var a1, s1 float32
	for len(q) >= 8 && len(c) >= 3 {
		qq := (*[8]float32)(q)
		w := word3(c)
		acc += qq[0]*t[w&7] + qq[1]*t[w>>3&7] + qq[2]*t[w>>6&7] + qq[3]*t[w>>9&7]
		a1 += qq[4]*t[w>>12&7] + qq[5]*t[w>>15&7] + qq[6]*t[w>>18&7] + qq[7]*t[w>>21&7]
		sq += qq[0] + qq[1] + qq[2] + qq[3]
		s1 += qq[4] + qq[5] + qq[6] + qq[7]
		q, c = q[8:], c[3:]
	}
	for i, x := range q {
		acc += x * t[code3(c, i)]
		sq += x
	}
	return acc + a1, sq + s1
}

// codeF32[k] is float32(k). Reading code values through this table is measurably
// faster than converting integers to float in the scalar loops below (about 25% on
// 128-value dots), because it turns a conversion into a load.
var codeF32 = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return t
}()

// dot8, dot4 and dot2 return Σ q[i]·code[i] and Σ q[i] over the len(q) codes packed
// in c.
func dot8(q []float32, c []byte) (acc, sq float32) {
	c = c[:len(q)]
	t := &codeF32
	var a1, s1 float32
	for len(q) >= 4 && len(c) >= 4 {
		qq := (*[4]float32)(q)
		cc := (*[4]byte)(c)
		acc += qq[0]*t[cc[0]] + qq[1]*t[cc[1]]
		a1 += qq[2]*t[cc[2]] + qq[3]*t[cc[3]]
		sq += qq[0] + qq[1]
		s1 += qq[2] + qq[3]
		q, c = q[4:], c[4:]
	}
	for i, x := range q {
		acc += x * t[c[i]]
		sq += x
	}
	return acc + a1, sq + s1
}

func dot4(q []float32, c []byte) (acc, sq float32) {
	c = c[:(len(q)+1)/2]
	t := &codeF32
	var a1, s1 float32
	for len(q) >= 8 && len(c) >= 4 {
		qq := (*[8]float32)(q)
		w := binary.LittleEndian.Uint32(c)
		acc += qq[0]*t[w&15] + qq[1]*t[w>>4&15] + qq[2]*t[w>>8&15] + qq[3]*t[w>>12&15]
		a1 += qq[4]*t[w>>16&15] + qq[5]*t[w>>20&15] + qq[6]*t[w>>24&15] + qq[7]*t[w>>28]
		sq += qq[0] + qq[1] + qq[2] + qq[3]
		s1 += qq[4] + qq[5] + qq[6] + qq[7]
		q, c = q[8:], c[4:]
	}
	for i, x := range q {
		acc += x * t[c[i/2]>>(4*(i&1))&15]
		sq += x
	}
	return acc + a1, sq + s1
}

func dot2(q []float32, c []byte) (acc, sq float32) {
	c = c[:(len(q)+3)/4]
	t := &codeF32
	var a1, s1 float32
	for len(q) >= 16 && len(c) >= 4 {
		qq := (*[16]float32)(q)
		w := binary.LittleEndian.Uint32(c)
		acc += qq[0]*t[w&3] + qq[1]*t[w>>2&3] + qq[2]*t[w>>4&3] + qq[3]*t[w>>6&3] +
			qq[4]*t[w>>8&3] + qq[5]*t[w>>10&3] + qq[6]*t[w>>12&3] + qq[7]*t[w>>14&3]
		a1 += qq[8]*t[w>>16&3] + qq[9]*t[w>>18&3] + qq[10]*t[w>>20&3] + qq[11]*t[w>>22&3] +
			qq[12]*t[w>>24&3] + qq[13]*t[w>>26&3] + qq[14]*t[w>>28&3] + qq[15]*t[w>>30]
		sq += qq[0] + qq[1] + qq[2] + qq[3] + qq[4] + qq[5] + qq[6] + qq[7]
		s1 += qq[8] + qq[9] + qq[10] + qq[11] + qq[12] + qq[13] + qq[14] + qq[15]
		q, c = q[16:], c[4:]
	}
	for i, x := range q {
		acc += x * t[c[i/4]>>(2*(i&3))&3]
		sq += x
	}
	return acc + a1, sq + s1
}

// dotPlain returns Σ q[i]·code[i] over the len(q) codes packed in c.
func dotPlain(q []float32, c []byte, bits int) float32 {
	t := &codeF32
	var a0, a1 float32
	switch bits {
	case 8:
		c = c[:len(q)]
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
	case 4:
		c = c[:(len(q)+1)/2]
		for len(q) >= 8 && len(c) >= 4 {
			qq := (*[8]float32)(q)
			w := binary.LittleEndian.Uint32(c)
			a0 += qq[0]*t[w&15] + qq[1]*t[w>>4&15] + qq[2]*t[w>>8&15] + qq[3]*t[w>>12&15]
			a1 += qq[4]*t[w>>16&15] + qq[5]*t[w>>20&15] + qq[6]*t[w>>24&15] + qq[7]*t[w>>28]
			q, c = q[8:], c[4:]
		}
		for i, x := range q {
			a0 += x * t[c[i/2]>>(4*(i&1))&15]
		}
	case 3:
		a, _ := dot3(q, c)
		return a
	default:
		c = c[:(len(q)+3)/4]
		for len(q) >= 16 && len(c) >= 4 {
			qq := (*[16]float32)(q)
			w := binary.LittleEndian.Uint32(c)
			a0 += qq[0]*t[w&3] + qq[1]*t[w>>2&3] + qq[2]*t[w>>4&3] + qq[3]*t[w>>6&3] +
				qq[4]*t[w>>8&3] + qq[5]*t[w>>10&3] + qq[6]*t[w>>12&3] + qq[7]*t[w>>14&3]
			a1 += qq[8]*t[w>>16&3] + qq[9]*t[w>>18&3] + qq[10]*t[w>>20&3] + qq[11]*t[w>>22&3] +
				qq[12]*t[w>>24&3] + qq[13]*t[w>>26&3] + qq[14]*t[w>>28&3] + qq[15]*t[w>>30]
			q, c = q[16:], c[4:]
		}
		for i, x := range q {
			a0 += x * t[c[i/4]>>(2*(i&3))&3]
		}
	}
	return a0 + a1
}

// addCodes performs dst[i] += a·code[i] + b over the len(dst) codes packed in c.
func addCodes(dst []float32, a, b float32, c []byte, bits int) {
	t := &codeF32
	switch bits {
	case 8:
		c = c[:len(dst)]
		for len(dst) >= 4 && len(c) >= 4 {
			dd := (*[4]float32)(dst)
			cc := (*[4]byte)(c)
			dd[0] += a*t[cc[0]] + b
			dd[1] += a*t[cc[1]] + b
			dd[2] += a*t[cc[2]] + b
			dd[3] += a*t[cc[3]] + b
			dst, c = dst[4:], c[4:]
		}
		for i := range dst {
			dst[i] += a*t[c[i]] + b
		}
	case 4:
		c = c[:(len(dst)+1)/2]
		for len(dst) >= 8 && len(c) >= 4 {
			dd := (*[8]float32)(dst)
			w := binary.LittleEndian.Uint32(c)
			dd[0] += a*t[w&15] + b
			dd[1] += a*t[w>>4&15] + b
			dd[2] += a*t[w>>8&15] + b
			dd[3] += a*t[w>>12&15] + b
			dd[4] += a*t[w>>16&15] + b
			dd[5] += a*t[w>>20&15] + b
			dd[6] += a*t[w>>24&15] + b
			dd[7] += a*t[w>>28] + b
			dst, c = dst[8:], c[4:]
		}
		for i := range dst {
			dst[i] += a*t[c[i/2]>>(4*(i&1))&15] + b
		}
	case 3:
		c = c[:packedBytes(len(dst), 3)]
		for len(dst) >= 8 && len(c) >= 3 {
			dd := (*[8]float32)(dst)
			w := word3(c)
			for k := range dd {
				dd[k] += a*t[w>>(3*k)&7] + b
			}
			dst, c = dst[8:], c[3:]
		}
		for i := range dst {
			dst[i] += a*t[code3(c, i)] + b
		}
	default:
		c = c[:(len(dst)+3)/4]
		for len(dst) >= 8 && len(c) >= 2 {
			dd := (*[8]float32)(dst)
			w := uint32(c[0]) | uint32(c[1])<<8
			dd[0] += a*t[w&3] + b
			dd[1] += a*t[w>>2&3] + b
			dd[2] += a*t[w>>4&3] + b
			dd[3] += a*t[w>>6&3] + b
			dd[4] += a*t[w>>8&3] + b
			dd[5] += a*t[w>>10&3] + b
			dd[6] += a*t[w>>12&3] + b
			dd[7] += a*t[w>>14] + b
			dst, c = dst[8:], c[2:]
		}
		for i := range dst {
			dst[i] += a*t[c[i/4]>>(2*(i&3))&3] + b
		}
	}
}

// decodeCodes writes dst[i] = lo + s·code[i] over the len(dst) codes packed in c.
func decodeCodes(dst []float32, lo, s float32, c []byte, bits int) {
	for i := range dst {
		dst[i] = 0
	}
	addCodes(dst, s, lo, c, bits)
}

// packCodes quantizes src with zero lo and reciprocal step inv into codes 0..2^bits−1
// packed into c (packedBytes(len(src), bits) bytes, fully written); see quantCode.
func packCodes(c []byte, src []float32, lo, inv float32, bits int) {
	maxCode := 1<<bits - 1
	switch bits {
	case 8:
		c = c[:len(src)]
		for i, v := range src {
			c[i] = byte(quantCode(v, lo, inv, maxCode))
		}
	case 4:
		c = c[:(len(src)+1)/2]
		for j := range c {
			x := quantCode(src[2*j], lo, inv, maxCode)
			if 2*j+1 < len(src) {
				x |= quantCode(src[2*j+1], lo, inv, maxCode) << 4
			}
			c[j] = byte(x)
		}
	case 3:
		c = c[:packedBytes(len(src), 3)]
		clear(c)
		for i, v := range src {
			put3(c, i, uint32(quantCode(v, lo, inv, maxCode)))
		}
	default:
		c = c[:(len(src)+3)/4]
		for j := range c {
			var x int
			for k := 0; k < 4 && 4*j+k < len(src); k++ {
				x |= quantCode(src[4*j+k], lo, inv, maxCode) << (2 * k)
			}
			c[j] = byte(x)
		}
	}
}

// put3 ORs the 3-bit code k into element i of c (whose bits there are 0).
func put3(c []byte, i int, k uint32) {
	b := 3 * i
	w := k << (b & 7)
	c[b>>3] |= byte(w)
	if w > 0xff {
		c[b>>3+1] |= byte(w >> 8)
	}
}
