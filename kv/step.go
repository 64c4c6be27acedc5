package kv

import (
	"fmt"
	"slices"

	"kvq/attn"
	"kvq/internal/prefetch"
	"kvq/quant"
)

func (st *Store) stepSeq(layer int, id SeqID, what string) (*seq, error) {
	s, err := st.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("kv: %s layer %d: %w", what, layer, err)
	}
	if layer < 0 || layer >= len(st.g.layers) {
		return nil, fmt.Errorf("kv: %s sequence %d: layer %d out of range [0, %d)", what, id, layer, len(st.g.layers))
	}
	if s.pending == 0 {
		return nil, fmt.Errorf("kv: %s sequence %d layer %d: no tokens reserved (call Grow first)", what, id, layer)
	}
	return s, nil
}

// Append implements Layers. Values and per-token keys are encoded into their blocks
// at once; each KIVI key block is encoded when its G-th token arrives. The step's
// f16 rows go to the work area (after the previous layer's rows there are folded
// into that layer's rings) and to the sink rows. Append allocates nothing: Grow
// reserved it. Keys or values holding a NaN or an infinity are refused with
// ErrNonFinite before anything is written.
func (st *Store) Append(layer int, id SeqID, k, v []float32) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.stepSeq(layer, id, "append")
	if err != nil {
		return err
	}
	if s.done[layer] {
		return fmt.Errorf("kv: append sequence %d layer %d: already appended this step", id, layer)
	}
	rl := st.g.rowLen
	if len(k) != s.pending*rl || len(v) != s.pending*rl {
		return fmt.Errorf("kv: append sequence %d layer %d: len(k)=%d len(v)=%d, want %d tokens × %d kv heads × %d = %d",
			id, layer, len(k), len(v), s.pending, st.g.cfg.KVHeads, st.g.cfg.HeadDim, s.pending*rl)
	}
	ly, t := &st.g.layers[layer], &s.tails[layer]
	st.prefetchRows(s, ly)
	if err := checkFinite(k, v, s.base, st.g.cfg.KVHeads, st.g.cfg.HeadDim); err != nil {
		return fmt.Errorf("kv: append sequence %d layer %d: %w", id, layer, err)
	}
	st.fold(s)
	d, B, tr := st.g.cfg.HeadDim, st.g.B, st.g.tailRow
	if ly.hasKTail() {
		st.encodeTail(s.work.k, k)
		st.extendKeyRing(s, ly, &t.k)
	}
	if ly.hasVTail() {
		st.encodeTail(s.work.v, v)
	}
	s.work.layer = layer
	tb := s.tables[ly.grp]
	for i := 0; i < s.pending; i++ {
		p := s.base + i
		blk := tb[p/B]
		slot := p % B
		kr, vr := k[i*rl:(i+1)*rl], v[i*rl:(i+1)*rl]
		for h := 0; h < st.g.cfg.KVHeads; h++ {
			if ly.kRow != nil {
				ly.kRow.Encode(st.kRowAt(blk, ly, h, slot), kr[h*d:(h+1)*d])
			}
			if ly.vRow != nil {
				ly.vRow.Encode(st.vRowAt(blk, ly, h, slot), vr[h*d:(h+1)*d])
			}
		}
		if p < ly.sinksK {
			st.encodeTail(t.sk[p*tr:(p+1)*tr], kr)
		}
		if p < ly.sinksV {
			st.encodeTail(t.sv[p*tr:(p+1)*tr], vr)
		}
		if ly.kChan != nil && (p+1)%ly.kG == 0 {
			st.encodeKeyBlock(s, ly, t, p+1-ly.kG)
		}
		if ly.vChan != nil && (p+1)%ly.vG == 0 {
			st.encodeValueBlock(s, ly, t, p+1-ly.vG)
		}
	}
	if st.sides {
		st.writeSides(s, layer)
	}
	s.done[layer] = true
	s.nDone++
	return nil
}

// prefetchRows asks for the rows of a decode step's token (one pending) that Append
// encodes into its block, for writing, before it encodes any: each head's key and
// value rows lie in lines of their own, rarely still cached, and stored to one
// after another each waited for its line in turn (f32ToF16F16C's stores took most
// of Append's time in BenchmarkStepAttention).
func (st *Store) prefetchRows(s *seq, ly *layer) {
	if s.pending != 1 {
		return
	}
	p := s.base
	blk, slot := s.tables[ly.grp][p/st.g.B], p%st.g.B
	for h := 0; h < st.g.cfg.KVHeads; h++ {
		if ly.kRow != nil {
			prefetch.Write(st.kRowAt(blk, ly, h, slot))
		}
		if ly.vRow != nil {
			prefetch.Write(st.vRowAt(blk, ly, h, slot))
		}
	}
}

