// Package attn computes attention directly over a KV cache's stored bytes: keys and
// values are read in place through the codecs' batched kernels (quant.DotRows,
// quant.AddRows; scales and zeros applied to the scores or folded into the softmax
// weights), never through a dequantized copy of the history. It knows nothing of how
// the bytes are allocated: the caller describes a query's history as a list of
// spans, each a run of consecutive positions whose keys and values are stored one
// way.
//
// The kernel is flash-decoding: the spans are split into chunks of
// Options.ChunkTokens positions; each chunk keeps a running maximum, sum and weighted
// accumulator per query head (online softmax); chunks are independent, run in
// parallel on a persistent worker pool (by default on every CPU once the history
// reaches ParallelMinTokens), and are merged at the end, in order. Grouped-query
// attention reads each key and value row once per group of query heads: one pass
// over a run of rows scores all the group's heads (and adds the row into all their
// accumulators), and one online-softmax update covers the spans that start in one
// run of BatchTokens positions.
//
// Batch invariance: chunks and softmax updates fall at positions, never at token
// counts or worker counts, so a query gets the same bits alone, in a prefill tile
// beside other queries, or with any number of workers, provided its spans are cut at
// the multiples of BatchTokens and its kernels' results do not depend on how a span
// is cut into calls (quant.RowsQueriesIndependent, TestDotChannelSpanSplit). Package
// kv's TestStepsInvariant checks it end to end.
//
// Kernels: the row decoders and multi-query products live in package quant, the
// softmax kernels here; each has a portable scalar twin, the reference, and an
// AVX2+FMA implementation in assembly on amd64. KVQ_NOSIMD=1 or
// SetSIMD(false) selects the scalar ones.
//
// Causal prefill of n tokens is n queries, each over the spans describing the
// history as that query saw it (see package kv); Decode is the one-query kernel.
package attn

import (
	"errors"
	"fmt"
	"math"

	"kvq/internal/prefetch"
	"kvq/quant"
)

// Kind says how a span's keys or values are stored.
type Kind uint8

// Storage kinds of a Src.
const (
	F32     Kind = iota + 1 // plain float32 values in Src.F
	Rows                    // one Src.Row-encoded row per token and head in Src.Bytes
	Channel                 // Src.Chan-encoded blocks of G tokens per head in Src.Bytes
)

// Src locates the keys or the values of one span for every KV head.
//
//   - F32: token i of head h is F[h*HeadStride+i*Stride:][:headDim] (strides in float32s).
//   - Rows: token i of head h is Bytes[h*HeadStride+i*Stride:][:Row.RowBytes(headDim)]
//     (strides in bytes).
//   - Channel: the span's token i is token Off+i of a run of whole blocks of G tokens;
//     block j of head h is Bytes[h*HeadStride+j*Stride:][:Chan.BlockBytes(G, headDim)].
//     Scores are computed for whole blocks and the span's part is used. Values
//     stored so need a Chan that adds on its codes (quant.ChannelAdder).
//
// RoPE, optional with Channel, says the keys were stored before RoPE: the span's
// token i is at position Span.Pos + i, and its key is rotated there while it is
// scored (quant.DotChannelRoPE: the queries rotated back once per block, each decoded
// row rotated by its offset in the block), never stored rotated.
//
// Plan, optional with Rows, is Row resolved for the head size (quant.NewRowPlan,
// whose codec must be Row): the kernels then skip the codec's dispatch per span and
// head (13% of the CPU time of attention over 4096 tokens of q4 rows).
type Src struct {
	Kind       Kind
	F          []float32
	Bytes      []byte
	Row        quant.RowCodec
	Plan       *quant.RowPlan
	Chan       quant.ChannelCodec
	RoPE       *quant.RoPE
	G, Off     int
	HeadStride int
	Stride     int
}

// Span is a run of N consecutive history tokens whose keys are stored as K and
// values as V. Delta, when not 0, rotates the query by Delta positions (through
// Options.Rotate) before it is scored against this span's keys: a span whose keys
// were stored at positions Delta apart from where the query now considers them.
type Span struct {
	Pos   int // position of the span's first token (keys stored before RoPE are rotated from it)
	N     int
	Delta int
	K, V  Src
}

// Shape is the attention geometry: Heads query heads, KVHeads key/value heads
// (Heads must be a multiple of KVHeads), HeadDim values per head.
type Shape struct {
	Heads, KVHeads, HeadDim int
}

