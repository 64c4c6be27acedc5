package quant

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// Reference decoders written from the layout documentation alone (byte offsets, f16
// parameters, code bit positions), checked against Decode on every conformance row
// kind: the documented layout is the one the code writes.

func refCode(codes []byte, i, bits int) int {
	bit := i * bits
	w := int(codes[bit/8])
	if bit/8+1 < len(codes) { // a 3-bit code may straddle two bytes
		w |= int(codes[bit/8+1]) << 8
	}
	return w >> (bit % 8) & (1<<bits - 1)
}

func refDecodeAffine(a Affine, src []byte, d int) []float32 {
	out := make([]float32, 0, d)
	g := a.Group
	if g == 0 || g > d {
		g = d
	}
	for start := 0; start < d; start += g {
		n := min(g, d-start)
		scale := F16ToF32(binary.LittleEndian.Uint16(src[0:]))
		lo := F16ToF32(binary.LittleEndian.Uint16(src[2:]))
		codes := src[4 : 4+(n*a.Bits+7)/8]
		for i := range n {
			out = append(out, lo+float32(refCode(codes, i, a.Bits))*scale)
		}
		src = src[4+len(codes):]
	}
	return out
}

func refDecodeChannel(c Channel, src []byte, t, d int) []float32 {
	out := make([]float32, t*d)
	rowBytes := (d*c.Bits + 7) / 8
	for i := range t {
		codes := src[4*d+i*rowBytes:]
		for ch := range d {
			scale := F16ToF32(binary.LittleEndian.Uint16(src[4*ch:]))
			lo := F16ToF32(binary.LittleEndian.Uint16(src[4*ch+2:]))
			out[i*d+ch] = lo + float32(refCode(codes, ch, c.Bits))*scale
		}
	}
	return out
}

func refDecodeInt8(src []byte, d int) []float32 {
	scale := F16ToF32(binary.LittleEndian.Uint16(src))
	out := make([]float32, d)
	for i := range out {
		out[i] = float32(int8(src[2+i])) * scale
	}
	return out
}

func TestLayoutReference(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	same := func(name string, got, want []float32) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%s: element %d: Decode %v, layout reference %v", name, i, got[i], want[i])
			}
		}
	}
	for _, d := range testLengths {
		for _, kind := range rowKinds {
			src := kind.gen(r, d)
			for _, c := range allRowCodecs() {
				var ref func([]byte) []float32
				switch c := c.(type) {
				case Affine:
					ref = func(b []byte) []float32 { return refDecodeAffine(c, b, d) }
				case Int8:
					ref = func(b []byte) []float32 { return refDecodeInt8(b, d) }
				default:
					continue
				}
				enc := make([]byte, c.RowBytes(d))
				c.Encode(enc, src)
				got := make([]float32, d)
				c.Decode(got, enc)
				same(c.Name()+"/"+kind.name, got, ref(enc))
			}
		}
	}
	for _, bits := range []int{8, 4, 2} {
		c := Channel{Bits: bits}
		for _, sh := range [][2]int{{1, 5}, {3, 7}, {32, 128}, {9, 33}} {
			tt, d := sh[0], sh[1]
			src := gaussRow(r, tt*d, 2)
			enc := make([]byte, c.BlockBytes(tt, d))
			c.Encode(enc, src, tt, d)
			got := make([]float32, tt*d)
			c.Decode(got, enc, tt, d)
			same(c.Name(), got, refDecodeChannel(c, enc, tt, d))
		}
	}
}
