package kv

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"kvq/attn"
	"kvq/internal/blockmem"
)

// Store is the paged KV cache: a pool of fixed-size physical blocks under a byte
// budget, one block table per sequence, reference-counted blocks shared by Fork and
// copied on first write, and per-sequence full-precision tails.
//
// Storage of one sequence (see layer for the byte layout of a block):
//
//   - Blocks hold the compressed form of every committed token: values and per-token
//     keys from the moment they are appended, KIVI keys per channel as soon as their
//     block of G tokens is full. Block i of the table holds positions [iB, (i+1)B).
//   - Per layer, f16 rings hold, between steps, the rows a later query may still need
//     in full precision: keys of the unfinished KIVI key block (< G rows) and the
//     values of the last r−1 tokens (KIVI values).
//   - Per sequence, a work area holds the current step's f16 keys and values of one
//     layer: Append(l) fills it, Attend(l) reads it next to layer l's ring, and the
//     rows the ring must keep are folded into it before the area is reused (Append
//     of another layer, Grow, Truncate). So a prefill of m tokens holds m f16 rows
//     per side once, not once per layer.
//   - Per layer, f16 sink rows hold the first Sinks tokens of lossy sides.
//
// Query at position p sees key j in full precision iff j < sinks or j's KIVI key
// block is unfinished as of p (j ≥ p−p mod G, unless p ends that block); value j iff
// j < sinks or j > p−r. That is exactly what single-token steps would see, so a
// prefill of n tokens equals n decode steps.
//
// Memory accounting: AllocBytes = used blocks × block bytes + ring, work-area and
// sink bytes + the room for copies of scattered spans Attend may make (seq.gath,
// as Grow planned it), each buffer counted at its capacity. All of it counts
// against BudgetBytes. Memory of freed blocks is kept for reuse (PoolStats.HeldBytes) but is
// not AllocBytes.
//
// Locking: Sequences methods take the write lock; Append and Attend take the read
// lock, so several goroutines may serve different sequences of one step at once.
// Calls for one sequence must not overlap (they share its scratch buffers).
type Store struct {
	mu   sync.RWMutex
	g    *geometry
	pool pool
	seqs map[SeqID]*seq
	next SeqID

	tailBytes int64 // rings, work areas and sinks of all sequences
	gathBytes int64 // room for copies of scattered spans (seq.gath capacities) of all sequences
	opts      attn.Options
	shape     attn.Shape
	batch     batchState // AttendBatch's (batch.go)

	// Prefix caching (prefix.go).
	prefixOK      bool              // full blocks are shared between sequences
	sides         bool              // prefixOK and some layer keeps rows blocks lack: blocks get side rows
	root          uint64            // parent hash of every block 0
	prefixQueried int64             // full blocks looked up by NewSeqWithPrefix
	prefixHits    int64             // of which found and adopted
	onRegister    func(hash uint64) // see OnRegister (share.go)
}

// seq is one sequence's block table and tails.
type seq struct {
	n       int    // Len: committed tokens plus the current step's reservation
	base    int    // first position of the current step
	pending int    // tokens reserved by the last Grow (n − base while a step is open)
	done    []bool // per layer: the current step's rows were appended
	nDone   int    // layers appended this step
	// tables holds a block table per layer group (geometry.groups), all of one
	// length; −1 for blocks freed by Evict or by the group's window.
	tables [][]int32
	// winFree, per group, is where the group's window has freed every block before
	// (0 for groups without a window): [0, winFree) are −1 in its table.
	winFree []int
	tokens  []int32 // token ids of positions [0, n), for prefix hashing
	// opaqueFrom is the first position grown without token ids (GrowWithoutTokens);
	// no block from the one holding it on is registered. noOpaque when none.
	opaqueFrom int
	hashes     []uint64 // prefix hashes of the first blocks, registered (prefix.go)
	root       uint64   // parent hash of block 0: the store's root, or a salted one

	// Eviction (window.go): positions [sinkEnd, winStart) are gone; their blocks
	// are −1 in the table. winStart == sinkEnd (0) when nothing was evicted.
	sinkEnd, winStart int

	tails []tail // per layer
	caps  []int  // Grow's plan of ring capacities, reused (2 per layer)
	work  work   // the current step's f16 rows of one layer

	// gath holds copies of the spans of layer viewLayer whose blocks are not
	// adjacent in pool memory (see SpanTokens), made by Attend; gathAt[k] is span
	// k's offset in it, −1 for a span read in place. Its capacity, counted against
	// the budget, is what Grow planned (gatherPlan); planIDs is that plan's scratch.
	gath    []byte
	gathAt  []int32
	planIDs [][]int32

	encBuf []float32  // one KIVI key block of one head and its tokens' angles, for encoding
	encKey []byte     // one encoded KIVI key block split over blocks, for encoding
	parts  []sidePart // scratch of sideParts
	sc     attn.Scratch

	// view is Attend's history view of layer viewLayer (made once in newSeq: a
	// closure made per call allocates).
	view      func(i int, dst []attn.Span) []attn.Span
	viewLayer int
}