// Options tune the kernel. The zero value is valid.
type Options struct {
	// ChunkTokens is the length of the runs of positions whose tokens form one
	// independent chunk (rounded up to a multiple of BatchTokens); 0 means
	// DefaultChunkTokens.
	ChunkTokens int
	// Workers is the number of goroutines (the caller included, helpers from a
	// persistent pool) that process the chunks of a Decode or the query tiles of a
	// Prefill. 1 means the calling goroutine only. 0 means automatic: a Decode over
	// at least ParallelMinTokens tokens uses DefaultWorkers goroutines; a shorter
	// one runs on the caller; a Prefill of several queries spreads its tiles over
	// DefaultWorkers goroutines (one query is a Decode). Results do not depend on
	// Workers.
	Workers int
	// Rotate rotates one head vector by delta positions in place (RoPE). Required
	// only when a span has a non-zero Delta.
	Rotate func(x []float32, delta int)
	// Scale multiplies the scores q·k before the softmax; 0 means 1/√HeadDim.
	Scale float32
	// SoftCap, when positive, caps every scaled score s to SoftCap·tanh(s/SoftCap)
	// before the softmax (Gemma 2's attention logit soft-capping).
	SoftCap float32
}

// scale is the score scale of opt for head size d.
func (opt *Options) scale(d int) float32 {
	if opt.Scale != 0 {
		return opt.Scale
	}
	return float32(1 / math.Sqrt(float64(d)))
}

// softCapRow caps the scores of row to c·tanh(s/c) (c > 0), in float64 so that the
// result is correctly rounded whatever the tanh implementation.
func softCapRow(row []float32, c float32) {
	inv := 1 / float64(c)
	for i, s := range row {
		row[i] = float32(float64(c) * math.Tanh(float64(s)*inv))
	}
}

// DefaultChunkTokens is the chunk length used when Options.ChunkTokens is 0.
const DefaultChunkTokens = 2048

// chunkTokens is the chunk length in positions: ChunkTokens (or DefaultChunkTokens)
// rounded up to a multiple of BatchTokens.
func (opt *Options) chunkTokens() int {
	ct := opt.ChunkTokens
	if ct <= 0 {
		ct = DefaultChunkTokens
	}
	return (ct + BatchTokens - 1) / BatchTokens * BatchTokens
}

// chunkSpans sets dst to the chunks of spans, as ranges of span indices: the spans
// that start in one run of positions [k·ct, (k+1)·ct), in order (one empty chunk
// when there are no spans). Chunks end at positions, not at token counts, so that a
// query's chunks — each an online softmax of its own, merged in order — are the same
// whoever else shares its pass and however many workers run them.
func chunkSpans(dst [][2]int, spans []Span, ct int) [][2]int {
	dst = dst[:0]
	start := 0
	for i := 1; i < len(spans); i++ {
		if spans[i].Pos/ct != spans[start].Pos/ct {
			dst = append(dst, [2]int{start, i})
			start = i
		}
	}
	return append(dst, [2]int{start, len(spans)})
}

// ErrShape is returned (wrapped) for inconsistent shapes, lengths or spans.
var ErrShape = errors.New("attn: bad shape")

// Scratch holds reusable buffers. A Scratch may be reused across calls but not
// shared between concurrent calls. The zero value is ready to use.
type Scratch struct {
	sub    []*Scratch // per-worker scratch of a parallel Prefill
	tile   *tileScratch
	spans  []Span
	qs     []float32
	parts  []partial
	chunks [][2]int
	task   decodeTask
	run    func(i int) // task.run, made once (a method value allocates)
}

// decodeTask is one Decode call's work items, kept in its Scratch so that handing
// them to the workers allocates nothing: item i is chunk i/hg of the spans, for KV
// head group i mod hg.
type decodeTask struct {
	sh      Shape
	spans   []Span
	parts   []partial
	qs      []float32
	chunks  [][2]int
	rotate  func([]float32, int)
	softCap float32
	hg      int
}

func (t *decodeTask) run(i int) {
	c, g := t.chunks[i/t.hg], i%t.hg
	runChunk(&t.parts[i], t.qs, t.sh, t.spans[c[0]:c[1]], t.rotate, t.softCap, nil, g*t.sh.KVHeads/t.hg, (g+1)*t.sh.KVHeads/t.hg)
}

