package attn

import (
	"errors"
	"fmt"
	"unsafe"
)

// Prefill computes causal attention for n consecutive queries: query i (q and out
// rows i, Heads·HeadDim values each) attends over the spans that spans(i, dst)
// appends to dst — the history as that query sees it, its own token included. With
// Options.Workers > 1 the work is spread over that many goroutines (spans is then
// called concurrently and must be safe for it).
//
// Consecutive queries are scored together in tiles of up to PrefillTile, each
// stored key and value row read once per tile instead of once per query: the tile's
// queries act as extra heads of one grouped-query Decode. When every query's view is
// a prefix of the last one's (same storage, the last span possibly shorter) — a
// cache that stores a token the same way whoever queries it — and the kernels give
// each query the same bits whatever other queries share the call
// (queriesIndependent: the float codecs, and every codec under the scalar kernels),
// each query is masked to its own prefix. Otherwise each query is its own Decode
// (full-precision windows: KIVI keeps the newest tokens unquantized, so each query
// sees them differently). Every query thus gets the bits of its own Decode, which
// makes a prefill of n tokens equal to n single-token steps however a sequence's
// prompt was split into steps.
func Prefill(out, q []float32, n int, sh Shape, spans func(i int, dst []Span) []Span, opt Options, sc *Scratch) error {
	if err := checkShape(sh); err != nil {
		return err
	}
	hd := sh.Heads * sh.HeadDim
	if n < 0 || len(q) != n*hd || len(out) != n*hd {
		return fmt.Errorf("%w: prefill of %d queries: len(q)=%d len(out)=%d, want %d", ErrShape, n, len(q), len(out), n*hd)
	}
	if sc == nil {
		sc = new(Scratch)
	}
	if n == 1 { // one query: a Decode, which may split a long history over workers
		sc.spans = spans(0, sc.spans[:0])
		if err := Decode(out, q, sh, sc.spans, opt, sc); err != nil {
			return fmt.Errorf("query 0: %w", err)
		}
		return nil
	}
	// Tiles of PrefillTile queries whatever the workers, so that results do not
	// depend on the CPU count (the float sums of a tile follow its boundaries).
	// Workers 0 (automatic) uses every CPU: a tile is many queries over the history.
	workers := opt.Workers
	if workers == 0 {
		workers = DefaultWorkers()
	}
	tile := PrefillTile
	tiles := (n + tile - 1) / tile
	workers = max(1, min(workers, tiles))
	one := opt
	one.Workers = 1
	if workers <= 1 {
		for i0 := 0; i0 < n; i0 += tile {
			if err := sc.prefillTile(out, q, i0, min(n, i0+tile), sh, spans, one); err != nil {
				return err
			}
		}
		return nil
	}
	// Tiles are independent: spread them over the workers (interleaved, as later
	// tiles see longer histories), each worker with its own scratch.
	for len(sc.sub) < workers {
		sc.sub = append(sc.sub, new(Scratch))
	}
	errs := make([]error, workers)
	parallelFor(workers, workers, func(w int) {
		ws := sc.sub[w]
		for t := w; t < tiles; t += workers {
			i0 := t * tile
			if err := ws.prefillTile(out, q, i0, min(n, i0+tile), sh, spans, one); err != nil {
				errs[w] = err
				return
			}
		}
	})
	return errors.Join(errs...)
}

// PrefillTile is the most consecutive queries Prefill scores in one pass over the
// stored rows.
const PrefillTile = 16

// tileScratch is Prefill's per-tile scratch.
type tileScratch struct {
	view    []Span
	visible []int
	vis     []int // visible, less the tokens of the chunks before
	tokens  []int
}

// prefillTile computes queries i0..i1-1 of a Prefill (see there): one masked pass
// when every view is a prefix of the last one, else each query's Decode.
func (sc *Scratch) prefillTile(out, q []float32, i0, i1 int, sh Shape, spans func(i int, dst []Span) []Span, opt Options) error {
	hd := sh.Heads * sh.HeadDim
	if sc.tile == nil {
		sc.tile = new(tileScratch)
	}
	ts := sc.tile
	t := i1 - i0
	sc.spans = spans(i1-1, sc.spans[:0])
	last := sc.spans
	ts.tokens = grow(ts.tokens, t)
	ts.tokens[t-1] = viewTokens(last)
	prefix := t > 1 && queriesIndependent(last)
	for j := 0; j < t-1 && prefix; j++ {
		ts.view = spans(i0+j, ts.view[:0])
		ts.tokens[j], prefix = prefixOf(ts.view, last)
	}
	if prefix {
		return sc.tilePass(out, q, i0, i1, sh, last, ts.tokens, opt)
	}
	for i := i0; i < i1; i++ {
		sc.spans = spans(i, sc.spans[:0])
		if err := Decode(out[i*hd:(i+1)*hd], q[i*hd:(i+1)*hd], sh, sc.spans, opt, sc); err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
	}
	return nil
}