// work holds the f16 keys and values of the current step's tokens (positions
// [base, base+pending)) for one layer, token-major; k or v is nil when no layer
// keeps rings of that side. layer is −1 when the rows have been folded.
type work struct {
	k, v  []byte // rows in the tail codec
	rows  int    // capacity in tokens
	layer int
}

func (w *work) bytes() int64 { return int64(len(w.k) + len(w.v)) }

// tail is one layer's full-precision rows of a sequence, in the tail codec.
type tail struct {
	k, v   ring
	sk, sv []byte // sink rows, token-major (nil until first needed)
}

var _ Cache = (*Store)(nil)

// New creates an empty Store for cfg.
func New(cfg Config) (*Store, error) {
	g, err := newGeometry(cfg)
	if err != nil {
		return nil, err
	}
	if err := g.needsRoPE(); err != nil {
		return nil, err
	}
	maxBlocks := int(cfg.BudgetBytes / int64(g.blockBytes))
	st := &Store{
		g: g,
		pool: pool{blockBytes: g.blockBytes, ext: g.E, lastAny: -1, faulting: -1, pieces: g.pieces(), maxBlocks: maxBlocks,
			mem: blockmem.New(g.E*g.blockBytes, (maxBlocks+g.E-1)/g.E),
			idx: prefixIndex{byHash: map[blockKey]int32{}, head: -1, tail: -1}},
		prefixOK: prefixEligible(g),
		root:     rootHash(g),
		seqs:     map[SeqID]*seq{},
		opts:     attn.Options{ChunkTokens: cfg.AttnChunkTokens, Workers: cfg.AttnWorkers, Rotate: cfg.Rotate, Scale: cfg.AttnScale, SoftCap: cfg.AttnSoftCap},
		shape:    attn.Shape{Heads: cfg.Heads, KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim},
	}
	// The blocks live outside the Go heap: unmap them once nothing can reach the
	// Store. Views of block memory never outlive the method that made them, and
	// every such method unlocks st.mu in a deferred call, which keeps st reachable
	// until it returns.
	st.sides = st.prefixOK && g.needSides()
	runtime.AddCleanup(st, (*blockmem.Arena).Release, st.pool.mem)
	return st, nil
}

// Config returns the configuration with BlockTokens resolved.
func (st *Store) Config() Config {
	c := st.g.cfg
	c.BlockTokens = st.g.B
	return c
}

// BlockBytes is the size of one physical block in bytes.
func (st *Store) BlockBytes() int { return st.g.blockBytes }

// LayerSpec returns the cache spec in force for layer l, or an error for a layer
// outside [0, Layers).
func (st *Store) LayerSpec(l int) (Spec, error) {
	if l < 0 || l >= len(st.g.layers) {
		return Spec{}, fmt.Errorf("kv: layer %d out of range [0, %d)", l, len(st.g.layers))
	}
	return st.g.layers[l].spec, nil
}

func (st *Store) lookup(id SeqID) (*seq, error) {
	s, ok := st.seqs[id]
	if !ok {
		return nil, fmt.Errorf("sequence %d: %w", id, ErrUnknownSeq)
	}
	return s, nil
}

func (st *Store) newSeq() *seq {
	s := &seq{done: make([]bool, len(st.g.layers)), tails: make([]tail, len(st.g.layers)), work: work{layer: -1}, opaqueFrom: noOpaque, root: st.root,
		tables: make([][]int32, len(st.g.groups)), winFree: make([]int, len(st.g.groups))}
	s.view = func(i int, dst []attn.Span) []attn.Span { return st.spans(dst, s, s.viewLayer, s.base+i) }
	for i := range s.tails {
		s.tails[i].k.rowBytes = st.g.tailRow
		s.tails[i].v.rowBytes = st.g.tailRow
	}
	return s
}