// partial is the online-softmax state of one chunk: per query head the running
// maximum m, the sum l of exp(score−m) and acc = Σ exp(score−m)·v.
type partial struct {
	m, l   []float64
	acc    []float32
	scores []float32
	tile   []float32 // scratch of quant.DotRows/AddRows, or a decoded channel block
	lo, sc []float32 // a channel block's zeros and scales
	qrot   []float32
	qblk   []float32 // a KV head's group queries rotated back to a pre-RoPE key block's position
	// Prepared queries (quant.RowPlan.PrepareQuery) of the key plan pqPlan, pqn
	// values per KV head; pqOK[kh]: head kh's are the current query's. A chunk's
	// spans share the query, so it is prepared once per KV head, not per span.
	pq     []float32
	pqPlan *quant.RowPlan
	pqn    int
	pqOK   []bool
	// dotSplit and addSplit (1 after reset): the kernel calls a KV head's group
	// heads are scored and added in, group/split heads each (see DecodeBatch).
	dotSplit, addSplit int
}

// reset prepares p for a chunk; maxSpan is the longest span and g the longest
// channel-codec block (in tokens, 1 if none).
func (p *partial) reset(sh Shape, maxSpan, g int) {
	p.m = grow(p.m, sh.Heads)
	p.l = grow(p.l, sh.Heads)
	p.acc = grow(p.acc, sh.Heads*sh.HeadDim)
	for i := range p.m {
		p.m[i] = math.Inf(-1)
		p.l[i] = 0
	}
	clear(p.acc)
	group := sh.Heads / sh.KVHeads
	p.scores = grow(p.scores, max(group*max(maxSpan, BatchTokens), scoreFloats))
	p.tile = grow(p.tile, max(quant.ScratchFloats(sh.HeadDim), g*sh.HeadDim, quant.ChannelAddFloats(sh.HeadDim)))
	p.lo = grow(p.lo, sh.HeadDim)
	p.sc = grow(p.sc, sh.HeadDim)
	p.qrot = grow(p.qrot, sh.Heads*sh.HeadDim)
	p.qblk = grow(p.qblk, group*sh.HeadDim)
	if cap(p.pqOK) < sh.KVHeads {
		p.pqOK = make([]bool, sh.KVHeads)
	}
	p.pqOK = p.pqOK[:sh.KVHeads]
	clear(p.pqOK)
	p.dotSplit, p.addSplit = 1, 1
}

// split makes runChunk score the group heads of each of the kvHeads KV heads in
// dot kernel calls and add their values in add calls, of group/dot and group/add
// heads each (both divide the group).
func (p *partial) split(dot, add, kvHeads int) {
	p.dotSplit, p.addSplit = dot, add
	if n := kvHeads * dot; cap(p.pqOK) < n {
		p.pqOK = make([]bool, n)
	} else {
		p.pqOK = p.pqOK[:n]
		clear(p.pqOK)
	}
}

// preparedQuery returns the group queries qh of dot call k (KV head kh's call i is
// k = kh·dotSplit + i, see split) prepared for plan (quant.RowPlan.PrepareQuery),
// preparing them on the first call since the query changed (p.pqOK cleared: reset,
// a new Delta), or nil when the plan reads the queries as they are.
func (p *partial) preparedQuery(plan *quant.RowPlan, qh []float32, k, group int) []float32 {
	m := plan.QueryFloats(group)
	if m == 0 {
		return nil
	}
	if plan != p.pqPlan || m != p.pqn || len(p.pq) < len(p.pqOK)*m {
		p.pqPlan, p.pqn = plan, m
		p.pq = grow(p.pq, len(p.pqOK)*m)
		clear(p.pqOK)
	}
	pq := p.pq[k*m : (k+1)*m]
	if !p.pqOK[k] {
		plan.PrepareQuery(pq, qh, group)
		p.pqOK[k] = true
	}
	return pq
}