// tilePass runs queries i0..i1-1 over shared as one grouped-query Decode: KV head
// kh serves t·group heads, ordered (query, head of the group), each pre-scaled and
// limited to the first tokens[j] tokens of shared. The spans go in the chunks a
// Decode makes of them (chunkSpans), merged in order: each query's chunks are those
// of its own Decode (the ones past its view leave its state alone).
func (sc *Scratch) tilePass(out, q []float32, i0, i1 int, sh Shape, shared []Span, tokens []int, opt Options) error {
	maxSpan, maxG, err := checkSpans(shared, sh, opt)
	if err != nil {
		return fmt.Errorf("query %d: %w", i1-1, err)
	}
	ts := sc.tile
	hd, d, group, t := sh.Heads*sh.HeadDim, sh.HeadDim, sh.Heads/sh.KVHeads, i1-i0
	vg := t * group
	vsh := Shape{Heads: sh.KVHeads * vg, KVHeads: sh.KVHeads, HeadDim: d}
	sc.qs = grow(sc.qs, vsh.Heads*d)
	ts.visible = grow(ts.visible, vsh.Heads)
	scale := opt.scale(d)
	for kh := 0; kh < sh.KVHeads; kh++ {
		for j := 0; j < t; j++ {
			for g := 0; g < group; g++ {
				vh := (kh*t+j)*group + g
				src := q[(i0+j)*hd+(kh*group+g)*d:][:d]
				scaleTo(sc.qs[vh*d:], src, scale)
				ts.visible[vh] = tokens[j]
			}
		}
	}
	sc.chunks = chunkSpans(sc.chunks, shared, opt.chunkTokens())
	for len(sc.parts) < len(sc.chunks) {
		sc.parts = append(sc.parts, partial{})
	}
	ts.vis = grow(ts.vis, vsh.Heads)
	before := 0 // tokens of the chunks before
	for c, ch := range sc.chunks {
		p := &sc.parts[c]
		p.reset(vsh, maxSpan, maxG)
		for h, v := range ts.visible {
			ts.vis[h] = v - before
		}
		runChunk(p, sc.qs, vsh, shared[ch[0]:ch[1]], opt.Rotate, opt.SoftCap, ts.vis, 0, vsh.KVHeads)
		before += viewTokens(shared[ch[0]:ch[1]])
		if c > 0 {
			merge(&sc.parts[0], p, d)
		}
	}
	p := &sc.parts[0]
	for j := 0; j < t; j++ {
		o := out[(i0+j)*hd : (i0+j+1)*hd]
		for kh := 0; kh < sh.KVHeads; kh++ {
			for g := 0; g < group; g++ {
				h, vh := kh*group+g, (kh*t+j)*group+g
				// Every query sees its first token: l > 0.
				scaleTo(o[h*d:], p.acc[vh*d:(vh+1)*d], float32(1/p.l[vh]))
			}
		}
	}
	return nil
}

// queriesIndependent reports whether the kernels give each query over spans the
// same bits whatever other queries share the pass and however many of the rows
// after its own it is masked from (quant.RowsQueriesIndependent): only then may a
// tile of queries share a pass, its result being each query's Decode bit for bit
// (outputs must not depend on how a sequence's tokens were split into steps).
func queriesIndependent(spans []Span) bool {
	for i := range spans {
		if !sideIndependent(&spans[i].K, false) || !sideIndependent(&spans[i].V, true) {
			return false
		}
	}
	return true
}

// checkSpans validates spans as Decode does and returns the longest span and the
// largest channel block.
func checkSpans(spans []Span, sh Shape, opt Options) (maxSpan, maxG int, err error) {
	maxG = 1
	for i := range spans {
		if err := checkSpan(&spans[i], sh); err != nil {
			return 0, 0, fmt.Errorf("span %d (pos %d): %w", i, spans[i].Pos, err)
		}
		if spans[i].Delta != 0 && opt.Rotate == nil {
			return 0, 0, fmt.Errorf("%w: span %d has delta %d but Options.Rotate is nil", ErrShape, i, spans[i].Delta)
		}
		maxSpan = max(maxSpan, spans[i].N)
		for _, c := range [2]*Src{&spans[i].K, &spans[i].V} {
			if c.Kind == Channel {
				maxG = max(maxG, c.G)
			}
		}
	}
	return maxSpan, maxG, nil
}

// viewTokens is the number of tokens spans describe.
func viewTokens(spans []Span) int {
	n := 0
	for i := range spans {
		n += spans[i].N
	}
	return n
}

// prefixOf reports whether view describes a prefix of last: the same spans over
// the same storage, the final one possibly shorter; and how many tokens it holds.
func prefixOf(view, last []Span) (tokens int, ok bool) {
	if len(view) == 0 || len(view) > len(last) {
		return 0, false
	}
	for i := range view {
		a, b := &view[i], &last[i]
		if a.Pos != b.Pos || a.Delta != b.Delta || a.N > b.N || (a.N < b.N && i != len(view)-1) ||
			!sameStorage(&a.K, &b.K) || !sameStorage(&a.V, &b.V) {
			return 0, false
		}
		tokens += a.N
	}
	return tokens, true
}

// sameStorage reports whether a and b locate rows the same way in the same memory.
// Codecs are not compared (the storage decides them).
func sameStorage(a, b *Src) bool {
	return a.Kind == b.Kind && a.HeadStride == b.HeadStride && a.Stride == b.Stride && a.G == b.G && a.Off == b.Off && a.RoPE == b.RoPE &&
		unsafe.SliceData(a.F) == unsafe.SliceData(b.F) && unsafe.SliceData(a.Bytes) == unsafe.SliceData(b.Bytes)
}
