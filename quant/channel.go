package quant

import (
	"fmt"
	"strconv"
)

// Channel is the KIVI key codec: a block of t tokens × d channels is quantized per
// channel, each channel with one f16 scale and zero over the block's t tokens:
// value[i][c] = lo_c + code[i][c]·scale_c, lo_c the channel minimum rounded down to
// f16, scale_c = (max_c − lo_c)/(2^Bits − 1) rounded up to f16. Bits is 8, 4, 3 or 2.
// KIVI values use Affine (per token).
//
// Layout of a block of t tokens × d channels (t, d > 0), 4·d + t·⌈d·Bits/8⌉ bytes:
//
//	bytes 4c..4c+1   scale of channel c, little-endian IEEE-754 binary16, c = 0..d−1
//	bytes 4c+2..4c+3 lo (zero) of channel c, little-endian IEEE-754 binary16
//	then t token rows of ⌈d·Bits/8⌉ bytes each, token 0 first; a row holds the codes
//	of channels 0..d−1 packed as in pack.go (8-bit one per byte; 4-bit channel 2j in
//	the low nibble and 2j+1 in the high nibble of byte j; 2-bit channel 4j+k in bits
//	2k..2k+1 of byte j; unused bits of a row's last byte are 0).
//
// Parameters are f16, a measured choice (see params.go). A block with t = 0 or
// d = 0 is 0 bytes. For t = 32, d = 128: 4608 (8-bit), 2560
// (4-bit), 2048 (3-bit), 1536 (2-bit) bytes. 3-bit blocks have no SIMD kernels of
// their own: they are decoded (DecodeBlockRows) and scored by MultiDot.
//
// Error: every value x with |x| ≤ 65504 decodes within scale_c/2 of x. NaN is stored
// as 0 and values beyond ±65504 saturate (see params.go).
//
// Names: "kivi8", "kivi4", "kivi3", "kivi2".
//
// On real keys (stories260K, all layers, blocks of 32 tokens; realkv_test.go) per
// channel quantization halves the error of per-token-and-head groups: RMSE 0.48 vs
// 0.88 at 4 bits, 2.4 vs 4.5 at 2 bits, because keys carry large fixed-channel
// magnitudes.
type Channel struct {
	Bits int // bits per code: 8, 4, 3 or 2
}

// Validate reports whether c is a usable codec. BlockBytes, Encode, Decode and Dot
// of a Channel that fails Validate panic.
func (c Channel) Validate() error {
	if c.Bits != 8 && c.Bits != 4 && c.Bits != 3 && c.Bits != 2 {
		return fmt.Errorf("%w: channel codec: %d bits unsupported (want 8, 4, 3 or 2)", ErrInvalid, c.Bits)
	}
	return nil
}

func (c Channel) mustValid() {
	if err := c.Validate(); err != nil {
		panic(err)
	}
}

// Name implements ChannelCodec.
func (c Channel) Name() string { return "kivi" + strconv.Itoa(c.Bits) }

// BlockBytes implements ChannelCodec.
func (c Channel) BlockBytes(t, d int) int {
	c.mustValid()
	if t <= 0 || d <= 0 {
		return 0
	}
	return 4*d + t*packedBytes(d, c.Bits)
}