// grow returns b with length n, reusing its array when it has room (the contents
// are not cleared), else a new zeroed slice.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// Decode computes one query's attention: out[h] = Σ_t softmax_t(q_h·k_t/√HeadDim)·v_t
// over the tokens of spans, for every query head h, where query head h reads KV head
// h/(Heads/KVHeads). q and out hold Heads·HeadDim values; they may not overlap.
// An empty history gives zeros.
func Decode(out, q []float32, sh Shape, spans []Span, opt Options, sc *Scratch) error {
	if err := checkShape(sh); err != nil {
		return err
	}
	hd := sh.Heads * sh.HeadDim
	if len(q) != hd || len(out) != hd {
		return fmt.Errorf("%w: len(q)=%d len(out)=%d, want heads·headDim=%d", ErrShape, len(q), len(out), hd)
	}
	if sc == nil {
		sc = new(Scratch)
	}
	maxSpan, maxG, err := checkSpans(spans, sh, opt)
	if err != nil {
		return err
	}
	// Fold the softmax scale into the query once.
	sc.qs = grow(sc.qs, hd)
	scaleTo(sc.qs, q, opt.scale(sh.HeadDim))

	// Partition spans into chunks of ChunkTokens positions (chunkSpans); every
	// path of a query (alone, in a prefill tile, with any number of workers) merges
	// the same chunks in the same order.
	workers := opt.Workers
	if workers == 0 {
		workers = 1
		if viewTokens(spans) >= ParallelMinTokens {
			workers = DefaultWorkers()
		}
	}
	sc.chunks = chunkSpans(sc.chunks, spans, opt.chunkTokens())
	// Fewer than two chunks per worker: each chunk's KV heads are split into hg
	// groups, a part of their own (a short history then still reads the cache on
	// every core, and uneven chunks balance).
	hg := 1
	if workers > 1 && len(sc.chunks) < 2*workers {
		hg = min(sh.KVHeads, workers)
	}
	n := len(sc.chunks) * hg
	for len(sc.parts) < n {
		sc.parts = append(sc.parts, partial{})
	}
	parts := sc.parts[:n]
	for i := range parts {
		parts[i].reset(sh, maxSpan, maxG)
	}
	sc.task = decodeTask{sh: sh, spans: spans, parts: parts, qs: sc.qs, chunks: sc.chunks, rotate: opt.Rotate, softCap: opt.SoftCap, hg: hg}
	if workers <= 1 || n == 1 {
		for i := range n {
			sc.task.run(i)
		}
	} else {
		if sc.run == nil {
			sc.run = sc.task.run
		}
		parallelFor(workers, n, sc.run)
	}
	sc.task.spans, sc.task.rotate = nil, nil // the caller's: not kept past the call
	// Merge the parts' (max, sum, acc) into the first one (a head a part did not run
	// has a sum of 0 there: merge takes the other's state).
	p0 := &parts[0]
	for i := 1; i < len(parts); i++ {
		merge(p0, &parts[i], sh.HeadDim)
	}
	finish(out, p0, sh)
	return nil
}

// finish writes the attention output of state p: acc/l per head (zeros for a head
// that saw no token).
func finish(out []float32, p *partial, sh Shape) {
	for h := 0; h < sh.Heads; h++ {
		o := out[h*sh.HeadDim : (h+1)*sh.HeadDim]
		a := p.acc[h*sh.HeadDim : (h+1)*sh.HeadDim]
		if p.l[h] == 0 {
			clear(o)
			continue
		}
		scaleTo(o, a, float32(1/p.l[h]))
	}
}

// scaleTo sets dst[i] = src[i]·s for i < len(src) (dst at least as long), eight at
// a time: a decode step of 16 sequences of 16 tokens spent 9% of its time in the
// loops this replaced, one value at a time, on the query and the output.
func scaleTo(dst, src []float32, s float32) {
	dst = dst[:len(src)]
	for len(src) >= 8 {
		d, x := dst[:8:8], src[:8:8]
		d[0], d[1], d[2], d[3] = x[0]*s, x[1]*s, x[2]*s, x[3]*s
		d[4], d[5], d[6], d[7] = x[4]*s, x[5]*s, x[6]*s, x[7]*s
		dst, src = dst[8:], src[8:]
	}
	for i, x := range src {
		dst[i] = x * s
	}
}

// merge folds chunk b's state into a: m = max(ma, mb), l = la·e^(ma−m) + lb·e^(mb−m),
// acc likewise.
func merge(a, b *partial, d int) {
	for h := range a.m {
		if b.l[h] == 0 {
			continue
		}
		if a.l[h] == 0 {
			a.m[h], a.l[h] = b.m[h], b.l[h]
			copy(a.acc[h*d:(h+1)*d], b.acc[h*d:(h+1)*d])
			continue
		}
		m := math.Max(a.m[h], b.m[h])
		fa, fb := math.Exp(a.m[h]-m), math.Exp(b.m[h]-m)
		a.m[h], a.l[h] = m, a.l[h]*fa+b.l[h]*fb
		aa, bb := a.acc[h*d:(h+1)*d], b.acc[h*d:(h+1)*d]
		fa32, fb32 := float32(fa), float32(fb)
		for i := range aa {
			aa[i] = aa[i]*fa32 + bb[i]*fb32
		}
	}
}

