package kv

import (
	"fmt"

	"kvq/quant"
)

// Readback: the cache's contents as an engine outside kvq needs them, to debug and
// validate, to hand the cache to its own kernels, or to export a sequence.

// Side names the keys or the values of a layer.
type Side uint8

// The two sides of a layer.
const (
	Keys Side = iota
	Values
)

func (s Side) String() string {
	if s == Keys {
		return "keys"
	}
	return "values"
}

// ReadKey writes into dst (HeadDim values) the key of sequence id at position pos
// for layer and KV head head, dequantized, exactly as the sequence's next query (at
// position Len) reads it: a row still held in full precision (sink rows, the keys of
// an unfinished KIVI key block) comes back as its f16 rounding (the tail codec's
// round trip of what was appended, which is what attention reads); any other row
// is its codec's Decode of the stored bytes (for a KIVI key, its row of the decoded
// key block, rotated to pos when the spec stores keys before RoPE). pos must be a position whose keys the layer holds: below Len, appended for layer
// (a step's positions count once that layer's Append returned), and not evicted.
// Read-locked: it may run beside Append and Attend of other sequences.
func (st *Store) ReadKey(id SeqID, layer, pos, head int, dst []float32) error {
	return st.readRow(Keys, id, layer, pos, head, dst)
}

// ReadValue is ReadKey for the value row: the rows a KIVI value side keeps in full
// precision are the sink rows and the last r−1 positions before Len.
func (st *Store) ReadValue(id SeqID, layer, pos, head int, dst []float32) error {
	return st.readRow(Values, id, layer, pos, head, dst)
}

func (st *Store) readRow(side Side, id SeqID, layer, pos, head int, dst []float32) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.lookup(id)
	if err != nil {
		return fmt.Errorf("kv: read %s: %w", side, err)
	}
	cfg := st.g.cfg
	if layer < 0 || layer >= len(st.g.layers) || head < 0 || head >= cfg.KVHeads || len(dst) != cfg.HeadDim {
		return fmt.Errorf("kv: read %s of sequence %d: layer %d head %d len(dst)=%d, want layer in [0, %d), head in [0, %d), len(dst)=%d",
			side, id, layer, head, len(dst), len(st.g.layers), cfg.KVHeads, cfg.HeadDim)
	}
	end := s.base // positions [0, end) are appended for this layer
	if s.pending == 0 || s.done[layer] {
		end = s.n
	}
	if pos < 0 || pos >= end {
		return fmt.Errorf("kv: read %s of sequence %d layer %d: position %d not appended (held: [0, %d))", side, id, layer, pos, end)
	}
	if pos >= s.sinkEnd && pos < s.winStart {
		return fmt.Errorf("kv: read %s of sequence %d layer %d: position %d was evicted (positions [%d, %d) are gone)", side, id, layer, pos, s.sinkEnd, s.winStart)
	}
	ly, t := &st.g.layers[layer], &s.tails[layer]

	tr, th, B := st.g.tailRow, st.g.tailHead, st.g.B
	// f32 returns the full-precision row of pos (tail codec bytes) from the work area
	// (the step's rows, until folded) or from ring r.
	f32 := func(r *ring, work []byte) []byte {
		if pos >= s.base && s.work.layer == layer {
			return work[(pos-s.base)*tr+head*th:][:th]
		}
		if pos < r.start || pos >= r.start+r.n {
			return nil
		}
		return r.at(pos)[head*th:][:th]
	}
	d := cfg.HeadDim
	blk := s.tables[ly.grp][pos/B]
	slot := pos % B
	// A row read from its block: the layer's window may have freed it.
	freed := func() error {
		if blk >= 0 {
			return nil
		}
		return fmt.Errorf("kv: read %s of sequence %d layer %d: position %d is outside the layer's attention window (its block was freed)", side, id, layer, pos)
	}
	if side == Keys {
		switch {
		case pos < ly.sinksK:
			st.g.tail.Decode(dst, t.sk[pos*tr+head*th:][:th])
		case ly.kChan != nil && pos >= ly.kTailStart(end):
			row := f32(&t.k, s.work.k)
			if row == nil {
				return fmt.Errorf("kv: read keys of sequence %d layer %d: position %d is not held in full precision", id, layer, pos)
			}
			st.g.tail.Decode(dst, row)
		case freed() != nil:
			return freed()
		case ly.kChan != nil:
			G := ly.kG
			buf := make([]float32, G*d)
			ly.kChan.Decode(buf, st.keyBlock(s, ly, head, pos-pos%G, nil), G, d)
			copy(dst, buf[(pos%G)*d:][:d])
			if ly.preRoPE { // stored before RoPE: rotated to pos as attention does
				ly.rope.Rotate(dst, 1, d, pos, 0)
			}
		default:
			ly.kRow.Decode(dst, st.kRowAt(blk, ly, head, slot))
		}
		return nil
	}
	switch {
	case pos < ly.sinksV:
		st.g.tail.Decode(dst, t.sv[pos*tr+head*th:][:th])
	case ly.hasVTail() && pos >= ly.vTailStart(end):
		row := f32(&t.v, s.work.v)
		if row == nil {
			return fmt.Errorf("kv: read values of sequence %d layer %d: position %d is not held in full precision", id, layer, pos)
		}
		st.g.tail.Decode(dst, row)
	case freed() != nil:
		return freed()
	case ly.vChan != nil:
		G := ly.vG
		buf := make([]float32, G*d)
		ly.vChan.Decode(buf, st.vSec(blk, ly, head)[slot/G*ly.vBlkBytes:][:ly.vBlkBytes], G, d)
		copy(dst, buf[(slot%G)*d:][:d])
	default:
		ly.vRow.Decode(dst, st.vRowAt(blk, ly, head, slot))
	}
	return nil
}