// NewSeq implements Sequences. An empty sequence holds no memory.
func (st *Store) NewSeq() (SeqID, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	id := st.next
	st.next++
	st.seqs[id] = st.newSeq()
	return id, nil
}

// Drop implements Sequences: the sequence's block references and tails are released.
func (st *Store) Drop(id SeqID) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.lookup(id)
	if err != nil {
		return fmt.Errorf("kv: drop: %w", err)
	}
	st.register(s) // its full blocks stay cached after the drop
	// Last block first: the LRU queue then gives up a prefix's tail before its head,
	// which other prompts are likelier to share.
	for i := s.nblocks() - 1; i >= 0; i-- {
		for _, tb := range s.tables {
			if b := tb[i]; b >= 0 {
				st.pool.decRef(b)
			}
		}
	}
	st.tailBytes -= s.tailBytes()
	st.gathBytes -= int64(cap(s.gath))
	delete(st.seqs, id)
	return nil
}

// nblocks is the length of s's block tables: blocks of positions [0, nblocks·B).
func (s *seq) nblocks() int { return len(s.tables[0]) }

func (s *seq) tailBytes() int64 {
	n := s.work.bytes()
	for i := range s.tails {
		t := &s.tails[i]
		n += t.k.bytes() + t.v.bytes() + int64(len(t.sk)+len(t.sv))
	}
	return n
}

// stepOpen reports whether a Grow's rows are not yet appended on every layer.
func (s *seq) stepOpen(layers int) bool { return s.pending > 0 && s.nDone < layers }

// Fork implements Sequences. The child shares every block of src (reference counts
// rise; the first write into a shared block copies it) and gets its own copies of
// src's rings and sink rows, which count against the budget. src must be between
// steps (every layer of its last Grow appended, or nothing reserved); Fork ends
// that step: neither sequence can attend its layers again before the next Grow.
func (st *Store) Fork(src SeqID) (SeqID, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.lookup(src)
	if err != nil {
		return 0, fmt.Errorf("kv: fork: %w", err)
	}
	if s.stepOpen(len(st.g.layers)) {
		return 0, fmt.Errorf("kv: fork of sequence %d: a step is open (%d of %d layers appended)", src, s.nDone, len(st.g.layers))
	}
	st.register(s)
	extra := s.tailBytes() - s.work.bytes() // the child starts with an empty work area
	if err := st.checkBudget(0, extra); err != nil {
		return 0, fmt.Errorf("kv: fork of sequence %d (%d tokens, %d tail bytes): %w", src, s.n, extra, err)
	}
	st.fold(s)
	c := st.newSeq()
	c.n, c.base, c.pending, c.nDone = s.n, s.base, s.pending, s.nDone
	copy(c.done, s.done)
	for g, tb := range s.tables {
		c.tables[g] = append([]int32(nil), tb...)
		for _, b := range tb {
			if b >= 0 {
				st.pool.incRef(b)
			}
		}
	}
	copy(c.winFree, s.winFree)
	c.tokens = append([]int32(nil), s.tokens...)
	c.hashes = append([]uint64(nil), s.hashes...)
	c.root = s.root
	c.sinkEnd, c.winStart = s.sinkEnd, s.winStart
	c.opaqueFrom = s.opaqueFrom
	for i := range s.tails {
		from, to := &s.tails[i], &c.tails[i]
		to.k = cloneRing(from.k)
		to.v = cloneRing(from.v)
		to.sk = cloneBytes(from.sk)
		to.sv = cloneBytes(from.sv)
	}
	st.tailBytes += extra
	id := st.next
	st.next++
	st.seqs[id] = c
	return id, nil
}

func cloneRing(r ring) ring {
	r.buf = cloneBytes(r.buf)
	return r
}

func cloneBytes(x []byte) []byte {
	if x == nil {
		return nil
	}
	return append(make([]byte, 0, len(x)), x...)
}

