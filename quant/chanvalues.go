package quant

import "strconv"

// ChannelValues stores values per channel over blocks of t tokens, as KIVI stores
// keys (KVQuant's per-channel values): one f16 scale and zero per channel for the
// block, each token's codes after them. The bytes are Channel's, byte for byte
// (channel.go); what differs is the kernel attention runs on them. A weighted sum of
// a block's tokens applies the per-channel affine map once per block, not once per
// value:
//
//	Σ_i w_i·(lo_c + s_c·code_ic) = s_c·Σ_i w_i·code_ic + lo_c·Σ_i w_i
//
// so AddRows widens the codes to float32 (exact), sums them weighted per query with
// MultiAxpy (the SIMD kernels where the CPU has them), and then scales each channel's
// sum once. On small models it beats per-token groups at fewer bytes (kvq eval,
// stories260K, ctx 512: kivi4/chan4 200 bytes per token, KL divergence 0.0035,
// against kivi4/kivi2 220 bytes, 0.0052); on large ones, per KVQuant, it does not,
// so the cache types using it (chan4, chan2) are an option, never the default.
type ChannelValues struct {
	Bits int // 4 or 2 (8 and 3 as Channel; the kernels are the same)
}

// chanEntry is the registry row of the cache type storing keys (KIVI keys, Channel)
// and values (ChannelValues) per channel over blocks of g tokens, both of the given
// bits.
func chanEntry(bits int, name, about string) Entry {
	return Entry{Name: name, About: about, Bits: bits, Params: ParamGroup | ParamRoPE,
		Key:   func() ChannelCodec { return Channel{Bits: bits} },
		Value: func() ChannelAdder { return ChannelValues{Bits: bits} }}
}

func (c ChannelValues) layout() Channel { return Channel{Bits: c.Bits} }

// Validate reports whether c's bits are supported (Channel's).
func (c ChannelValues) Validate() error { return c.layout().Validate() }

// Name implements ChannelCodec: "chan" and the bits.
func (c ChannelValues) Name() string { return "chan" + strconv.Itoa(c.Bits) }

// BlockBytes implements ChannelCodec: Channel's.
func (c ChannelValues) BlockBytes(t, d int) int { return c.layout().BlockBytes(t, d) }

// Encode implements ChannelCodec: Channel's.
func (c ChannelValues) Encode(dst []byte, src []float32, t, d int) {
	c.layout().Encode(dst, src, t, d)
}

// Decode implements ChannelCodec: Channel's.
func (c ChannelValues) Decode(dst []float32, src []byte, t, d int) {
	c.layout().Decode(dst, src, t, d)
}

// Dot implements ChannelCodec: Channel's.
func (c ChannelValues) Dot(scores []float32, q []float32, src []byte, t, d int) {
	c.layout().Dot(scores, q, src, t, d)
}

// AddRows implements ChannelAdder (see the type's comment). tmp holds the block's
// scales and zeros (2·d), each query's weighted code sums (g·d) and weight sums (g),
// then as many tokens' widened codes as fit (at least one: ChannelAddFloats).
func (c ChannelValues) AddRows(acc, w []float32, ld, g int, block []byte, t, d, i0, i1 int, tmp []float32) {
	if g <= 0 || d <= 0 || i0 < 0 || i1 > t || i0 >= i1 {
		return
	}
	block = block[:c.BlockBytes(t, d)]
	_, _ = acc[g*d-1], w[(g-1)*ld+i1-i0-1]
	s, lo := tmp[:d], tmp[d:2*d]
	sums, ws := tmp[2*d:][:g*d], tmp[2*d+g*d:][:g]
	tile := tmp[2*d+g*d+g:]
	per := len(tile) / d
	_ = tile[d-1]
	for ch := range d {
		s[ch] = getF16(block[4*ch:])
		lo[ch] = getF16(block[4*ch+2:])
	}
	clear(sums)
	clear(ws)
	rb := packedBytes(d, c.Bits)
	codes := block[4*d:]
	for a := i0; a < i1; a += per {
		m := min(per, i1-a)
		for i := range m {
			decodeCodes(tile[i*d:(i+1)*d], 0, 1, codes[(a+i)*rb:][:rb], c.Bits)
		}
		MultiAxpy(sums, w[a-i0:], ld, g, tile, d, m, d)
	}
	for j := range g {
		var sw float32
		for _, x := range w[j*ld:][:i1-i0] {
			sw += x
		}
		ws[j] = sw
	}
	for j := range g {
		a, sj, wj := acc[j*d:][:d], sums[j*d:][:d], ws[j]
		for ch := range a {
			a[ch] += s[ch]*sj[ch] + lo[ch]*wj
		}
	}
}