// Encode implements ChannelCodec.
func (c Channel) Encode(dst []byte, src []float32, t, d int) {
	n := c.BlockBytes(t, d)
	if n == 0 {
		return
	}
	dst = dst[:n]
	src = src[:t*d]
	maxCode := 1<<c.Bits - 1
	var loBuf, invBuf [256]float32
	los, invs := loBuf[:0], invBuf[:0]
	if d > len(loBuf) {
		los, invs = make([]float32, 0, d), make([]float32, 0, d)
	}
	for ch := range d {
		lo, hi := float32(f16Max), float32(-f16Max) // as groupRange, down a column
		nan := false
		for i := ch; i < len(src); i += d {
			x := src[i]
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
		if nan {
			lo, hi = min(lo, 0), max(hi, 0)
		}
		lo, hi = max(lo, -f16Max), min(hi, f16Max)
		lo16, s16, lof, sf := affineParams(lo, hi, maxCode)
		putF16(dst[4*ch:], s16)
		putF16(dst[4*ch+2:], lo16)
		los = append(los, lof)
		invs = append(invs, reciprocal(sf))
	}
	rb := packedBytes(d, c.Bits)
	codes := dst[4*d:]
	for i := range t {
		row := src[i*d : (i+1)*d]
		out := codes[i*rb : (i+1)*rb]
		for j := range out {
			out[j] = 0
		}
		for ch, x := range row {
			k := quantCode(x, los[ch], invs[ch], maxCode)
			switch c.Bits {
			case 8:
				out[ch] = byte(k)
			case 4:
				out[ch/2] |= byte(k << (4 * (ch & 1)))
			case 3:
				put3(out, ch, uint32(k))
			default:
				out[ch/4] |= byte(k << (2 * (ch & 3)))
			}
		}
	}
}

// Decode implements ChannelCodec.
func (c Channel) Decode(dst []float32, src []byte, t, d int) {
	n := c.BlockBytes(t, d)
	if n == 0 {
		return
	}
	src = src[:n]
	dst = dst[:t*d]
	var loBuf, sBuf [256]float32
	los, ss := loBuf[:0], sBuf[:0]
	if d > len(loBuf) {
		los, ss = make([]float32, 0, d), make([]float32, 0, d)
	}
	for ch := range d {
		ss = append(ss, getF16(src[4*ch:]))
		los = append(los, getF16(src[4*ch+2:]))
	}
	rb := packedBytes(d, c.Bits)
	codes := src[4*d:]
	for i := range t {
		row := dst[i*d : (i+1)*d]
		in := codes[i*rb : (i+1)*rb]
		los, ss := los[:len(row)], ss[:len(row)]
		switch c.Bits {
		case 8:
			in = in[:len(row)]
			for ch := range row {
				row[ch] = los[ch] + float32(in[ch])*ss[ch]
			}
		case 4:
			for len(row) >= 2 {
				x := in[0]
				rr, ll, sc := (*[2]float32)(row), (*[2]float32)(los), (*[2]float32)(ss)
				rr[0] = ll[0] + float32(x&15)*sc[0]
				rr[1] = ll[1] + float32(x>>4)*sc[1]
				row, los, ss, in = row[2:], los[2:], ss[2:], in[1:]
			}
			if len(row) == 1 {
				row[0] = los[0] + float32(in[0]&15)*ss[0]
			}
		case 3:
			for ch := range row {
				row[ch] = los[ch] + float32(code3(in, ch))*ss[ch]
			}
		default:
			for len(row) >= 4 {
				x := in[0]
				rr, ll, sc := (*[4]float32)(row), (*[4]float32)(los), (*[4]float32)(ss)
				rr[0] = ll[0] + float32(x&3)*sc[0]
				rr[1] = ll[1] + float32(x>>2&3)*sc[1]
				rr[2] = ll[2] + float32(x>>4&3)*sc[2]
				rr[3] = ll[3] + float32(x>>6)*sc[3]
				row, los, ss, in = row[4:], los[4:], ss[4:], in[1:]
			}
			for ch := range row {
				row[ch] = los[ch] + float32(in[0]>>(2*ch)&3)*ss[ch]
			}
		}
	}
}

// Dot implements ChannelCodec: with q'_c = q_c·scale_c and b = Σ_c q_c·lo_c, computed
// once per block, scores[i] = Σ_c q'_c·code[i][c] + b. The pre-scaled query lives on
// the stack for d ≤ 256 and is allocated otherwise.
func (c Channel) Dot(scores []float32, q []float32, src []byte, t, d int) {
	n := c.BlockBytes(t, d)
	if n == 0 {
		return
	}
	src = src[:n]
	q = q[:d]
	scores = scores[:t]
	var buf [256]float32
	qs := buf[:0]
	if d > len(buf) {
		qs = make([]float32, 0, d)
	}
	var b float32
	for ch, x := range q {
		qs = append(qs, x*getF16(src[4*ch:]))
		b += x * getF16(src[4*ch+2:])
	}
	rb := packedBytes(d, c.Bits)
	codes := src[4*d:]
	for i := range scores {
		scores[i] = dotPlain(qs, codes[i*rb:(i+1)*rb], c.Bits) + b
	}
}