// checkBudget reports ErrNoSpace when newBlocks more blocks and extra more bytes of
// tails and span copies do not fit the budget.
func (st *Store) checkBudget(newBlocks int, extra int64) error {
	b := st.g.cfg.BudgetBytes
	if b == 0 {
		return nil
	}
	need := int64(st.pool.used+newBlocks)*int64(st.g.blockBytes) + st.tailBytes + st.gathBytes + extra
	if need > b {
		return fmt.Errorf("%w: need %d bytes (%d blocks of %d + %d bytes of tails and span copies), budget %d", ErrNoSpace, need,
			st.pool.used+newBlocks, st.g.blockBytes, st.tailBytes+st.gathBytes+extra, b)
	}
	return nil
}

// growPlan is what a Grow of n tokens at p0 needs: blocks to append, shared blocks
// to copy, ring capacities per layer, work-area rows, and the tail bytes it adds
// (negative when buffers shrink).
type growPlan struct {
	p0, end               int
	needBlocks, newBlocks int        // table length after the Grow; blocks it adds to all tables
	cow                   []tableIdx // shared blocks to copy
	kCap, vCap            []int
	workRows              int
	extra                 int64 // change of the tail bytes
	gath                  int   // room for span copies after the Grow (gatherPlan)
}

// gathDelta is the change of the room for span copies the plan makes.
func (pl *growPlan) gathDelta(s *seq) int64 { return int64(pl.gath - cap(s.gath)) }

// writeFrom is the first position whose block of group g a step [p0, end) of s
// writes into: p0, or the start of a KIVI key group of one of the group's layers
// that the step closes, whose bytes are split over blocks before p0's (see layer).
func (st *Store) writeFrom(g, p0, end int) int {
	w := p0
	for _, i := range st.g.groups[g].layers {
		if ly := &st.g.layers[i]; ly.kSplit {
			if gs := ly.kTailStart(p0); gs+ly.kG <= end {
				w = min(w, gs)
			}
		}
	}
	return w
}

// tableIdx is entry i of a sequence's block table of group g.
type tableIdx struct{ g, i int }

// planGrow plans a Grow of n ≥ 1 tokens of s without changing anything. The
// previous step's last layer may still have rows in the work area: the plan treats
// them as folded into its ring (Grow folds them on commit). caps, when not nil (2 per
// layer), receives the rings' new capacities as kCap and vCap, and s's scratch
// serves the gather plan; GrowCost, which needs only the bytes, passes nil (it plans
// under the read lock, so it may not write into s).
func (st *Store) planGrow(s *seq, n int, caps []int) growPlan {
	B, L := st.g.B, len(st.g.layers)
	pl := growPlan{p0: s.n, end: s.n + n}
	if caps != nil {
		pl.kCap, pl.vCap = caps[:L], caps[L:2*L]
	}
	p0, end := pl.p0, pl.end
	pl.needBlocks = (end + B - 1) / B
	pl.newBlocks = len(s.tables) * (pl.needBlocks - s.nblocks())
	for g, tb := range s.tables {
		for i := st.writeFrom(g, p0, end) / B; i < len(tb); i++ {
			if tb[i] >= 0 && st.pool.refs[tb[i]] > 1 {
				pl.cow = append(pl.cow, tableIdx{g, i})
			}
		}
	}
	var spans int
	if caps != nil {
		spans, s.planIDs = st.gatherPlan(s, &pl, s.planIDs)
	} else {
		spans, _ = st.gatherPlan(s, &pl, nil)
	}
	pl.gath = spans * st.g.gathSpan
	rl := int64(st.g.tailRow)
	for i := range st.g.layers {
		ly, t := &st.g.layers[i], &s.tails[i]
		if ly.hasKTail() {
			now := p0 - max(ly.kTailStart(p0), t.k.start)
			after := end - ly.kTailStart(end)
			c := planCap(t.k.capRows(), max(now, after), ly.kSteady())
			if pl.kCap != nil {
				pl.kCap[i] = c
			}
			pl.extra += int64(c-t.k.capRows()) * rl
		}
		if ly.hasVTail() {
			now := p0 - max(ly.vTailStart(p0), t.v.start)
			after := end - ly.vTailStart(end)
			c := planCap(t.v.capRows(), max(now, after), ly.vSteady())
			if pl.vCap != nil {
				pl.vCap[i] = c
			}
			pl.extra += int64(c-t.v.capRows()) * rl
		}
		if ly.sinksK > 0 && t.sk == nil && p0 < ly.sinksK {
			pl.extra += int64(ly.sinksK) * rl
		}
		if ly.sinksV > 0 && t.sv == nil && p0 < ly.sinksV {
			pl.extra += int64(ly.sinksV) * rl
		}
	}
	pl.workRows = s.work.rows
	if n > pl.workRows || pl.workRows > 2*n {
		pl.workRows = n
	}
	pl.extra += int64(st.g.workSides()) * int64(pl.workRows-s.work.rows) * rl
	return pl
}