// extendKeyRing copies into the key ring the step's keys of the key block the ring
// holds the start of (its unfinished block as the step began), up to the block's
// last row or the step's end: every query of the step then reads the keys it sees in
// full precision from one buffer, the ring (queries in that block) or the work area
// (later ones), whatever rows earlier steps brought. Cut at the step's start
// instead, a query's keys would be two spans where a single step gives one, and the
// values read beside them (stored per token or per channel, whose sums depend on
// how their rows are split into calls) would be cut with them.
func (st *Store) extendKeyRing(s *seq, ly *layer, r *ring) {
	gs := ly.kTailStart(s.base)
	if gs == s.base || r.start+r.n != s.base {
		return // the step starts a block (or the ring does not reach it)
	}
	tr := st.g.tailRow
	for p := s.base; p < min(s.base+s.pending, gs+ly.kG-1); p++ {
		copy(r.at(p), s.work.k[(p-s.base)*tr:(p-s.base+1)*tr])
		r.n++
	}
}

// fold moves the rows of the work area that its layer's rings must keep after the
// step (keys of the then unfinished KIVI block, the last r−1 values) into the rings,
// dropping the older ring rows, and marks the work area free. Grow sized the rings
// for this.
func (st *Store) fold(s *seq) {
	l := s.work.layer
	if l < 0 {
		return
	}
	s.work.layer = -1
	ly, t := &st.g.layers[l], &s.tails[l]
	end, rl := s.base+s.pending, st.g.tailRow
	if ly.hasKTail() {
		foldRing(&t.k, ly.kTailStart(end), s.base, end, s.work.k, rl)
	}
	if ly.hasVTail() {
		foldRing(&t.v, ly.vTailStart(end), s.base, end, s.work.v, rl)
	}
}

// foldRing makes r hold positions [keep, end): it drops rows before keep and appends
// rows of positions ≥ base from w, which holds positions [base, end).
func foldRing(r *ring, keep, base, end int, w []byte, rl int) {
	r.trim(keep)
	for p := r.start + r.n; p < end; p++ {
		copy(r.at(p), w[(p-base)*rl:(p-base+1)*rl])
		r.n++
	}
}

// encodeTail encodes token-major rows of KVHeads·HeadDim values (src) into tail-codec
// rows (dst), head by head.
func (st *Store) encodeTail(dst []byte, src []float32) {
	d, th := st.g.cfg.HeadDim, st.g.tailHead
	for h := 0; h*d < len(src); h++ {
		st.g.tail.Encode(dst[h*th:(h+1)*th], src[h*d:(h+1)*d])
	}
}

// encodeKeyBlock encodes the KIVI key block of positions [gs, gs+G) of every head
// into its block (or, split, its G/B blocks: Grow made them the sequence's own),
// from the work area (this step's keys), the key ring (earlier keys of the block)
// and the sink rows (positions the ring no longer holds).
// Sink positions of a block that also holds other tokens are encoded as copies of
// the block's first non-sink key. Layers that store keys before RoPE rotate each key
// back by its position first (the rows kept in full precision stay as they came).
func (st *Store) encodeKeyBlock(s *seq, ly *layer, t *tail, gs int) {
	d, G, th := st.g.cfg.HeadDim, ly.kG, st.g.tailHead
	// The buffer holds one head's block, then each token's angles back (cos, sin).
	if cap(s.encBuf) < 2*G*d {
		s.encBuf = make([]float32, 2*G*d)
	}
	buf, angles := s.encBuf[:G*d], s.encBuf[G*d:2*G*d]
	keyPos := func(i int) int { return blockPos(gs, i, G, ly.sinksK) }
	hp := 0 // rotated pairs
	if ly.rope != nil {
		// Keys arrived rotated at their positions and are stored before RoPE: the
		// rotation back by each token's position is the same for every head, so its
		// angles are formed once per block.
		hp = ly.rope.Dims() / 2
		for i := range G {
			ly.rope.Angles(angles[2*i*hp:][:hp], angles[(2*i+1)*hp:][:hp], -keyPos(i))
		}
	}
	B := st.g.B
	blk, off := s.tables[ly.grp][gs/B], ly.kBytes(gs%B)
	if ly.kSplit && len(s.encKey) < ly.kBlkBytes {
		s.encKey = make([]byte, ly.kBlkBytes)
	}
	for h := 0; h < st.g.cfg.KVHeads; h++ {
		for i := 0; i < G; i++ {
			row := st.sideRow(s, t, keyPos(i), true)
			st.g.tail.Decode(buf[i*d:(i+1)*d], row[h*th:(h+1)*th])
			if ly.rope != nil {
				quant.RotatePairs(buf[i*d:(i+1)*d], angles[2*i*hp:][:hp], angles[(2*i+1)*hp:][:hp], ly.rope.NeoX())
			}
		}
		if !ly.kSplit {
			ly.kChan.Encode(st.kSec(blk, ly, h)[off:][:ly.kBlkBytes], buf, G, d)
			continue
		}
		ly.kChan.Encode(s.encKey[:ly.kBlkBytes], buf, G, d)
		for j, part := 0, s.encKey[:ly.kBlkBytes]; len(part) > 0; j++ {
			part = part[copy(st.kSec(s.tables[ly.grp][gs/B+j], ly, h)[:ly.kHeadStride], part):]
		}
	}
}