func checkShape(sh Shape) error {
	if sh.Heads < 1 || sh.KVHeads < 1 || sh.HeadDim < 1 || sh.Heads%sh.KVHeads != 0 {
		return fmt.Errorf("%w: heads=%d kvHeads=%d headDim=%d (heads must be a positive multiple of kvHeads)", ErrShape, sh.Heads, sh.KVHeads, sh.HeadDim)
	}
	return nil
}

// checkSpan verifies that every row or block the span names lies inside its slices,
// so that the kernel cannot index out of range.
func checkSpan(s *Span, sh Shape) error {
	if s.N < 1 {
		return fmt.Errorf("%w: span of %d tokens", ErrShape, s.N)
	}
	if err := checkSrc(&s.K, s.N, sh, "keys"); err != nil {
		return err
	}
	if s.V.Kind == Channel {
		if _, ok := s.V.Chan.(quant.ChannelAdder); !ok || s.V.RoPE != nil {
			return fmt.Errorf("%w: values stored per channel need a codec that adds on its codes (quant.ChannelAdder) and no RoPE", ErrShape)
		}
	}
	return checkSrc(&s.V, s.N, sh, "values")
}

func checkSrc(c *Src, n int, sh Shape, what string) error {
	d := sh.HeadDim
	if c.HeadStride < 0 || c.Stride < 0 {
		return fmt.Errorf("%w: %s: negative stride", ErrShape, what)
	}
	// Strides beyond the storage could only be valid for one head and one token;
	// rejecting them first keeps the products below from overflowing.
	if size := max(len(c.F), len(c.Bytes)); (sh.KVHeads > 1 && c.HeadStride > size) || (n > 1 && c.Stride > size) || n > size+1<<20 {
		return fmt.Errorf("%w: %s: strides %d, %d beyond storage of %d", ErrShape, what, c.HeadStride, c.Stride, size)
	}
	var need, have int
	switch c.Kind {
	case F32:
		need, have = (sh.KVHeads-1)*c.HeadStride+(n-1)*c.Stride+d, len(c.F)
	case Rows:
		if c.Row == nil {
			return fmt.Errorf("%w: %s: Rows without a codec", ErrShape, what)
		}
		rb := 0
		if c.Plan != nil {
			if c.Plan.Len() != d {
				return fmt.Errorf("%w: %s: row plan for %d values, head size %d", ErrShape, what, c.Plan.Len(), d)
			}
			rb = c.Plan.RowBytes()
		} else {
			rb = c.Row.RowBytes(d)
		}
		need, have = (sh.KVHeads-1)*c.HeadStride+(n-1)*c.Stride+rb, len(c.Bytes)
	case Channel:
		if c.Chan == nil || c.G < 1 || c.G > len(c.Bytes) || c.Off < 0 || c.Off >= c.G {
			return fmt.Errorf("%w: %s: Channel needs a codec, G ≥ 1 and 0 ≤ Off < G (G=%d Off=%d)", ErrShape, what, c.G, c.Off)
		}
		if c.RoPE != nil && (c.RoPE.Dims() > d || c.G > quant.MaxRoPEBlock) {
			return fmt.Errorf("%w: %s: RoPE of %d values on heads of %d, blocks of %d tokens (at most %d)", ErrShape, what, c.RoPE.Dims(), d, c.G, quant.MaxRoPEBlock)
		}
		blocks := (c.Off + n + c.G - 1) / c.G
		need, have = (sh.KVHeads-1)*c.HeadStride+(blocks-1)*c.Stride+c.Chan.BlockBytes(c.G, d), len(c.Bytes)
	default:
		return fmt.Errorf("%w: %s: unknown storage kind %d", ErrShape, what, c.Kind)
	}
	if need > have {
		return fmt.Errorf("%w: %s: span needs %d elements of storage, has %d", ErrShape, what, need, have)
	}
	return nil
}