// GrowCost is the change of Usage().AllocBytes that Grow(seq, n tokens) would make
// now: new and copied blocks, minus the blocks of window groups that no later query
// can see (see slide), plus the change of the full-precision buffers and of the
// room for copies of scattered spans (both may shrink). A Grow succeeds iff the budget is 0 or AllocBytes + GrowCost ≤
// BudgetBytes. The previous step of seq must be complete, as for Grow.
func (st *Store) GrowCost(id SeqID, n int) (int64, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.lookup(id)
	if err != nil {
		return 0, fmt.Errorf("kv: grow cost: %w", err)
	}
	if n < 0 || s.stepOpen(len(st.g.layers)) {
		return 0, fmt.Errorf("kv: grow cost of %d tokens for sequence %d: want n ≥ 0 and a complete step", n, id)
	}
	if n == 0 {
		return 0, nil
	}
	pl := st.planGrow(s, n, nil)
	return int64(pl.newBlocks+len(pl.cow)-st.slideFrees(s))*int64(st.g.blockBytes) + pl.extra + pl.gathDelta(s), nil
}

// Grow implements Sequences. It allocates the blocks that positions [Len, Len+n)
// need, copies any shared block those positions will write into (copy-on-write),
// sizes the rings for what they must hold after the step and the work area for the
// step's rows. Either all of that happens or, on ErrNoSpace, none of it. The previous
// step must be complete (every layer appended) or undone with Truncate; its layers
// can no longer be attended once Grow succeeds.
func (st *Store) Grow(id SeqID, tokens []int32) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, err := st.grow(id, tokens)
	return err
}

// grow is Grow under the write lock; it also returns the sequence.
func (st *Store) grow(id SeqID, tokens []int32) (*seq, error) {
	s, err := st.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("kv: grow: %w", err)
	}
	L := len(st.g.layers)
	if s.stepOpen(L) {
		return nil, fmt.Errorf("kv: grow of sequence %d: previous step of %d tokens is incomplete (%d of %d layers appended)", id, s.pending, s.nDone, L)
	}
	n := len(tokens)
	if n == 0 {
		return s, nil
	}
	st.register(s)
	st.slide(s)
	if len(s.caps) < 2*L {
		s.caps = make([]int, 2*L)
	}
	pl := st.planGrow(s, n, s.caps)
	p0, end := pl.p0, pl.end
	if err := st.checkBudget(pl.newBlocks+len(pl.cow), pl.extra+pl.gathDelta(s)); err != nil {
		return nil, fmt.Errorf("kv: grow of sequence %d by %d tokens at %d: %w", id, n, p0, err)
	}
	// Commit.
	st.fold(s)
	for _, c := range pl.cow {
		tb := s.tables[c.g]
		old := tb[c.i]
		nb := st.pool.alloc(st.placeFor(s, c.g, c.i, 1))
		st.pool.copyBlock(nb, old, c.g)
		st.pool.decRef(old)
		tb[c.i] = nb
	}
	B := st.g.B
	wf := p0
	for g, tb := range s.tables {
		gf := st.writeFrom(g, p0, end)
		wf = min(wf, gf)
		for i := gf / B; i < len(tb); i++ {
			// Its contents change: no longer a cached prefix. A block before p0 only
			// gets its part of a split key group: its side rows (its values) stay true.
			switch {
			case tb[i] < 0:
			case i < p0/B:
				st.pool.idx.unregister(tb[i])
			default:
				st.pool.write(tb[i])
			}
		}
	}
	s.hashes = s.hashes[:min(len(s.hashes), wf/B)]
	for s.nblocks() < pl.needBlocks {
		for g := range s.tables {
			i := len(s.tables[g])
			s.tables[g] = append(s.tables[g], st.pool.alloc(st.placeFor(s, g, i, st.spanBlocks(i, pl.needBlocks))))
		}
	}
	for i := range st.g.layers {
		ly, t := &st.g.layers[i], &s.tails[i]
		if ly.hasKTail() {
			t.k.resize(pl.kCap[i])
		}
		if ly.hasVTail() {
			t.v.resize(pl.vCap[i])
		}
		if ly.sinksK > 0 && t.sk == nil && p0 < ly.sinksK {
			t.sk = make([]byte, ly.sinksK*st.g.tailRow)
		}
		if ly.sinksV > 0 && t.sv == nil && p0 < ly.sinksV {
			t.sv = make([]byte, ly.sinksV*st.g.tailRow)
		}
	}
	if workRows := pl.workRows; workRows != s.work.rows {
		s.work.rows = workRows
		s.work.k, s.work.v = nil, nil
		if st.g.workK {
			s.work.k = make([]byte, workRows*st.g.tailRow)
		}
		if st.g.workV {
			s.work.v = make([]byte, workRows*st.g.tailRow)
		}
	}
	st.tailBytes += pl.extra
	if pl.gath != cap(s.gath) {
		st.gathBytes += pl.gathDelta(s)
		s.gath = make([]byte, 0, pl.gath)
	}
	s.tokens = append(s.tokens, tokens...)
	s.base, s.n, s.pending = p0, end, n
	clear(s.done)
	s.nDone = 0
	st.planSides(s, p0, end)
	return s, nil
}