// encodeValueBlock encodes the block of values per channel of positions [gs, gs+G)
// of every head into its block (B is a multiple of G), as encodeKeyBlock does keys.
func (st *Store) encodeValueBlock(s *seq, ly *layer, t *tail, gs int) {
	d, G, th := st.g.cfg.HeadDim, ly.vG, st.g.tailHead
	if cap(s.encBuf) < G*d {
		s.encBuf = make([]float32, 2*G*d)
	}
	buf := s.encBuf[:G*d]
	blk, off := s.tables[ly.grp][gs/st.g.B], (gs%st.g.B)/G*ly.vBlkBytes
	for h := 0; h < st.g.cfg.KVHeads; h++ {
		for i := range G {
			row := st.sideRow(s, t, blockPos(gs, i, G, ly.sinksV), false)
			st.g.tail.Decode(buf[i*d:(i+1)*d], row[h*th:(h+1)*th])
		}
		ly.vChan.Encode(st.vSec(blk, ly, h)[off:][:ly.vBlkBytes], buf, G, d)
	}
}

// blockPos is the position whose row token i of the per-channel block of positions
// [gs, gs+G) holds, with sinks sink positions. Sink rows are read from their f16
// rows, never from a block: the first non-sink row of the block takes their place
// so that their outliers do not widen the per-channel ranges of the others.
func blockPos(gs, i, G, sinks int) int {
	if q := gs + i; q >= sinks || sinks >= gs+G {
		return q
	}
	return sinks
}

// sideRow returns the f16 row (every head) of position q of the keys (keys) or
// values of s's layer with tail t: from the work area (this step's rows), the
// side's ring (earlier rows) or the sink rows (positions the ring no longer holds).
func (st *Store) sideRow(s *seq, t *tail, q int, keys bool) []byte {
	tr := st.g.tailRow
	work, ring, sinks := s.work.k, &t.k, t.sk
	if !keys {
		work, ring, sinks = s.work.v, &t.v, t.sv
	}
	switch {
	case q >= s.base:
		return work[(q-s.base)*tr : (q-s.base+1)*tr]
	case q >= ring.start:
		return ring.at(q)
	}
	return sinks[q*tr : (q+1)*tr]
}

// keyBlock returns the bytes of the KIVI key block of positions [gs, gs+G) of KV
// head h of layer ly of s: in place, or, when split over blocks, copied into buf.
func (st *Store) keyBlock(s *seq, ly *layer, h, gs int, buf []byte) []byte {
	B := st.g.B
	if !ly.kSplit {
		return st.kSec(s.tables[ly.grp][gs/B], ly, h)[ly.kBytes(gs%B):][:ly.kBlkBytes]
	}
	buf = buf[:0]
	for j := range ly.kG / B {
		buf = append(buf, st.kSec(s.tables[ly.grp][gs/B+j], ly, h)[:ly.kHeadStride]...)
	}
	return buf
}