// runChunk accumulates spans into p (online softmax) for the KV heads khLo ≤ kh <
// khHi and their query heads (the others' state is left alone). qs is the pre-scaled
// query. visible, when not nil, limits query head h to the first visible[h] tokens of
// spans (causal masking of a tile of queries, see Prefill); every head must see at
// least the first token.
func runChunk(p *partial, qs []float32, sh Shape, spans []Span, rotate func([]float32, int), softCap float32, visible []int, khLo, khHi int) {
	d := sh.HeadDim
	group := sh.Heads / sh.KVHeads
	lastDelta := 0
	q := qs
	clear(p.pqOK) // prepared for the query of an earlier call, perhaps rotated
	k := active.Load()
	base := 0 // tokens of spans before the batch
	for len(spans) > 0 {
		// A batch: consecutive spans with the same Delta that start in the same
		// BatchTokens-aligned run of positions as the first, at most BatchTokens
		// tokens (or one longer span). Its scores, for all group heads of a KV head,
		// go through one online-softmax update. Batches end at positions, not at
		// token counts: spans cut elsewhere (callers cut at every multiple of
		// BatchTokens) then give the same updates, the same bits.
		delta := spans[0].Delta
		nb := batchSpans(spans)
		ld := viewTokens(spans[:nb])
		batch := spans[:nb]
		spans = spans[nb:]
		b0 := base
		base += ld
		if delta != lastDelta {
			lastDelta = delta
			if delta == 0 {
				q = qs
			} else {
				copy(p.qrot, qs)
				for h := khLo * group; h < khHi*group; h++ {
					rotate(p.qrot[h*d:(h+1)*d], delta)
				}
				q = p.qrot
			}
			clear(p.pqOK)
		}
		// KV heads go kvPer at a time, span by span: a block stores the keys of all
		// its heads one after the other (then the values), so reading every head of
		// a span before the next span walks the cache in address order (head by
		// head, a span's part of a head is often a few hundred bytes, too short
		// for the hardware prefetchers), as many heads as keep the scores within
		// scoreFloats.
		kvPer := max(1, min(khHi-khLo, scoreFloats/(group*ld)))
		for kh0 := khLo; kh0 < khHi; kh0 += kvPer {
			kh1 := min(khHi, kh0+kvPer)
			sc := p.scores[:(kh1-kh0)*group*ld]
			off := 0
			for si := range batch {
				for kh := kh0; kh < kh1; kh++ {
					// What is read next (nc's head nkh, nn rows): the next head's
					// keys, the next span's, the first span's values.
					nc, nkh, nn := &batch[si].K, kh+1, batch[si].N
					switch {
					case kh+1 < kh1:
					case si+1 < len(batch):
						nc, nkh, nn = &batch[si+1].K, kh0, batch[si+1].N
					default:
						nc, nkh, nn = &batch[0].V, kh0, batch[0].N
					}
					if kh == kh1-1 { // what follows lies elsewhere: its first bytes too
						prefetchHead(headBytes(nc, nkh))
					}
					next := nextRows(&batch[si].K, nc, nkh, nn)
					// The group heads in p.dotSplit calls of sg heads each.
					for i, sg := 0, group/p.dotSplit; i < p.dotSplit; i++ {
						h := kh*group + i*sg
						scoreKeys(sc[(h-kh0*group)*ld+off:], ld, q[h*d:(h+sg)*d], &batch[si], kh, kh*p.dotSplit+i, d, sg, p, next)
					}
				}
				off += batch[si].N
			}
			// Online softmax update per query head; scores become weights in place.
			for h := kh0 * group; h < kh1*group; h++ {
				r := (h - kh0*group) * ld
				row := sc[r : r+ld]
				if visible != nil {
					v := visible[h] - b0
					if v <= 0 {
						clear(row) // nothing visible: zero weights
						continue
					}
					if v < ld {
						clear(row[v:])
						row = row[:v]
					}
				}
				if softCap > 0 {
					softCapRow(row, softCap)
				}
				mx := float64(k.maxRow(row))
				if mx > p.m[h] {
					if p.l[h] != 0 {
						f := math.Exp(p.m[h] - mx)
						p.l[h] *= f
						a := p.acc[h*d : (h+1)*d]
						f32 := float32(f)
						for i := range a {
							a[i] *= f32
						}
					}
					p.m[h] = mx
				}
				p.l[h] += float64(k.expRow(row, math.Float32bits(float32(p.m[h]))))
			}
			off = 0
			for si := range batch {
				for kh := kh0; kh < kh1; kh++ {
					// What is read next: the next head's values, the next span's, the
					// next heads' keys, the next batch's; nothing (nc nil) at the end.
					nc, nkh, nn := &batch[si].V, kh+1, batch[si].N
					switch {
					case kh+1 < kh1:
					case si+1 < len(batch):
						nc, nkh, nn = &batch[si+1].V, kh0, batch[si+1].N
					case kh1 < khHi:
						nc, nkh, nn = &batch[0].K, kh1, batch[0].N
					case len(spans) > 0:
						nc, nkh, nn = &spans[0].K, khLo, spans[0].N
					default:
						nc = nil
					}
					var next []byte
					if nc != nil {
						if kh == kh1-1 {
							prefetchHead(headBytes(nc, nkh))
						}
						next = nextRows(&batch[si].V, nc, nkh, nn)
					}
					for i, ag := 0, group/p.addSplit; i < p.addSplit; i++ {
						h := kh*group + i*ag
						addValues(p.acc[h*d:(h+ag)*d], sc[(h-kh0*group)*ld+off:], ld, &batch[si], kh, d, ag, p, next)
					}
				}
				off += batch[si].N
			}
		}
	}
}