// Truncate implements Sequences. It refuses a sequence whose step is half appended.
// Cutting to 0 always works. Any other n must not fall in an evicted range (sinks
// and sliding window: the error names the shortest length); then undoing, in part or
// in full, a Grow with nothing appended yet always works, and any other n must, on a
// cache with f16 rings (a KIVI side), find in them the f16 rows a query at n needs
// (KIVI keys of n's unfinished block, the r−1 values before n), or Truncate fails
// naming the earliest position held. Blocks past the new end return to the pool.
func (st *Store) Truncate(id SeqID, n int) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.lookup(id)
	if err != nil {
		return fmt.Errorf("kv: truncate: %w", err)
	}
	if n < 0 || n > s.n {
		return fmt.Errorf("kv: truncate of sequence %d to %d: want 0 ≤ n ≤ Len=%d", id, n, s.n)
	}
	if n == s.n {
		return nil
	}
	if s.evicted() && n < s.winStart && n != 0 {
		return fmt.Errorf("kv: truncate of sequence %d to %d: positions [%d, %d) were evicted; the shortest length is %d", id, n, s.sinkEnd, s.winStart, s.winStart)
	}
	if short := st.shortestLen(s); n < short && n != 0 {
		return fmt.Errorf("kv: truncate of sequence %d to %d: layers with an attention window freed the blocks a query there would see; the shortest length is %d", id, n, short)
	}
	st.register(s)
	L := len(st.g.layers)
	open := s.stepOpen(L)
	if open && s.nDone > 0 {
		return fmt.Errorf("kv: truncate of sequence %d: step is half appended (%d of %d layers)", id, s.nDone, L)
	}
	st.fold(s)
	if open && n >= s.base {
		s.n, s.pending = n, n-s.base
		st.releaseBlocks(s, n)
		s.tokens = s.tokens[:n]
		// Blocks the step no longer completes keep no side rows.
		for _, tb := range s.tables {
			for i := n / st.g.B; i < len(tb); i++ {
				st.pool.dropSides(tb[i])
			}
		}
		return nil
	}
	if n > 0 {
		for i := range st.g.layers {
			if err := st.g.layers[i].exact(&s.tails[i], n); err != nil {
				return fmt.Errorf("kv: truncate of sequence %d to %d: layer %d: %w", id, n, i, err)
			}
		}
	}
	for i := range s.tails {
		s.tails[i].k.cut(n)
		s.tails[i].v.cut(n)
	}
	st.releaseBlocks(s, n)
	s.tokens = s.tokens[:n]
	s.n, s.base, s.pending = n, n, 0
	clear(s.done)
	s.nDone = 0
	return nil
}