// Attend implements Layers. Each query runs attn.Decode over spans describing the
// history as that query sees it (see Store).
func (st *Store) Attend(layer int, id SeqID, q, out []float32) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.attendSeq(layer, id, q, out)
	if err != nil {
		return err
	}
	if err := attn.Prefill(out, q, s.pending, st.shape, s.view, st.opts, &s.sc); err != nil {
		return fmt.Errorf("kv: attend sequence %d layer %d at position %d: %w", id, layer, s.base, err)
	}
	return nil
}

// attendSeq checks an Attend of seq id's queries q into out at layer and prepares
// the sequence's spans of the layer (gather) for its view.
func (st *Store) attendSeq(layer int, id SeqID, q, out []float32) (*seq, error) {
	s, err := st.stepSeq(layer, id, "attend")
	if err != nil {
		return nil, err
	}
	if !s.done[layer] {
		return nil, fmt.Errorf("kv: attend sequence %d layer %d: keys and values of this step not appended yet", id, layer)
	}
	if (st.g.layers[layer].hasKTail() || st.g.layers[layer].hasVTail()) && s.work.layer != layer {
		return nil, fmt.Errorf("kv: attend sequence %d layer %d: this step's full-precision rows were released by a later Append or Grow (attend each layer before appending the next)", id, layer)
	}
	hq := st.g.cfg.Heads * st.g.cfg.HeadDim
	if len(q) != s.pending*hq || len(out) != s.pending*hq {
		return nil, fmt.Errorf("kv: attend sequence %d layer %d: len(q)=%d len(out)=%d, want %d tokens × %d heads × %d = %d",
			id, layer, len(q), len(out), s.pending, st.g.cfg.Heads, st.g.cfg.HeadDim, s.pending*hq)
	}
	s.viewLayer = layer
	st.gather(s, layer)
	return s, nil
}

// layerWindow is the attention window of layer l in tokens, 0 for the whole history.
func (st *Store) layerWindow(l int) int {
	if st.g.cfg.Windows == nil {
		return 0
	}
	return st.g.cfg.Windows[l]
}

// spans appends to dst the spans of positions [0, p] as the query at position p
// sees them (only the last w of them on a layer with attention window w): sink rows, then blocks, then full-precision rows (ring for positions
// before the step, work area for the step's), for keys and values independently,
// cut wherever either side changes storage, a block ends or a ring wraps. Evicted
// positions are skipped and the kept sinks carry Delta = −gap (see window.go).
func (st *Store) spans(dst []attn.Span, s *seq, layer, p int) []attn.Span {
	ly, t := &st.g.layers[layer], &s.tails[layer]
	end := p + 1
	sK, sV := min(ly.sinksK, end), min(ly.sinksV, end)
	fk := end // keys [sK, fk) from blocks, [fk, end) in f16
	if ly.kChan != nil && end%ly.kG != 0 {
		fk = p - p%ly.kG
	}
	fk = max(fk, sK)
	fv := end // values [sV, fv) from blocks, [fv, end) in f16
	switch {
	case ly.vChan != nil && end%ly.vG != 0:
		fv = p - p%ly.vG
	case ly.r > 0:
		fv = max(0, end-ly.r)
	}
	fv = max(fv, sV)
	C, tr, base := st.g.span, st.g.tailRow, s.base
	tail := func(b []byte) attn.Src {
		return attn.Src{Kind: attn.Rows, Row: st.g.tail, Plan: st.g.tailPlan, Bytes: b, HeadStride: st.g.tailHead, Stride: tr}
	}
	gap := s.winStart - s.sinkEnd // evicted positions (window.go)
	a := 0
	if w := st.layerWindow(layer); w > 0 && end > w {
		a = end - w // the layer's attention window
		if gap > 0 && a >= s.sinkEnd {
			a = max(a, s.winStart)
		}
	}
	for a < end {
		if gap > 0 && a == s.sinkEnd {
			a = s.winStart
			continue
		}
		sp := attn.Span{Pos: a}
		b := end
		if gap > 0 && a < s.sinkEnd {
			// A sink: the query is scored as if at position p−gap.
			b, sp.Delta = s.sinkEnd, -gap
		}
		spanEnd := (a/C + 1) * C
		// Every span ends by the next multiple of attn.BatchTokens: the softmax
		// updates then fall at the same positions however the step's rows are held.
		b = min(b, (a/attn.BatchTokens+1)*attn.BatchTokens)
		switch {
		case a < sK:
			sp.K = tail(t.sk[a*tr:])
			b = min(b, sK)
		case a < fk:
			mem, hs := st.spanKeys(s, ly, a)
			if ly.kChan != nil {
				sp.K = attn.Src{Kind: attn.Channel, Chan: ly.kChan, RoPE: ly.rope, G: ly.kG, Off: a % ly.kG,
					Bytes: mem, HeadStride: hs, Stride: ly.kBlkBytes}
			} else {
				sp.K = attn.Src{Kind: attn.Rows, Row: ly.kRow, Plan: ly.kPlan,
					Bytes: mem, HeadStride: hs, Stride: ly.kRowBytes}
			}
			b = min(b, fk, spanEnd)
		case a < max(base, t.k.start+t.k.n):
			// The ring holds this step's first rows too (extendKeyRing).
			i := a % t.k.capRows()
			sp.K = tail(t.k.buf[i*tr:])
			b = min(b, max(base, t.k.start+t.k.n), t.k.wrapEnd(a))
		default:
			sp.K = tail(s.work.k[(a-base)*tr:])
		}
		switch {
		case a < sV:
			sp.V = tail(t.sv[a*tr:])
			b = min(b, sV)
		case a < fv:
			mem, hs := st.spanValues(s, ly, a)
			if ly.vChan != nil {
				sp.V = attn.Src{Kind: attn.Channel, Chan: ly.vChan, G: ly.vG, Off: a % ly.vG,
					Bytes: mem, HeadStride: hs, Stride: ly.vBlkBytes}
			} else {
				sp.V = attn.Src{Kind: attn.Rows, Row: ly.vRow, Plan: ly.vPlan,
					Bytes: mem, HeadStride: hs, Stride: ly.vRowBytes}
			}
			b = min(b, fv, spanEnd)
		case a < base:
			i := a % t.v.capRows()
			sp.V = tail(t.v.buf[i*tr:])
			b = min(b, base, t.v.wrapEnd(a))
		default:
			sp.V = tail(s.work.v[(a-base)*tr:])
		}
		sp.N = b - a
		dst = append(dst, sp)
		a = b
	}
	return dst
}

