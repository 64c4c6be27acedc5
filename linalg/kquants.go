package linalg

import "kvq/gguf"

// Native products of the weight types Q5_K, Q3_K, Q2_K, IQ4_NL and IQ4_XS against
// activations quantized per 32-value block to int8 codes xq with float32 scales xd
// (and code sums xsum: quantQ8, blockSums), as for Q4_K. The byte layouts are in
// package gguf (q5_k.go, q3_k.go, q2_k.go, iq4.go). Each activation block b lines up
// with 32 weights of one super-block, so every kernel takes exact integer dots per
// block (or per 16-value half, where the type's scales are per 16 values) and then
// scales them in float32, in an order fixed per row and token: a token's result does
// not depend on the other tokens of a product.
//
// The functions here are the scalar versions; kernel sets may replace them (rowsK).

// Block sizes of the types in bytes.
const (
	q5KBlockBytes   = 176
	q3KBlockBytes   = 110
	q2KBlockBytes   = 84
	iq4NLBlockBytes = 18
	iq4XSBlockBytes = 136
)

// kRowsFunc is the rows kernel of a type: out[r] = the dot of row w[r·rowBytes:] with
// the activations, for r < len(out).
type kRowsFunc func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)

// kKernel is a type's rows kernel in a kernel set; sums: it reads the activation
// blocks' code sums xsum (else it may be given nil).
type kKernel struct {
	rows kRowsFunc
	sums bool
}

// dotQ5KScalar is the dot of one Q5_K row (len(xd)/8 super-blocks) with the
// activations: Σ_j xd_j·(d·sc_j·Σ code·xq − dmin·m_j·xsum_j), as dotQ4KScalar.
func dotQ5KScalar(w []byte, xq []int8, xd []float32, xsum []int32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q5KBlockBytes]
	xq = xq[:nsb*256]
	xsum = xsum[:nsb*8]
	var s float32
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q5KBlockBytes]byte)(w[sb*q5KBlockBytes:])
		d := f16Table[uint16(blk[0])|uint16(blk[1])<<8]
		dmin := f16Table[uint16(blk[2])|uint16(blk[3])<<8]
		sc, m := q4KScales((*[12]byte)(blk[4:16]))
		qh := (*[32]byte)(blk[16:48])
		for g := 0; g < 4; g++ {
			b0 := 8*sb + 2*g
			q0 := (*[blockElems]int8)(xq[b0*blockElems:])
			q1 := (*[blockElems]int8)(xq[(b0+1)*blockElems:])
			qs := (*[32]byte)(blk[48+32*g:])
			var a0, a1 int32
			for l, c := range qs {
				h := qh[l] >> (2 * g)
				a0 += int32(c&15|(h&1)<<4) * int32(q0[l])
				a1 += int32(c>>4|(h&2)<<3) * int32(q1[l])
			}
			s += d*float32(sc[2*g])*xd[b0]*float32(a0) - dmin*float32(m[2*g])*xd[b0]*float32(xsum[b0])
			s += d*float32(sc[2*g+1])*xd[b0+1]*float32(a1) - dmin*float32(m[2*g+1])*xd[b0+1]*float32(xsum[b0+1])
		}
	}
	return s
}

// dotQ3KScalar is the dot of one Q3_K row with the activations:
// d·Σ_b xd_b·(sc_2b'·Σ_{first 16} code·xq + sc_2b'+1·Σ_{last 16} code·xq), the sums
// over the integers of each activation block, b' = b mod 8.
func dotQ3KScalar(w []byte, xq []int8, xd []float32, _ []int32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q3KBlockBytes]
	xq = xq[:nsb*256]
	var s float32
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q3KBlockBytes]byte)(w[sb*q3KBlockBytes:])
		d := f16Table[uint16(blk[108])|uint16(blk[109])<<8]
		sc := gguf.ScalesQ3K((*[12]byte)(blk[96:108]))
		hm := (*[32]byte)(blk[0:32])
		var acc float32
		for j := 0; j < 8; j++ { // activation block j: values 32j..32j+31
			h, k := j/4, j%4
			qs := (*[32]byte)(blk[32+32*h:])
			q := (*[blockElems]int8)(xq[(8*sb+j)*blockElems:])
			var a0, a1 int32
			for l := 0; l < 16; l++ {
				c := int32(qs[l]>>(2*k)&3) - 4 + 4*int32(hm[l]>>j&1)
				a0 += c * int32(q[l])
				c = int32(qs[l+16]>>(2*k)&3) - 4 + 4*int32(hm[l+16]>>j&1)
				a1 += c * int32(q[l+16])
			}
			acc += xd[8*sb+j] * float32(int32(sc[2*j])*a0+int32(sc[2*j+1])*a1)
		}
		s += d * acc
	}
	return s
}