// exact reports whether the tail still holds the rows a query at position n needs.
func (ly *layer) exact(t *tail, n int) error {
	if ly.hasKTail() {
		lo := max(ly.kTailStart(n), min(ly.sinksK, n))
		if lo < n && lo < t.k.start {
			return fmt.Errorf("%w: keys from position %d are needed, held from %d (earliest exact length %d)", errNotExact, lo, t.k.start, t.k.start)
		}
	}
	if ly.hasVTail() {
		lo := max(ly.vTailStart(n), min(ly.sinksV, n))
		if lo < n && lo < t.v.start {
			return fmt.Errorf("%w: values from position %d are needed, held from %d", errNotExact, lo, t.v.start)
		}
	}
	return nil
}

func (st *Store) releaseBlocks(s *seq, n int) {
	keep := (n + st.g.B - 1) / st.g.B
	for g, tb := range s.tables {
		for _, b := range tb[keep:] {
			if b >= 0 {
				st.pool.decRef(b)
			}
		}
		s.tables[g] = tb[:keep]
		s.winFree[g] = min(s.winFree[g], keep)
	}
	s.hashes = s.hashes[:min(len(s.hashes), st.g.unitBlocks(n))]
	if n <= s.opaqueFrom {
		s.opaqueFrom = noOpaque // the positions grown without ids are gone
	}
	if n == 0 {
		s.sinkEnd, s.winStart = 0, 0
	}
}

// Len implements Sequences; it is 0 for an unknown sequence.
func (st *Store) Len(id SeqID) int {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if s, ok := st.seqs[id]; ok {
		return s.n
	}
	return 0
}

// GroupWindows returns one entry per layer group (a block table per sequence each:
// BlockTokens tokens of every layer take len(GroupWindows()) blocks), the attention
// window of its layers in tokens, 0 for the whole history. A group with window w
// holds about w + BlockTokens tokens of blocks however long the sequence (whole
// prefix units of them, see SteadyLayerTokens).
func (st *Store) GroupWindows() []int {
	ws := make([]int, len(st.g.groups))
	for i, gr := range st.g.groups {
		ws[i] = gr.window
	}
	return ws
}

// LayerTokens returns, per layer, the token slots of the blocks sequence id holds
// now: B per block of the layer's group still in its table (a layer with an
// attention window holds at most its window and a block beside the current step's).
func (st *Store) LayerTokens(id SeqID) ([]int, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("kv: layer tokens: %w", err)
	}
	out := make([]int, len(st.g.layers))
	for l := range out {
		for _, b := range s.tables[st.g.layers[l].grp] {
			if b >= 0 {
				out[l] += st.g.B
			}
		}
	}
	return out, nil
}

// Tokens returns a copy of the token ids given to Grow for seq's positions [0, Len)
// (OpaqueToken for positions grown by GrowWithoutTokens).
func (st *Store) Tokens(id SeqID) ([]int32, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, err := st.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("kv: tokens: %w", err)
	}
	return append([]int32(nil), s.tokens...), nil
}

// Usage implements Sequences. BytesPerToken is the steady-state figure of
// BytesPerToken(cfg).
func (st *Store) Usage() Usage {
	st.mu.RLock()
	defer st.mu.RUnlock()
	u := Usage{
		Sequences:     len(st.seqs),
		AllocBytes:    int64(st.pool.used)*int64(st.g.blockBytes) + st.tailBytes + st.gathBytes,
		BudgetBytes:   st.g.cfg.BudgetBytes,
		BytesPerToken: float64(st.g.tokenBlockBytes()) / float64(st.g.B),
	}
	for _, s := range st.seqs {
		u.Tokens += s.kept()
	}
	return u
}

// Prefault makes block memory ahead of need, for a Store with nothing to do: it
// makes extents of free blocks and faults their pages in (blockmem.Fault), so that
// the steps that later take those blocks do not stop for the page faults and the
// kernel's zeroing of fresh pages. It stops once the free blocks (made, in no
// sequence, not cached) hold at least ready bytes, or the budget's whole extents are
// all made, or, before that, about d from now (it may run over by the time to fault
// in 512 KiB), and reports whether more remains; the next call goes on where this
// one stopped. It holds the Store's lock meanwhile.
//
// The budget does not change: made blocks are not AllocBytes, BlocksFree is
// unchanged, and BlocksMade, BlocksReady, HeldBytes and PrefaultBytes grow. As with
// freed blocks, the memory is kept until the Store is unreachable.
func (st *Store) Prefault(ready int64, d time.Duration) (more bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pool.prefault(ready, time.Now().Add(d))
}