// kSec and vSec return the memory of block id's keys (values) of KV head h of layer
// ly onward: the block's head section, then the same section of the blocks in the
// extent's later slots (head h+1's starts E·HeadStride bytes on; see pool).
func (st *Store) kSec(id int32, ly *layer, h int) []byte {
	return st.pool.section(id, ly.kOff+h*ly.kHeadStride, ly.kHeadStride)
}

func (st *Store) vSec(id int32, ly *layer, h int) []byte {
	return st.pool.section(id, ly.vOff+h*ly.vHeadStride, ly.vHeadStride)
}

// kRowAt and vRowAt return the row codes of the key (value) of slot of block id, KV
// head h, of a layer whose keys (values) are stored in rows.
func (st *Store) kRowAt(id int32, ly *layer, h, slot int) []byte {
	return st.kSec(id, ly, h)[slot*ly.kRowBytes:][:ly.kRowBytes]
}

func (st *Store) vRowAt(id int32, ly *layer, h, slot int) []byte {
	return st.vSec(id, ly, h)[slot*ly.vRowBytes:][:ly.vRowBytes]
}

// placeFor is where block i of group g of s should go (pool.alloc's preference),
// the first of k blocks of its span that a Grow allocates: the first block of a
// span (SpanTokens), or the first after freed ones, where k slots free or cached
// follow one another (pool.spanStart), the others in the slot after block i−1, so
// that attention reads the span in place.
func (st *Store) placeFor(s *seq, g, i, k int) int32 {
	tb := s.tables[g]
	if i*st.g.B%st.g.span == 0 || tb[i-1] == -1 {
		return st.pool.spanStart(k)
	}
	if id := st.pool.next(tb[i-1]); id >= 0 {
		return id
	}
	return noPlace
}

// spanBlocks is the number of blocks from block i to the end of its span or to
// block need, whichever comes first.
func (st *Store) spanBlocks(i, need int) int {
	B, C := st.g.B, st.g.span
	end := ((i*B/C+1)*C + B - 1) / B
	return max(1, min(end, need)-i)
}

// adjacent reports whether the blocks of one span, in table order, sit in
// consecutive slots of one extent (evicted ones, −1, are never read across).
func (st *Store) adjacent(blocks []int32) bool {
	return adjacentIn(blocks, st.pool.ext, st.pool.made())
}