// batchSpans returns how many of the leading spans form runChunk's next batch:
// consecutive spans with the same Delta that start in the same BatchTokens-aligned
// run of positions as the first, at most BatchTokens tokens (or one longer span).
func batchSpans(spans []Span) int {
	nb, ld := 1, spans[0].N
	lim := (spans[0].Pos/BatchTokens + 1) * BatchTokens
	for nb < len(spans) && spans[nb].Delta == spans[0].Delta && spans[nb].Pos < lim && ld+spans[nb].N <= BatchTokens {
		ld += spans[nb].N
		nb++
	}
	return nb
}

// rowsBytes returns the bytes of KV head kh's n rows of a Rows side and, when the
// next head's rows follow them (HeadStride = n·Stride: a whole cache span, whose heads
// lie back to back), every byte after. The kernels ask for the lines ahead of the rows
// they read, up to the end of the slice they get (quant.DotRows): those are then the
// next head's rows, read next; after a part of a span (a sequence's last span, filled
// up to its length) lie the span's unused slots, which asked for would be read from
// memory for nothing: f16 decode attention of 16 sequences of 16–144 tokens in a
// step spent 10–25% of its time reading them.
func rowsBytes(c *Src, kh, n int) []byte {
	b := c.Bytes[kh*c.HeadStride:]
	if c.HeadStride != n*c.Stride {
		b = b[:min(len(b), n*c.Stride)]
	}
	return b
}

// nextRows returns, for the kernels reading rows of c, the rows read after them
// (those of KV head nkh of nc, nn of them) for the kernels to ask for as they read
// (quant.RowPlan.DotRowsNext), or nil; both sides must be rows of one stride, read
// through a plan. Where c's rows are part of a span (a sequence's last span, rowsBytes
// clips them), the kernels asked for nothing past them otherwise (past them lie
// unused slots), and each head's rows were read from memory as the kernels reached
// them; where they are a whole span, the next head's rows one head ahead beat the
// lines PFDIST ahead. BenchmarkStepAttention (package kv), f16, cpu-ms per step:
// 16 sequences of 64 tokens 5.4–6.2 → 3.7–3.8 (parts of spans only), one of 4096
// 11.7–13.8 → 9.5–10.5 (whole spans as well).
func nextRows(c, nc *Src, nkh, nn int) []byte {
	if c.Kind != Rows || c.Plan == nil || nc.Kind != Rows || nc.Stride != c.Stride {
		return nil
	}
	b := nc.Bytes[nkh*nc.HeadStride:]
	return b[:min(len(b), nn*nc.Stride)]
}

// headBytes returns the bytes of KV head kh of a side stored as bytes (nil for F32).
func headBytes(c *Src, kh int) []byte {
	if c.Kind == F32 || kh*c.HeadStride >= len(c.Bytes) {
		return nil
	}
	return c.Bytes[kh*c.HeadStride:]
}

// prefetchHead asks for the first bytes of b (at most prefetchSpan), where a kernel
// will read next: a cache block's heads lie back to back, and the kernels prefetch
// past their own rows, but the first rows of the next span's first head lie elsewhere.
func prefetchHead(b []byte) {
	prefetch.Read(b[:min(len(b), prefetchSpan)])
}

// prefetchSpan is how many bytes prefetchHead asks for: the kernels prefetch 2048 bytes
// past each row they read, so from there on a head's rows are asked for already.
// Asking for the next span's first head while the last head of a span is read took
// 2–7% off decode attention at 32k for q2, q8 and the KIVI caches, about 2% off q4;
// f16 took about 1.5% longer.
const prefetchSpan = 2048

