package quant

import "strconv"

// ChannelValues stores values per channel over blocks of t tokens, as KIVI stores
// keys (KVQuant's per-channel values): one f16 scale and zero per channel for the
// block, each token's codes after them. The bytes are Channel's, byte for byte
// (channel.go); what differs is the kernel attention runs on them: AddRows decodes
// each token in registers and adds it times each query's weight straight into the
// accumulators (chanvalues_amd64.go), or, for the scalar set and other shapes,
// decodes tiles and adds them with MultiAxpy (the SIMD set's tiles give the fused
// kernel's sums, bit for bit); sums that do not depend on how a block's tokens are
// split between calls. On small models it beats per-token groups at fewer bytes
// (kvq eval, stories260K, ctx 512: kivi4/chan4 200 bytes per token, KL divergence
// 0.0035, against kivi4/kivi2 220 bytes, 0.0052); on large ones, per KVQuant, it
// does not, so the cache types using it (chan4, chan2) are an option, never the
// default.
type ChannelValues struct {
	Bits int // 4 or 2 (8 and 3 as Channel; 3-bit blocks are summed through tiles)
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

// AddRows implements ChannelAdder: the active kernel set's fused kernel (chanAdd,
// the SIMD set's); otherwise, and for the shapes it leaves, the tokens decoded into
// tiles of tmp (after the block's scales and zeros, 2·d values; DecodeBlockRows)
// and added by MultiAxpy, as many tokens per tile as tmp holds (at least one:
// ChannelAddFloats).
func (c ChannelValues) AddRows(acc, w []float32, ld, g int, block []byte, t, d, i0, i1 int, tmp []float32) {
	if g <= 0 || d <= 0 || i0 < 0 || i1 > t || i0 >= i1 {
		return
	}
	block = block[:c.BlockBytes(t, d)]
	_, _ = acc[g*d-1], w[(g-1)*ld+i1-i0-1]
	if k := active.Load(); k.chanAdd != nil && k.chanAdd(c, acc, w, ld, g, block, d, i0, i1, tmp) {
		return
	}
	lo, s, tile := tmp[:d], tmp[d:2*d], tmp[2*d:]
	per := len(tile) / d
	_ = tile[d-1]
	ch := c.layout()
	for a := i0; a < i1; a += per {
		m := min(per, i1-a)
		DecodeBlockRows(ch, tile, block, t, d, a, a+m, lo, s)
		MultiAxpy(acc, w[a-i0:], ld, g, tile, d, m, d)
	}
}
