package quant

// Packing of unsigned codes, shared by Affine and Channel. Codes of n elements take
// packedBytes(n, bits) bytes:
//
//   - 8 bits: element i is byte i.
//   - 4 bits: element 2j is the low nibble (bits 0..3) and element 2j+1 the high nibble
//     (bits 4..7) of byte j. An odd count leaves the last high nibble 0.
//   - 2 bits: element 4j+k occupies bits 2k..2k+1 of byte j (element 4j in the lowest
//     bits). Unused trailing bit pairs of the last byte are 0.

func packedBytes(n, bits int) int { return (n*bits + 7) / 8 }

// dotCodes returns Σ q[i]·code[i] and Σ q[i] over the len(q) codes packed in c.
func dotCodes(q []float32, c []byte, bits int) (acc, sq float32) {
	switch bits {
	case 8:
		return dot8(q, c)
	case 4:
		return dot4(q, c)
	default:
		return dot2(q, c)
	}
}

// dotPlain returns Σ q[i]·code[i] over the len(q) codes packed in c.
func dotPlain(q []float32, c []byte, bits int) float32 {
	switch bits {
	case 8:
		c = c[:len(q)]
		var a0, a1 float32
		for len(q) >= 4 {
			qq := (*[4]float32)(q)
			cc := (*[4]byte)(c)
			a0 += qq[0]*float32(cc[0]) + qq[1]*float32(cc[1])
			a1 += qq[2]*float32(cc[2]) + qq[3]*float32(cc[3])
			q, c = q[4:], c[4:]
		}
		for i, x := range q {
			a0 += x * float32(c[i])
		}
		return a0 + a1
	case 4:
		c = c[:(len(q)+1)/2]
		var a0, a1 float32
		for len(q) >= 8 {
			qq := (*[8]float32)(q)
			cc := (*[4]byte)(c)
			a0 += qq[0]*float32(cc[0]&15) + qq[1]*float32(cc[0]>>4) + qq[2]*float32(cc[1]&15) + qq[3]*float32(cc[1]>>4)
			a1 += qq[4]*float32(cc[2]&15) + qq[5]*float32(cc[2]>>4) + qq[6]*float32(cc[3]&15) + qq[7]*float32(cc[3]>>4)
			q, c = q[8:], c[4:]
		}
		for i, x := range q {
			a0 += x * float32(c[i/2]>>(4*(i&1))&15)
		}
		return a0 + a1
	}
	c = c[:(len(q)+3)/4]
	var a0, a1 float32
	for len(q) >= 8 {
		qq := (*[8]float32)(q)
		cc := (*[2]byte)(c)
		b0, b1 := cc[0], cc[1]
		a0 += qq[0]*float32(b0&3) + qq[1]*float32(b0>>2&3) + qq[2]*float32(b0>>4&3) + qq[3]*float32(b0>>6)
		a1 += qq[4]*float32(b1&3) + qq[5]*float32(b1>>2&3) + qq[6]*float32(b1>>4&3) + qq[7]*float32(b1>>6)
		q, c = q[8:], c[2:]
	}
	for i, x := range q {
		a0 += x * float32(c[i/4]>>(2*(i&3))&3)
	}
	return a0 + a1
}

func dot8(q []float32, c []byte) (acc, sq float32) {
	c = c[:len(q)]
	var a1, s1 float32
	for len(q) >= 4 {
		qq := (*[4]float32)(q)
		cc := (*[4]byte)(c)
		acc += qq[0]*float32(cc[0]) + qq[1]*float32(cc[1])
		a1 += qq[2]*float32(cc[2]) + qq[3]*float32(cc[3])
		sq += qq[0] + qq[1]
		s1 += qq[2] + qq[3]
		q, c = q[4:], c[4:]
	}
	for i, x := range q {
		acc += x * float32(c[i])
		sq += x
	}
	return acc + a1, sq + s1
}

func dot4(q []float32, c []byte) (acc, sq float32) {
	c = c[:(len(q)+1)/2]
	var a1, s1 float32
	for len(q) >= 8 {
		qq := (*[8]float32)(q)
		cc := (*[4]byte)(c)
		acc += qq[0]*float32(cc[0]&15) + qq[1]*float32(cc[0]>>4) + qq[2]*float32(cc[1]&15) + qq[3]*float32(cc[1]>>4)
		a1 += qq[4]*float32(cc[2]&15) + qq[5]*float32(cc[2]>>4) + qq[6]*float32(cc[3]&15) + qq[7]*float32(cc[3]>>4)
		sq += qq[0] + qq[1] + qq[2] + qq[3]
		s1 += qq[4] + qq[5] + qq[6] + qq[7]
		q, c = q[8:], c[4:]
	}
	for i, x := range q {
		acc += x * float32(c[i/2]>>(4*(i&1))&15)
		sq += x
	}
	return acc + a1, sq + s1
}

func dot2(q []float32, c []byte) (acc, sq float32) {
	c = c[:(len(q)+3)/4]
	var a1, s1 float32
	for len(q) >= 8 {
		qq := (*[8]float32)(q)
		cc := (*[2]byte)(c)
		b0, b1 := cc[0], cc[1]
		acc += qq[0]*float32(b0&3) + qq[1]*float32(b0>>2&3) + qq[2]*float32(b0>>4&3) + qq[3]*float32(b0>>6)
		a1 += qq[4]*float32(b1&3) + qq[5]*float32(b1>>2&3) + qq[6]*float32(b1>>4&3) + qq[7]*float32(b1>>6)
		sq += qq[0] + qq[1] + qq[2] + qq[3]
		s1 += qq[4] + qq[5] + qq[6] + qq[7]
		q, c = q[8:], c[2:]
	}
	for i, x := range q {
		acc += x * float32(c[i/4]>>(2*(i&3))&3)
		sq += x
	}
	return acc + a1, sq + s1
}

// addCodes performs dst[i] += a·code[i] + b over the len(dst) codes packed in c.
func addCodes(dst []float32, a, b float32, c []byte, bits int) {
	switch bits {
	case 8:
		c = c[:len(dst)]
		for i := range dst {
			dst[i] += a*float32(c[i]) + b
		}
	case 4:
		c = c[:(len(dst)+1)/2]
		for len(dst) >= 2 {
			dd := (*[2]float32)(dst)
			x := c[0]
			dd[0] += a*float32(x&15) + b
			dd[1] += a*float32(x>>4) + b
			dst, c = dst[2:], c[1:]
		}
		if len(dst) == 1 {
			dst[0] += a*float32(c[0]&15) + b
		}
	default:
		c = c[:(len(dst)+3)/4]
		for len(dst) >= 4 {
			dd := (*[4]float32)(dst)
			x := c[0]
			dd[0] += a*float32(x&3) + b
			dd[1] += a*float32(x>>2&3) + b
			dd[2] += a*float32(x>>4&3) + b
			dd[3] += a*float32(x>>6) + b
			dst, c = dst[4:], c[1:]
		}
		for i := range dst {
			dst[i] += a*float32(c[0]>>(2*i)&3) + b
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
// packed into c (packedBytes(len(src), bits) bytes, fully written). src values must be
// sanitized and ≥ lo.
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