// adjacentIn is adjacent in a pool of made blocks in extents of ext.
func adjacentIn(blocks []int32, ext, made int) bool {
	for j := 1; j < len(blocks); j++ {
		if a, b := blocks[j-1], blocks[j]; a >= 0 && b >= 0 && (b != a+1 || int(b)%ext == 0 || int(b) >= made) {
			return false
		}
	}
	return true
}

// anywhere marks, in gatherPlan's tables, a block alloc may place in any slot.
const anywhere int32 = -3

// gatherPlan returns the number of spans of s that Attend copies, for the layer
// group that copies most (see gather), after a Grow that copies the shared blocks
// pl.cow and then appends blocks to pl.needBlocks: spans whose blocks are not
// adjacent now and that the Grow leaves so, and spans holding a block that
// pool.alloc might not put in the slot it prefers (placeFor). It follows alloc's
// choices in alloc's order without changing anything: a preferred slot free or
// cached now is taken (the Grow's earlier blocks took other slots); a span's first
// block takes the slot pool.spanStart gives on the pool as the earlier blocks leave
// it; once a block may land anywhere (alloc then takes any free block), every later
// one may too, but such a block with no kept neighbour in its span (freed, or not
// allocated yet) is read in place. So Attend never copies more spans than the plan
// counts. ids is scratch, returned for reuse.
func (st *Store) gatherPlan(s *seq, pl *growPlan, ids [][]int32) (int, [][]int32) {
	p, B, C, need := &st.pool, st.g.B, st.g.span, pl.needBlocks
	slides := false
	for g := range s.tables {
		slides = slides || st.slideEnd(s, g) > s.winFree[g]
	}
	spansOf := func(tb []int32, made int) int {
		n := 0
		for c := 0; c*C < len(tb)*B; c++ {
			span := tb[c*C/B : min(len(tb), ((c+1)*C+B-1)/B)]
			if !adjacentIn(span, p.ext, made) || placedNextTo(span) {
				n++
			}
		}
		return n
	}
	most := 0
	if len(pl.cow) == 0 && need == s.nblocks() && !slides {
		// Nothing moves (most decode steps): the spans as they are.
		for _, tb := range s.tables {
			most = max(most, spansOf(tb, p.made()))
		}
		return most, ids
	}
	for len(ids) < len(s.tables) {
		ids = append(ids, nil)
	}
	// Grow slides first (GrowCost plans before it): the blocks it drops are gone,
	// free, or cached if registered.
	var freed, toCache []int32 // toCache: cached once the slide releases them
	for g, tb := range s.tables {
		ids[g] = append(ids[g][:0], tb...)
		for j := s.winFree[g]; j < st.slideEnd(s, g); j++ {
			if b := tb[j]; b >= 0 {
				switch {
				case p.refs[b] != 1:
				case p.idx.meta[b].registered:
					toCache = append(toCache, b)
				default:
					freed = append(freed, b)
				}
				ids[g][j] = -1
			}
		}
		for len(ids[g]) < need {
			ids[g] = append(ids[g], anywhere)
		}
	}
	made, sure := p.made(), true
	var taken []int32 // slots this plan's blocks take
	free := func(c int32) bool {
		return (int(c) >= p.made() || p.isFree(c) || slices.Contains(freed, c)) && !slices.Contains(taken, c)
	}
	cached := func(c int32) bool {
		return int(c) < p.made() && (p.isCached(c) || slices.Contains(toCache, c)) && !slices.Contains(taken, c)
	}
	extend := func() int32 {
		if made%p.ext != 0 || (p.maxBlocks > 0 && made >= p.maxBlocks) {
			return -1
		}
		id := int32(made)
		made += p.ext
		if p.maxBlocks > 0 {
			made = min(made, p.maxBlocks)
		}
		return id
	}
	alloc := func(g, i, k int) {
		tb, id := ids[g], anywhere
		switch {
		case !sure:
		case i*B%C == 0 || tb[i-1] == -1:
			if c := p.spanSlot(k, free, cached, extend); c >= 0 {
				id = c
			}
		case tb[i-1] >= 0 && (tb[i-1]+1)%int32(p.ext) != 0 && int(tb[i-1])+1 < made:
			if c := tb[i-1] + 1; free(c) || cached(c) {
				id = c
			}
		}
		if tb[i] = id; id == anywhere {
			sure = false
		} else {
			taken = append(taken, id)
		}
	}
	for _, c := range pl.cow {
		alloc(c.g, c.i, 1)
	}
	for i := s.nblocks(); i < need; i++ {
		for g := range s.tables {
			alloc(g, i, st.spanBlocks(i, need))
		}
	}
	for g := range s.tables {
		most = max(most, spansOf(ids[g], made))
	}
	return most, ids
}