// LayerLayout is where one layer's keys and values sit inside a physical block of
// BlockTokens (B) tokens, and the codecs that wrote them. A side's section is
// KVHeads head sections back to back, HeadStride bytes each; head h's section holds
// its B tokens in order: B rows of RowBytes (per-token codecs), or, for KIVI keys,
// key blocks of GroupBytes written by Channel: B/Group of them when Group divides B
// (tokens [jG, (j+1)G) of the block in key block j), and when Group is a multiple
// of B the key block of tokens [kG, (k+1)G) is split into G/B parts of HeadStride
// bytes, part j in the sequence's block kG/B + j. With Spec.K.PreRoPE those keys
// are stored before RoPE (Config.RoPE rotates each to its position).
type LayerLayout struct {
	Spec Spec
	// Keys: KOffset is the section's byte offset in the block. Exactly one of KRow
	// (per-token keys, KRowBytes per row) and KChannel (KIVI keys, KGroup tokens per
	// key block of KGroupBytes) is set.
	KOffset, KHeadStride int
	KRow                 quant.RowCodec
	KRowBytes            int
	KChannel             quant.ChannelCodec
	KGroup, KGroupBytes  int
	// Values: VOffset as KOffset. Exactly one of VRow (per-token values, VRowBytes
	// per row) and VChannel (values per channel, VGroup tokens per block of
	// VGroupBytes, laid out as KIVI key blocks) is set.
	VOffset, VHeadStride int
	VRow                 quant.RowCodec
	VRowBytes            int
	VChannel             quant.ChannelCodec
	VGroup, VGroupBytes  int
}

// BlockLayout is the byte layout of the blocks of B tokens of a Store, every layer:
// the physical blocks of its layer groups one after another (one group of every
// layer when no layer has an attention window, see Config.Windows).
type BlockLayout struct {
	BlockTokens int // tokens per block (B)
	BlockBytes  int // bytes of B tokens of every layer: the group blocks' bytes together
	KVHeads     int
	HeadDim     int
	Layers      []LayerLayout
}

// Layout returns the byte layout of the store's blocks.
//
// Block bytes are the stored form of every appended token with two exceptions a
// reader must know: a KIVI key block is written only when its G-th token is
// appended (until then its bytes are stale and its keys live in full precision, see
// ReadKey), and rows held in full precision (sinks, recent KIVI values) are read
// from those rows, not from the block, by attention.
func (st *Store) Layout() BlockLayout {
	cfg := st.g.cfg
	bl := BlockLayout{BlockTokens: st.g.B, BlockBytes: st.g.tokenBlockBytes(), KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim}
	for i := range st.g.layers {
		ly := &st.g.layers[i]
		at := ly.grp * st.g.blockBytes
		l := LayerLayout{Spec: ly.spec,
			KOffset: at + ly.kOff, KHeadStride: ly.kHeadStride,
			VOffset: at + ly.vOff, VHeadStride: ly.vHeadStride}
		if ly.vChan != nil {
			l.VChannel, l.VGroup, l.VGroupBytes = ly.vChan, ly.vG, ly.vBlkBytes
		} else {
			l.VRow, l.VRowBytes = ly.vRow, ly.vRowBytes
		}
		if ly.kChan != nil {
			l.KChannel, l.KGroup, l.KGroupBytes = ly.kChan, ly.kG, ly.kBlkBytes
		} else {
			l.KRow, l.KRowBytes = ly.kRow, ly.kRowBytes
		}
		bl.Layers = append(bl.Layers, l)
	}
	return bl
}

// ReadBlock appends to dst a copy of block i of sequence id's block tables (the
// blocks holding positions [iB, (i+1)B) of every layer) and returns it; Layout says
// what its bytes are. Slots past Len hold unspecified bytes. A block freed by Evict
// or by a layer's attention window is an error.
func (st *Store) ReadBlock(id SeqID, i int, dst []byte) ([]byte, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.lookup(id)
	if err != nil {
		return dst, fmt.Errorf("kv: read block: %w", err)
	}
	if i < 0 || i >= s.nblocks() {
		return dst, fmt.Errorf("kv: read block %d of sequence %d: it has %d blocks", i, id, s.nblocks())
	}
	for g, tb := range s.tables {
		if tb[i] < 0 {
			return dst, fmt.Errorf("kv: read block %d of sequence %d: evicted (layers %v)", i, id, st.g.groups[g].layers)
		}
	}
	n := len(dst)
	dst = append(dst, make([]byte, st.g.tokenBlockBytes())...)
	for g, tb := range s.tables {
		st.pool.blockIO(tb[i], g, 0, dst[n+g*st.g.blockBytes:], false)
	}
	return dst, nil
}
