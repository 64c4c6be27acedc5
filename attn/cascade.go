package attn

import (
	"fmt"
	"sync/atomic"

	"kvq/quant"
)

// DecodeBatch computes one query per view, as a decode step of several sequences
// does: out[i] gets the bits of Decode(out[i], q[i], sh, views[i], opt, …) whatever
// the other views are. q[i] and out[i] hold Heads·HeadDim values.
//
// Views that begin with the same spans (the same positions over the same storage,
// as sequences sharing cache blocks through a fork or an adopted prefix see them)
// are computed together over that common part (cascade attention): the longest
// run of leading spans all the views of a group share and that ends at a multiple
// of BatchTokens positions (where a query's online-softmax updates end, see
// runChunk) is one grouped-query pass whose KV heads serve every sharer's query
// heads, each stored row read from memory once for all of them; then each query
// continues over its own spans from the state the shared part left it. Where the
// kernels give a query the same bits whatever other queries share the call (the
// float codecs; quant.RowsQueriesIndependent), one kernel call scores (or adds)
// all the sharers' heads; otherwise each query's heads take a call of their own,
// the one its Decode makes, over rows still in the core's cache (sideSplit). Views
// that share nothing are Decodes of their own.
//
// The work is spread over Options.Workers goroutines (0: DefaultWorkers).
func DecodeBatch(out, q [][]float32, sh Shape, views [][]Span, opt Options, sc *BatchScratch) error {
	if err := checkShape(sh); err != nil {
		return err
	}
	n := len(views)
	if len(q) != n || len(out) != n {
		return fmt.Errorf("%w: %d views, %d queries, %d outputs", ErrShape, n, len(q), len(out))
	}
	hd := sh.Heads * sh.HeadDim
	for i := range views {
		if len(q[i]) != hd || len(out[i]) != hd {
			return fmt.Errorf("%w: query %d: len(q)=%d len(out)=%d, want heads·headDim=%d", ErrShape, i, len(q[i]), len(out[i]), hd)
		}
	}
	if sc == nil {
		sc = new(BatchScratch)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = DefaultWorkers()
	}
	sc.plan(views)
	for len(sc.sub) < workers {
		sc.sub = append(sc.sub, new(Scratch))
	}
	sc.stats = BatchStats{Queries: int64(n)}
	for i := range views {
		sc.stats.AttendedRows += int64(viewTokens(views[i]) * sh.KVHeads)
	}
	// Every row is read once per view, but a group's shared rows once for all.
	sc.stats.Rows = sc.stats.AttendedRows
	for gi := range sc.groups {
		g := &sc.groups[gi]
		shared := int64(viewTokens(views[g.members[0]][:g.shared]) * sh.KVHeads)
		sc.stats.SharedQueries += int64(len(g.members))
		sc.stats.SharedRows += shared
		sc.stats.Rows -= int64(len(g.members)-1) * shared
	}

	// Views alone: one Decode each, spread over the workers (each on one goroutine:
	// the results do not depend on it).
	one := opt
	one.Workers = 1
	if len(sc.alone) == 1 {
		one.Workers = opt.Workers
	}
	for len(sc.own) < workers {
		sc.own = append(sc.own, ownScratch{})
	}
	err := sc.each(workers, len(sc.alone), func(w, k int) error {
		i := sc.alone[k]
		if err := Decode(out[i], q[i], sh, views[i], one, sc.sub[w]); err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for gi := range sc.groups {
		if err := sc.cascade(out, q, sh, views, &sc.groups[gi], opt, workers); err != nil {
			return err
		}
	}
	return nil
}

// BatchStats counts a DecodeBatch's work, as its plan lays it out, or the sum of
// several (Add). A row is one token's key and value of one KV head, counted each
// time a pass of the kernels reads it: once per view, a group's shared rows once for
// the group.
type BatchStats struct {
	Queries       int64 `json:"queries"`        // one-token queries (views) computed
	SharedQueries int64 `json:"shared_queries"` // of which in a group sharing leading spans
	AttendedRows  int64 `json:"attended_rows"`  // rows the queries attend over (each query's view)
	Rows          int64 `json:"rows"`           // rows read (AttendedRows less the shared rows read once for several)
	SharedRows    int64 `json:"shared_rows"`    // of which read once for every query of a group (a shared pass)
}

// Add adds o's counts to s's.
func (s *BatchStats) Add(o BatchStats) {
	s.Queries += o.Queries
	s.SharedQueries += o.SharedQueries
	s.AttendedRows += o.AttendedRows
	s.Rows += o.Rows
	s.SharedRows += o.SharedRows
}

// BatchScratch holds DecodeBatch's reusable buffers and the statistics of its last
// call. It may be reused across calls but not shared between concurrent calls. The
// zero value is ready to use.
type BatchScratch struct {
	sub    []*Scratch // per worker
	groups []cascadeGroup
	alone  []int
	taken  []bool
	errs   []error
	qs     []float32
	chunks [][2]int
	parts  []partial    // the shared pass's states (see cascade)
	own    []ownScratch // per worker
	// each's loop: the next item no worker has taken, of eachN, each run by
	// eachFn; eachRun is runEach, made once.
	next    atomic.Int32
	eachN   int
	eachFn  func(w, k int) error
	eachRun func(w int)
	stats   BatchStats
}

// Stats returns the statistics of the last DecodeBatch.
func (sc *BatchScratch) Stats() BatchStats { return sc.stats }

// cascadeGroup is views that share their first spans: members (view indices) and
// how many leading spans they share.
type cascadeGroup struct {
	members []int
	shared  int
}

// plan sorts views into groups sharing leading spans and views alone.
func (sc *BatchScratch) plan(views [][]Span) {
	n := len(views)
	sc.alone = sc.alone[:0]
	sc.groups = sc.groups[:0]
	if cap(sc.taken) < n {
		sc.taken = make([]bool, n)
	}
	taken := sc.taken[:n]
	clear(taken)
	for i := range views {
		if taken[i] {
			continue
		}
		taken[i] = true
		var g *cascadeGroup
		shared := 0
		for j := i + 1; j < n; j++ {
			if taken[j] {
				continue
			}
			s := SharedSpans(views[i], views[j])
			if s == 0 {
				continue
			}
			if g == nil {
				if len(sc.groups) < cap(sc.groups) {
					sc.groups = sc.groups[:len(sc.groups)+1]
				} else {
					sc.groups = append(sc.groups, cascadeGroup{})
				}
				g = &sc.groups[len(sc.groups)-1]
				g.members = append(g.members[:0], i)
				shared = s
			}
			shared = min(shared, s)
			g.members = append(g.members, j)
			taken[j] = true
		}
		if g == nil {
			sc.alone = append(sc.alone, i)
			continue
		}
		// The group's common spans, cut back to a multiple of BatchTokens.
		g.shared = batchCut(views[i], shared)
	}
}

// SharedSpans returns how many leading spans a and b have in common (the same
// positions, deltas and storage) such that the common part ends at a multiple of
// BatchTokens positions and the rest of both views lies beyond it: the part
// DecodeBatch scores once for both.
func SharedSpans(a, b []Span) int {
	k := 0
	for k < len(a) && k < len(b) && sameSpan(&a[k], &b[k]) {
		k++
	}
	k = batchCut(a, k)
	if k > 0 {
		end := a[k-1].Pos + a[k-1].N
		for _, v := range [2][]Span{a, b} {
			if k < len(v) && v[k].Pos < end {
				return 0
			}
		}
	}
	return k
}

// batchCut returns the largest k' ≤ k such that spans[:k'] ends at a multiple of
// BatchTokens positions (0 if none): a query's online-softmax batches then end
// there (runChunk), and its state after them does not depend on what follows.
func batchCut(spans []Span, k int) int {
	for k > 0 && (spans[k-1].Pos+spans[k-1].N)%BatchTokens != 0 {
		k--
	}
	return k
}

// sameSpan reports whether a and b are the same span over the same storage.
func sameSpan(a, b *Span) bool {
	return a.Pos == b.Pos && a.N == b.N && a.Delta == b.Delta && sameStorage(&a.K, &b.K) && sameStorage(&a.V, &b.V)
}

// cascade computes the queries of group g (see DecodeBatch) in two phases. The
// shared pass runs the group's common spans in the chunks a Decode makes of them,
// each chunk split over the workers by KV heads, into one grouped-query state per
// chunk (and head range) holding every query's heads. Then each query, on its own worker,
// folds its states of the shared chunks in order, the last continued over its own
// spans of that chunk when it has any, and its own later chunks as a Decode does.
func (sc *BatchScratch) cascade(out, q [][]float32, sh Shape, views [][]Span, g *cascadeGroup, opt Options, workers int) error {
	shared := views[g.members[0]][:g.shared]
	maxSpan, maxG, err := checkSpans(shared, sh, opt)
	if err != nil {
		return fmt.Errorf("query %d: %w", g.members[0], err)
	}
	t := len(g.members)
	d, group := sh.HeadDim, sh.Heads/sh.KVHeads
	scale := opt.scale(d)
	// Pre-scaled queries: query j's at qs[j·hd:], and laid out (KV head, query,
	// group head) as the heads of one grouped-query shape psh in vqs.
	hd := sh.Heads * d
	sc.qs = grow(sc.qs, 2*t*hd)
	qs, vqs := sc.qs[:t*hd], sc.qs[t*hd:]
	for j, i := range g.members {
		scaleTo(qs[j*hd:], q[i], scale)
	}
	psh := Shape{Heads: sh.KVHeads * t * group, KVHeads: sh.KVHeads, HeadDim: d}
	for kh := 0; kh < sh.KVHeads; kh++ {
		for j := range t {
			copy(vqs[(kh*t+j)*group*d:][:group*d], qs[j*hd+kh*group*d:][:group*d])
		}
	}
	// Kernels whose results depend on the queries sharing a call take each query's
	// group heads in a call of their own, as its Decode does.
	dotSplit, addSplit := sideSplit(shared, t)
	ct := opt.chunkTokens()
	sc.chunks = chunkSpans(sc.chunks, shared, ct)
	nc := len(sc.chunks)
	hg := 1
	if workers > 1 && nc < 2*workers {
		hg = min(sh.KVHeads, workers)
	}
	items := nc * hg
	for len(sc.parts) < items {
		sc.parts = append(sc.parts, partial{})
	}
	parts := sc.parts[:items]
	for i := range parts {
		parts[i].reset(psh, maxSpan, maxG)
		parts[i].split(dotSplit, addSplit, sh.KVHeads)
	}
	run := func(it int) {
		c, r := it/hg, it%hg
		runChunk(&parts[it], vqs, psh, shared[sc.chunks[c][0]:sc.chunks[c][1]], opt.Rotate, opt.SoftCap, nil, r*sh.KVHeads/hg, (r+1)*sh.KVHeads/hg)
	}
	parallelFor(workers, items, run)
	// A chunk's head ranges into its first state (disjoint heads: merge copies).
	for c := range nc {
		for r := 1; r < hg; r++ {
			merge(&parts[c*hg], &parts[c*hg+r], d)
		}
	}

	// Each query over its own spans.
	lastChunk := shared[sc.chunks[nc-1][0]].Pos / ct
	return sc.each(workers, t, func(w, j int) error {
		ps := &sc.own[w]
		i := g.members[j]
		rest := views[i][g.shared:]
		oMaxSpan, oMaxG, err := checkSpans(rest, sh, opt)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		oMaxSpan, oMaxG = max(oMaxSpan, maxSpan), max(oMaxG, maxG)
		// The query's own chunks; the first continues the last shared chunk's
		// state when it lies in the same run of ct positions.
		ps.chunks = chunkSpans(ps.chunks, rest, ct)
		oc := ps.chunks
		if len(rest) == 0 {
			oc = nil // chunkSpans's one empty chunk
		}
		qj := qs[j*hd : (j+1)*hd]
		res, cur := &ps.res, &ps.cur
		res.reset(sh, oMaxSpan, oMaxG)
		for c := range nc {
			cur.reset(sh, oMaxSpan, oMaxG)
			extract(cur, &parts[c*hg], sh, j, t)
			if c == nc-1 && len(oc) > 0 && rest[oc[0][0]].Pos/ct == lastChunk {
				runChunk(cur, qj, sh, rest[oc[0][0]:oc[0][1]], opt.Rotate, opt.SoftCap, nil, 0, sh.KVHeads)
				oc = oc[1:]
			}
			merge(res, cur, d)
		}
		for _, c := range oc {
			cur.reset(sh, oMaxSpan, oMaxG)
			runChunk(cur, qj, sh, rest[c[0]:c[1]], opt.Rotate, opt.SoftCap, nil, 0, sh.KVHeads)
			merge(res, cur, d)
		}
		finish(out[i], res, sh)
		return nil
	})
}

// each runs fn(w, k) for every k < n on up to workers goroutines (w: the worker,
// whose scratch fn may use), each taking the next k no worker has taken, so that
// items of different sizes, or a worker slowed by other load, leave the others at
// most one item to wait for (a fixed share per worker left the caller waiting for
// the rest of a descheduled helper's share). A worker stops at its first error; as
// the items are taken in order, every item before the lowest that failed was run,
// and each returns that item's error, as a loop over the items in order would.
func (sc *BatchScratch) each(workers, n int, fn func(w, k int) error) error {
	sc.errs = grow(sc.errs, n)
	clear(sc.errs)
	sc.next.Store(0)
	sc.eachN, sc.eachFn = n, fn
	if sc.eachRun == nil {
		sc.eachRun = sc.runEach // made once: a method value per call would be garbage
	}
	nw := min(workers, n)
	parallelFor(nw, nw, sc.eachRun) // on the caller alone for nw ≤ 1
	sc.eachFn = nil
	for _, err := range sc.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runEach is worker w's loop of each.
func (sc *BatchScratch) runEach(w int) {
	for {
		k := int(sc.next.Add(1)) - 1
		if k >= sc.eachN {
			return
		}
		if err := sc.eachFn(w, k); err != nil {
			sc.errs[k] = err
			return
		}
	}
}

// ownScratch is one worker's buffers for the own spans of a group's queries.
type ownScratch struct {
	res, cur partial
	chunks   [][2]int
}

// extract sets p's state to query j's heads of src, the state of a grouped-query
// pass whose KV head kh serves t queries' group heads, ordered (query, group head).
func extract(p, src *partial, sh Shape, j, t int) {
	d, group := sh.HeadDim, sh.Heads/sh.KVHeads
	for kh := 0; kh < sh.KVHeads; kh++ {
		for g := range group {
			h, vh := kh*group+g, (kh*t+j)*group+g
			p.m[h], p.l[h] = src.m[vh], src.l[vh]
			copy(p.acc[h*d:(h+1)*d], src.acc[vh*d:(vh+1)*d])
		}
	}
}

// sideSplit returns how many calls the kernels take a KV head's group heads of t
// queries in, for the keys and for the values of spans: 1 where they give each
// query the same bits whatever other queries share the call
// (quant.RowsQueriesIndependent, ChannelQueriesIndependent), else t, a call per
// query as its own Decode makes.
func sideSplit(spans []Span, t int) (dot, add int) {
	dot, add = 1, 1
	for i := range spans {
		if dot == 1 && !sideIndependent(&spans[i].K, false) {
			dot = t
		}
		if add == 1 && !sideIndependent(&spans[i].V, true) {
			add = t
		}
	}
	return dot, add
}

// sideIndependent reports whether the kernels over c, keys or values, give each
// query the same bits whatever other queries share the call. Values stored per
// channel are not claimed to: their blocks need not end where the keys' do, and a
// prefill tile's shared pass over such views gave other bits than each query's
// Decode (TestLogitsBatchInvariant, kivi2/chan2:g=16).
func sideIndependent(c *Src, values bool) bool {
	switch c.Kind {
	case Rows:
		return quant.RowsQueriesIndependent(c.Row)
	case Channel:
		return !values && quant.ChannelQueriesIndependent()
	}
	return true
}