// PoolStats are a Store's block pool figures.
type PoolStats struct {
	BlockTokens  int   // tokens per block
	BlockBytes   int   // bytes per block
	BlocksTotal  int   // blocks the budget holds with no tails; 0 when unlimited
	BlocksUsed   int   // blocks referenced by at least one sequence
	BlocksShared int   // blocks referenced by more than one sequence
	BlocksFree   int   // blocks that could be allocated now (budget left after used blocks and tails); −1 when unlimited
	BlocksMade   int   // blocks whose memory exists (used + kept for reuse)
	BlocksReady  int   // blocks made and free (in no sequence, not cached): taken before any memory is made
	UsedBytes    int64 // BlocksUsed × BlockBytes
	TailBytes    int64 // full-precision rings, sinks and work areas of all sequences
	// GatherBytes is the room Grow reserved for copies of spans whose blocks are
	// not adjacent (a fragmented or full pool, copies on write): attention reads
	// those spans from a copy (see SpanTokens).
	GatherBytes int64
	HeldBytes   int64 // BlocksMade × BlockBytes + TailBytes + GatherBytes: storage memory the Store holds
	WasteTokens int   // unused token slots in the blocks the sequences hold (each layer group's blocks counted)
	// PrefaultBytes is the block memory Prefault has faulted in ahead of need.
	PrefaultBytes int64

	// Prefix caching (see NewSeqWithPrefix).
	BlocksCached        int   // blocks no sequence uses, kept findable until their memory is needed
	BlocksSide          int   // blocks holding side rows of cached prefixes (windows, sinks), free memory too
	Evictions           int64 // cached blocks whose memory was taken for new blocks
	PrefixQueriedBlocks int64 // full blocks looked up by NewSeqWithPrefix
	PrefixHitBlocks     int64 // of which found in the cache and adopted
}

// PrefixHitRate is PrefixHitBlocks / PrefixQueriedBlocks (0 before any lookup).
func (ps PoolStats) PrefixHitRate() float64 {
	if ps.PrefixQueriedBlocks == 0 {
		return 0
	}
	return float64(ps.PrefixHitBlocks) / float64(ps.PrefixQueriedBlocks)
}

// PoolStats reports the pool's figures.
func (st *Store) PoolStats() PoolStats {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ps := PoolStats{
		BlockTokens:  st.g.B,
		BlockBytes:   st.g.blockBytes,
		BlocksUsed:   st.pool.used,
		BlocksShared: st.pool.shared,
		BlocksFree:   -1,
		BlocksMade:   st.pool.made(),
		BlocksReady:  len(st.pool.free),
		UsedBytes:    int64(st.pool.used) * int64(st.g.blockBytes),
		TailBytes:    st.tailBytes,
		GatherBytes:  st.gathBytes,

		PrefaultBytes:       st.pool.prefaulted,
		BlocksCached:        st.pool.idx.cached - st.pool.idx.sides,
		BlocksSide:          st.pool.idx.sides,
		Evictions:           st.pool.idx.evictions,
		PrefixQueriedBlocks: st.prefixQueried,
		PrefixHitBlocks:     st.prefixHits,
	}
	ps.HeldBytes = int64(ps.BlocksMade)*int64(st.g.blockBytes) + st.tailBytes + st.gathBytes
	if b := st.g.cfg.BudgetBytes; b > 0 {
		ps.BlocksTotal = int(b / int64(st.g.blockBytes))
		ps.BlocksFree = int(max(0, (b-ps.UsedBytes-st.tailBytes-st.gathBytes)/int64(st.g.blockBytes)))
	}
	B := st.g.B
	for _, s := range st.seqs {
		for _, tb := range s.tables {
			for i, b := range tb {
				if b >= 0 {
					// Slots of the block past Len or evicted are unused.
					lo, hi := i*B, min((i+1)*B, s.n)
					used := max(0, hi-lo) - max(0, min(hi, s.winStart)-max(lo, s.sinkEnd))
					ps.WasteTokens += B - used
				}
			}
		}
	}
	return ps
}