// dotQ2KScalar is the dot of one Q2_K row with the activations: per super-block
// d·Σ_b xd_b·(sc·Σ code·xq over each 16-value half) − dmin·Σ_b xd_b·(m·Σ xq over each
// half), the sums integers.
func dotQ2KScalar(w []byte, xq []int8, xd []float32, _ []int32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q2KBlockBytes]
	xq = xq[:nsb*256]
	var s float32
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q2KBlockBytes]byte)(w[sb*q2KBlockBytes:])
		d := f16Table[uint16(blk[80])|uint16(blk[81])<<8]
		dmin := f16Table[uint16(blk[82])|uint16(blk[83])<<8]
		var accD, accM float32
		for j := 0; j < 8; j++ {
			h, k := j/4, j%4
			qs := (*[32]byte)(blk[16+32*h:])
			q := (*[blockElems]int8)(xq[(8*sb+j)*blockElems:])
			var a0, a1, x0, x1 int32
			for l := 0; l < 16; l++ {
				a0 += int32(qs[l]>>(2*k)&3) * int32(q[l])
				x0 += int32(q[l])
				a1 += int32(qs[l+16]>>(2*k)&3) * int32(q[l+16])
				x1 += int32(q[l+16])
			}
			s0, s1 := blk[2*j], blk[2*j+1]
			accD += xd[8*sb+j] * float32(int32(s0&15)*a0+int32(s1&15)*a1)
			accM += xd[8*sb+j] * float32(int32(s0>>4)*x0+int32(s1>>4)*x1)
		}
		s += d*accD - dmin*accM
	}
	return s
}

// dotIQ4NLScalar is the dot of one IQ4_NL row (len(xd) blocks of 32) with the
// activations: Σ_b d_b·xd_b·Σ level·xq.
func dotIQ4NLScalar(w []byte, xq []int8, xd []float32, _ []int32) float32 {
	nb := len(xd)
	w = w[:nb*iq4NLBlockBytes]
	xq = xq[:nb*blockElems]
	var s float32
	for b := 0; b < nb; b++ {
		blk := (*[iq4NLBlockBytes]byte)(w[b*iq4NLBlockBytes:])
		a := dotIQ4Codes((*[16]byte)(blk[2:18]), (*[blockElems]int8)(xq[b*blockElems:]))
		s += f16Table[uint16(blk[0])|uint16(blk[1])<<8] * xd[b] * float32(a)
	}
	return s
}

// dotIQ4Codes is the exact dot of 32 IQ4 codes (value l in the low nibble of qs[l],
// value 16+l in its high nibble, each the index of a level of gguf.IQ4NLValues) with q.
func dotIQ4Codes(qs *[16]byte, q *[blockElems]int8) int32 {
	var a int32
	for l, c := range qs {
		a += int32(gguf.IQ4NLValues[c&15])*int32(q[l]) + int32(gguf.IQ4NLValues[c>>4])*int32(q[l+16])
	}
	return a
}

// dotIQ4XSScalar is the dot of one IQ4_XS row with the activations:
// d·Σ_b xd_b·ls_b'·Σ level·xq per super-block, b' = b mod 8.
func dotIQ4XSScalar(w []byte, xq []int8, xd []float32, _ []int32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*iq4XSBlockBytes]
	xq = xq[:nsb*256]
	var s float32
	for sb := 0; sb < nsb; sb++ {
		blk := (*[iq4XSBlockBytes]byte)(w[sb*iq4XSBlockBytes:])
		var acc float32
		for j := 0; j < 8; j++ {
			ls := gguf.ScaleIQ4XS(blk, j)
			a := dotIQ4Codes((*[16]byte)(blk[8+16*j:]), (*[blockElems]int8)(xq[(8*sb+j)*blockElems:]))
			acc += xd[8*sb+j] * float32(ls*a)
		}
		s += f16Table[uint16(blk[0])|uint16(blk[1])<<8] * acc
	}
	return s
}

// kRows makes the rows kernel of a one-row dot over rows of units·unitBytes bytes,
// units = len(xd)/blocksPerUnit.
func kRows(dot func([]byte, []int8, []float32, []int32) float32, unitBytes, blocksPerUnit int) kRowsFunc {
	return func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
		rb := len(xd) / blocksPerUnit * unitBytes
		for r := range out {
			out[r] = dot(w[r*rowBytes:r*rowBytes+rb], xq, xd, xsum)
		}
	}
}

// scalarKRows are the scalar rows kernels of these types.
var scalarKRows = map[gguf.TensorType]kKernel{
	gguf.TypeQ5_K:   {kRows(dotQ5KScalar, q5KBlockBytes, 8), true},
	gguf.TypeQ3_K:   {kRows(dotQ3KScalar, q3KBlockBytes, 8), false},
	gguf.TypeQ2_K:   {kRows(dotQ2KScalar, q2KBlockBytes, 8), false},
	gguf.TypeIQ4_NL: {kRows(dotIQ4NLScalar, iq4NLBlockBytes, 1), false},
	gguf.TypeIQ4_XS: {kRows(dotIQ4XSScalar, iq4XSBlockBytes, 8), false},
}