// BatchTokens is the most tokens whose scores one online-softmax update covers (a
// longer span is one batch of its own): spans are often one cache block (16 to 64
// tokens), and a softmax update per block and head cost more than its scores. An
// update covers the spans that start in one run of positions [k·BatchTokens,
// (k+1)·BatchTokens): a caller that cuts its spans at these multiples gets the same
// bits however else it cuts them (where the kernels' sums do not depend on the cut).
const BatchTokens = 256

// scoreFloats bounds the scores runChunk keeps for the KV heads it runs span by span
// (64 KiB: they stay in the core's L2 between the scores and the values).
const scoreFloats = 16 << 10

// scoreKeys writes sc[g*ld+i] = q_g · k_i for the span's keys i < s.N of KV head kh
// and the group query heads qh of its dot call (see preparedQuery), in one pass
// over the codes for all of them (quant.DotRows; a channel codec's blocks through
// quant.DotChannelSpan). next is what runChunk reads after them (nextRows), for the
// kernels to ask for.
func scoreKeys(sc []float32, ld int, qh []float32, s *Span, kh, call, d, group int, p *partial, next []byte) {
	k, n := &s.K, s.N
	switch k.Kind {
	case F32:
		quant.MultiDot(sc, ld, qh, group, k.F[kh*k.HeadStride:], k.Stride, n, d)
	case Rows:
		if k.Plan != nil {
			k.Plan.DotRowsNext(sc, ld, qh, p.preparedQuery(k.Plan, qh, call, group), group, rowsBytes(k, kh, n), k.Stride, n, p.tile, next)
			return
		}
		quant.DotRows(k.Row, sc, ld, qh, group, rowsBytes(k, kh, n), k.Stride, n, p.tile)
	case Channel:
		// Block token b is span token j·G + b − Off; only the span's tokens are scored
		// (a span is often part of a block).
		if k.RoPE != nil {
			quant.DotChannelRoPE(k.Chan, k.RoPE, s.Pos-k.Off, sc, ld, qh, group, k.Bytes[kh*k.HeadStride:], k.Stride, k.G, k.Off, n, d, p.tile, p.qblk, p.lo, p.sc)
			return
		}
		quant.DotChannelSpan(k.Chan, sc, ld, qh, group, k.Bytes[kh*k.HeadStride:], k.Stride, k.G, k.Off, n, d, p.tile, p.lo, p.sc)
	}
}

// addValues performs acc_g += Σ_i w[g*ld+i]·v_i for the span's values i < s.N of KV
// head kh, in one pass over the codes for all group heads (quant.AddRows); next as
// for scoreKeys.
func addValues(acc, w []float32, ld int, s *Span, kh, d, group int, p *partial, next []byte) {
	v, n := &s.V, s.N
	switch v.Kind {
	case F32:
		quant.MultiAxpy(acc, w, ld, group, v.F[kh*v.HeadStride:], v.Stride, n, d)
	case Rows:
		if v.Plan != nil {
			v.Plan.AddRowsNext(acc, w, ld, group, rowsBytes(v, kh, n), v.Stride, n, p.tile, next)
			return
		}
		quant.AddRows(v.Row, acc, w, ld, group, rowsBytes(v, kh, n), v.Stride, n, p.tile)
	case Channel:
		// checkSpan made sure the codec adds on its codes.
		quant.AddChannelSpan(v.Chan.(quant.ChannelAdder), acc, w, ld, group, v.Bytes[kh*v.HeadStride:], v.Stride, v.G, v.Off, n, d, p.tile)
	}
}

// exp32 is e^x for x ≤ 0 (softmax weights) with a relative error below 2e-7:
// x = n·ln2 + r with |r| ≤ ln2/2, e^r by its degree-6 Taylor polynomial (error
// |r|^7/7! < 1.2e-7), scaled by 2^n through the exponent bits. It returns 0 below
// −87 (where e^x is under the smallest normal float32) and is exact at 0.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	if x < -87 {
		return 0
	}
	v := x * log2e
	n := int32(v)
	if f := v - float32(n); f > 0.5 {
		n++
	} else if f < -0.5 {
		n--
	}
	fn := float32(n)
	r := x - fn*ln2hi - fn*ln2lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(n+127)<<23)
}