// placedNextTo reports whether a block that may land anywhere neighbours another
// kept block of its span (one with no kept neighbour is read alone, in place).
func placedNextTo(span []int32) bool {
	for j := 1; j < len(span); j++ {
		if a, b := span[j-1], span[j]; (a == anywhere && b != -1) || (b == anywhere && a != -1) {
			return true
		}
	}
	return false
}

// spanHeads returns the bytes of one KV head's keys and values of one span of
// layer ly in s.gath.
func (g *geometry) spanHeads(ly *layer) (k, v int) {
	return ly.kBytes(g.span), ly.vBytes(g.span)
}

// gather copies the layer's spans of s whose blocks are not adjacent into s.gath,
// head by head as one block of SpanTokens tokens would hold them, and records in
// s.gathAt where each span is read (see SpanTokens). A span copied is a few KiB of
// codes per KV head; it happens to a span with blocks adopted from a prefix or
// copied on a fork, and when the pool had no empty extent.
func (st *Store) gather(s *seq, layer int) {
	ly := &st.g.layers[layer]
	B, C, H := st.g.B, st.g.span, st.g.cfg.KVHeads
	kh, vh := st.g.spanHeads(ly)
	tb := s.tables[ly.grp]
	s.gath, s.gathAt = s.gath[:0], s.gathAt[:0]
	for c := 0; c*C < len(tb)*B; c++ {
		j0, j1 := c*C/B, min(len(tb), ((c+1)*C+B-1)/B)
		if st.adjacent(tb[j0:j1]) {
			s.gathAt = append(s.gathAt, -1)
			continue
		}
		off := len(s.gath)
		s.gathAt = append(s.gathAt, int32(off))
		// Within the capacity Grow reserved (gatherPlan), not zeroed: every byte
		// read is copied below (positions of evicted blocks are never read).
		s.gath = slices.Grow(s.gath, H*(kh+vh))[:off+H*(kh+vh)]
		dst := s.gath[off:]
		for j := j0; j < j1; j++ {
			blk := tb[j]
			if blk < 0 {
				continue
			}
			lo, hi := max(j*B, c*C), min((j+1)*B, (c+1)*C) // positions of the block in the span
			for h := range H {
				copy(dst[h*kh+ly.kBytes(lo-c*C):], st.kSec(blk, ly, h)[ly.kBytes(lo-j*B):ly.kBytes(hi-j*B)])
				copy(dst[H*kh+h*vh+ly.vBytes(lo-c*C):], st.vSec(blk, ly, h)[ly.vBytes(lo-j*B):ly.vBytes(hi-j*B)])
			}
		}
	}
}

// spanKeys returns the key bytes of layer ly from position a on (in a block, not a
// tail; for KIVI keys from the start of a's key block) and the stride between KV
// heads: in place, or in s.gath (see gather).
func (st *Store) spanKeys(s *seq, ly *layer, a int) ([]byte, int) {
	C := st.g.span
	if ly.kChan != nil {
		a -= a % ly.kG
	}
	if off := s.gathAt[a/C]; off >= 0 {
		kh, _ := st.g.spanHeads(ly)
		return s.gath[int(off)+ly.kBytes(a%C):], kh
	}
	B := st.g.B
	return st.kSec(s.tables[ly.grp][a/B], ly, 0)[ly.kBytes(a%B):], st.g.E * ly.kHeadStride
}

// spanValues is spanKeys for the values.
func (st *Store) spanValues(s *seq, ly *layer, a int) ([]byte, int) {
	C := st.g.span
	if off := s.gathAt[a/C]; off >= 0 {
		kh, vh := st.g.spanHeads(ly)
		return s.gath[int(off)+st.g.cfg.KVHeads*kh+ly.vBytes(a%C):], vh
	}
	B := st.g.B
	return st.vSec(s.tables[ly.grp][a/B], ly, 0)[ly.vBytes(a%B):], st.g.E * ly.vHeadStride
}
