package attn

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Prefill computes causal attention for n consecutive queries: query i (q and out
// rows i, Heads·HeadDim values each) attends over the spans that spans(i, dst)
// appends to dst — the history as that query sees it, its own token included. With
// Options.Workers > 1 the work is spread over that many goroutines (spans is then
// called concurrently and must be safe for it).
//
// Consecutive queries are scored together in tiles of up to PrefillTile: when every
// query's view is a prefix of the last one's (same storage, the last span possibly
// shorter) — the case of a cache that stores a token the same way whoever queries
// it — each stored key and value row is read once per tile instead of once per
// query, the tile's queries acting as extra heads of a grouped-query Decode with
// each masked to its own prefix. Otherwise (full-precision windows, evictions) the
// tile's queries run one Decode each over their own views, which makes a prefill of
// n tokens equal to n single-token steps for every cache.
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
	// Tiles small enough that every worker gets one.
	workers := max(1, opt.Workers)
	tile := max(1, min(PrefillTile, (n+workers-1)/workers))
	tiles := (n + tile - 1) / tile
	workers = min(workers, tiles)
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
	tokens  []int
}

// prefillTile computes queries i0..i1-1 of a Prefill (see there), together when
// their views allow it, else one Decode each.
func (sc *Scratch) prefillTile(out, q []float32, i0, i1 int, sh Shape, spans func(i int, dst []Span) []Span, opt Options) error {
	hd := sh.Heads * sh.HeadDim
	if sc.tile == nil {
		sc.tile = new(tileScratch)
	}
	ts := sc.tile
	t := i1 - i0
	sc.spans = spans(i1-1, sc.spans[:0])
	last := sc.spans
	ts.tokens = growInt(ts.tokens, t)
	shared := t > 1
	if shared {
		ts.tokens[t-1] = viewTokens(last)
		for j := 0; j < t-1 && shared; j++ {
			ts.view = spans(i0+j, ts.view[:0])
			ts.tokens[j], shared = prefixOf(ts.view, last)
		}
	}
	if !shared {
		for i := i0; i < i1; i++ {
			sc.spans = spans(i, sc.spans[:0])
			if err := Decode(out[i*hd:(i+1)*hd], q[i*hd:(i+1)*hd], sh, sc.spans, opt, sc); err != nil {
				return fmt.Errorf("query %d: %w", i, err)
			}
		}
		return nil
	}
	maxSpan, maxG := 0, 1
	for i := range last {
		if err := checkSpan(&last[i], sh); err != nil {
			return fmt.Errorf("query %d: span %d (pos %d): %w", i1-1, i, last[i].Pos, err)
		}
		if last[i].Delta != 0 && opt.Rotate == nil {
			return fmt.Errorf("%w: query %d: span %d has delta %d but Options.Rotate is nil", ErrShape, i1-1, i, last[i].Delta)
		}
		maxSpan = max(maxSpan, last[i].N)
		if last[i].K.Kind == Channel {
			maxG = max(maxG, last[i].K.G)
		}
	}
	// The tile as one grouped-query Decode: KV head kh serves t·group heads, ordered
	// (query, head of the group), each pre-scaled and limited to its query's tokens.
	d, group := sh.HeadDim, sh.Heads/sh.KVHeads
	vg := t * group
	vsh := Shape{Heads: sh.KVHeads * vg, KVHeads: sh.KVHeads, HeadDim: d}
	sc.qs = grow32(sc.qs, vsh.Heads*d)
	ts.visible = growInt(ts.visible, vsh.Heads)
	scale := float32(1 / math.Sqrt(float64(d)))
	for kh := 0; kh < sh.KVHeads; kh++ {
		for j := 0; j < t; j++ {
			for g := 0; g < group; g++ {
				vh := (kh*t+j)*group + g
				src := q[(i0+j)*hd+(kh*group+g)*d:][:d]
				dst := sc.qs[vh*d : (vh+1)*d]
				for c, x := range src {
					dst[c] = x * scale
				}
				ts.visible[vh] = ts.tokens[j]
			}
		}
	}
	if len(sc.parts) == 0 {
		sc.parts = append(sc.parts, partial{})
	}
	p := &sc.parts[0]
	p.reset(vsh, maxSpan, maxG)
	runChunk(p, sc.qs, vsh, last, opt.Rotate, ts.visible)
	for kh := 0; kh < sh.KVHeads; kh++ {
		for j := 0; j < t; j++ {
			for g := 0; g < group; g++ {
				vh := (kh*t+j)*group + g
				o := out[(i0+j)*hd+(kh*group+g)*d:][:d]
				inv := float32(1 / p.l[vh]) // every query sees its first token: l > 0
				for c, a := range p.acc[vh*d : (vh+1)*d] {
					o[c] = a * inv
				}
			}
		}
	}
	return nil
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
	return a.Kind == b.Kind && a.HeadStride == b.HeadStride && a.Stride == b.Stride && a.G == b.G && a.Off == b.Off &&
		unsafe.SliceData(a.F) == unsafe.SliceData(b.F) && unsafe.SliceData(a.Bytes) == unsafe.SliceData(b.Bytes)
}

func growInt(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}
