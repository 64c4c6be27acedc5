package kv

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// Prefix caching.
//
// A full block's identity is its hash: the first 8 bytes (little-endian uint64) of
// SHA-256 over the canonical encoding
//
//	parent hash (8 bytes LE) ‖ token count (4 bytes LE) ‖ token ids (4 bytes LE each)
//
// where the parent of block 0 is the root hash, SHA-256 of "kvq-prefix-v1", the
// Config's ModelFingerprint and the layout (block tokens, geometry, every layer's
// canonical spec) — so hashes are stable across processes and never shared between
// models or cache layouts. A block's contents are a function of the tokens from
// position 0 to the end of its unit (attention is causal; a KIVI key group split
// over blocks is encoded when its last token arrives, see geometry.U), which the
// hash chain names: block i's token ids are those of positions [iB, unitEnd(i))
// (BlockTokenRange), its own B when blocks hold whole key groups. Lookups also
// compare the parent hash and the token ids stored with the block, so a hash
// collision cannot alias two different prefixes. Blocks are registered and adopted
// a whole unit at a time.
//
// A sequence's full blocks are registered (made findable) once every layer of the
// step that completed them is appended — lazily, by the next write-locked operation
// (Grow, Drop, Fork, Truncate, NewSeqWithPrefix). A registered block whose last
// reference goes away is not freed: it waits in an LRU queue, still findable, until
// a new block needs its memory (the least recently released is taken first, counted
// in PoolStats.Evictions). A registered block that would be written again (after a
// Truncate into it) is unregistered first, or copied if shared.
//
// With layer groups (see group), each group's block of a position range is
// registered under the same hash in its group; a sequence adopting a prefix takes
// every block of the groups that see the whole history, and of a group with an
// attention window only the blocks from the first one its state refers to (the next
// query's window, KIVI value residual, sinks).
//
// Exactness: a sequence adopting cached blocks must attend exactly as if it had
// computed them. Blocks hold the compressed form of every token; the full-precision
// rows of KIVI value windows and sinks that a sequence also holds are kept beside
// the blocks as side rows (see sideParts below), so every cache type shares.
// Sequences that have evicted part of their history (Evict) stop registering
// blocks: their later blocks were computed over the kept tokens only.

// PrefixCaching reports whether the store shares full blocks between sequences with
// the same prefix (see NewSeqWithPrefix): true unless Config.NoPrefixCache is set.
func (st *Store) PrefixCaching() bool { return st.prefixOK }

func prefixEligible(g *geometry) bool { return !g.cfg.NoPrefixCache }

// rootHash is the parent hash of every sequence's block 0.
func rootHash(g *geometry) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "kvq-prefix-v1\x00%s\x00B=%d layers=%d heads=%d kvheads=%d headdim=%d\x00",
		g.cfg.ModelFingerprint, g.B, g.cfg.Layers, g.cfg.Heads, g.cfg.KVHeads, g.cfg.HeadDim)
	for i := range g.layers {
		fmt.Fprintf(h, "%d=%s;", i, g.layers[i].spec.String())
	}
	if len(g.groups) > 1 { // the blocks' layout: which layers each group holds
		for _, gr := range g.groups {
			fmt.Fprintf(h, "group%v;", gr.layers)
		}
	}
	return binary.LittleEndian.Uint64(h.Sum(nil))
}

// BlockHash is the identity of a full block holding tokens whose preceding blocks
// have hash parent (the store's root hash for block 0). Exposed for a shared cache
// tier and for tests of hash stability.
func BlockHash(parent uint64, tokens []int32) uint64 {
	buf := make([]byte, 12+4*len(tokens))
	binary.LittleEndian.PutUint64(buf, parent)
	binary.LittleEndian.PutUint32(buf[8:], uint32(len(tokens)))
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(buf[12+4*i:], uint32(t))
	}
	sum := sha256.Sum256(buf)
	return binary.LittleEndian.Uint64(sum[:8])
}

// RootHash is the parent hash of block 0 of every sequence of this store.
func (st *Store) RootHash() uint64 { return st.root }

// BlockTokenRange is the positions [lo, hi) whose token ids the hash of block i of a
// sequence names (BlockHash(parent, tokens[lo:hi])): the block's own B positions,
// and, when KIVI key groups are split over blocks, the rest of its last key group.
func (st *Store) BlockTokenRange(i int) (lo, hi int) { return i * st.g.B, st.g.unitEnd(i) }

// blockMeta is the prefix identity of one physical block.
type blockMeta struct {
	registered bool
	hash       uint64
	parent     uint64
	tokens     []int32
	prev, next int32 // LRU links while cached (refs == 0), −1 at the ends

	// Side rows (see sideParts): side lists the blocks holding this block's, ready
	// once every layer has written them and the block is registered; sideOf is, for
	// a side block, the block whose rows it holds (−1 otherwise).
	side      []int32
	sideReady bool
	sideOf    int32
	index     int // the block's index in its sequences' tables (position / B)
	grp       int // the layer group whose table it is in (while registered)
}

// blockKey is what a registered block is found by: its hash and its layer group.
type blockKey struct {
	hash uint64
	grp  int
}

// prefixIndex finds registered blocks by hash and keeps the LRU queue of cached
// ones. It lives inside the pool, which calls it when references change.
type prefixIndex struct {
	meta       []blockMeta        // block id → identity
	byHash     map[blockKey]int32 // hash and group → registered block
	head, tail int32              // LRU queue of cached blocks, oldest at head; −1 when empty
	cached     int                // blocks in the LRU queue, side blocks included
	sides      int                // side blocks (all cached)
	evictions  int64
}

func (x *prefixIndex) grow(n int) {
	for len(x.meta) < n {
		x.meta = append(x.meta, blockMeta{prev: -1, next: -1, sideOf: -1})
	}
}

func (x *prefixIndex) push(id int32) {
	m := &x.meta[id]
	m.prev, m.next = x.tail, -1
	if x.tail >= 0 {
		x.meta[x.tail].next = id
	} else {
		x.head = id
	}
	x.tail = id
	x.cached++
}

func (x *prefixIndex) remove(id int32) {
	m := &x.meta[id]
	if m.prev >= 0 {
		x.meta[m.prev].next = m.next
	} else {
		x.head = m.next
	}
	if m.next >= 0 {
		x.meta[m.next].prev = m.prev
	} else {
		x.tail = m.prev
	}
	m.prev, m.next = -1, -1
	x.cached--
}

func (x *prefixIndex) unregister(id int32) {
	m := &x.meta[id]
	if !m.registered {
		return
	}
	if k := (blockKey{m.hash, m.grp}); x.byHash[k] == id {
		delete(x.byHash, k)
	}
	m.registered, m.tokens = false, m.tokens[:0]
}

// register makes block id of group grp findable under hash unless another block
// already is, and reports whether it did.
func (x *prefixIndex) register(id int32, grp int, hash, parent uint64, tokens []int32) bool {
	if _, dup := x.byHash[blockKey{hash, grp}]; dup {
		return false
	}
	m := &x.meta[id]
	m.registered, m.hash, m.parent, m.grp = true, hash, parent, grp
	m.tokens = append(m.tokens[:0], tokens...)
	x.byHash[blockKey{hash, grp}] = id
	return true
}

// lookup returns the registered block of group grp holding tokens after parent.
func (x *prefixIndex) lookup(hash uint64, grp int, parent uint64, tokens []int32) (int32, bool) {
	id, ok := x.byHash[blockKey{hash, grp}]
	if !ok {
		return 0, false
	}
	m := &x.meta[id]
	if m.parent != parent || !slices.Equal(m.tokens, tokens) {
		return 0, false
	}
	return id, true
}

// committed is the number of positions of s whose rows are appended on every layer.
func (s *seq) committed(layers int) int {
	if s.stepOpen(layers) {
		return s.base
	}
	return s.n
}

// register makes the full, committed blocks of s findable. Caller holds the write lock.
func (st *Store) register(s *seq) {
	if !st.prefixOK || s.evicted() {
		return
	}
	B := st.g.B
	full := st.g.unitBlocks(min(s.committed(len(st.g.layers)), s.opaqueFrom))
	for i := len(s.hashes); i < full; i++ {
		parent := s.root
		if i > 0 {
			parent = s.hashes[i-1]
		}
		toks := s.tokens[i*B : st.g.unitEnd(i)]
		h := BlockHash(parent, toks)
		s.hashes = append(s.hashes, h)
		added := false
		for g, tb := range s.tables {
			id := tb[i]
			if id < 0 {
				continue
			}
			if st.pool.idx.register(id, g, h, parent, toks) {
				m := &st.pool.idx.meta[id]
				m.sideReady = m.side != nil
				m.index = i
				added = true
			} else {
				st.pool.dropSides(id)
			}
		}
		if added && st.onRegister != nil && s.root == st.root { // salted blocks stay here
			st.onRegister(h)
		}
	}
}

// registerAll registers the committed full blocks of every sequence.
func (st *Store) registerAll() {
	if !st.prefixOK {
		return
	}
	for _, s := range st.seqs {
		st.register(s)
	}
}

// NewSeqWithPrefix creates a sequence holding the longest run of whole cached blocks
// that begins tokens, without computing them, and returns it with the number of
// tokens it holds (a multiple of BlockTokens — of the unit of a split KIVI key
// group, see BlockTokenRange —, ≤ len(tokens)); the caller continues
// with Grow for tokens[cached:]. Adopted blocks are shared with any sequence using
// them (a later write into one copies it first). On a cache with windows or sinks
// the run ends where the side rows its end needs are held (see sideParts), and the
// sequence gets its full-precision rows from them: its state is the one computing
// the run would have left. Only what fits the budget is adopted. Without prefix
// caching (see PrefixCaching) it equals NewSeq.
func (st *Store) NewSeqWithPrefix(tokens []int32) (SeqID, int, error) {
	return st.NewSeqWithPrefixSalt(tokens, "")
}

// NewSeqWithPrefixSalt is NewSeqWithPrefix within the prefixes cached under salt:
// the sequence's block hashes start from a root derived from the store's and the
// salt, so it adopts only blocks that sequences with the same salt computed, and
// its own blocks are found only by them (its forks keep the salt). A client that
// cannot give another's salt cannot learn from cached_tokens whether that client's
// prompt is cached (vLLM's cache_salt, CVE-2025-46570). "" is the unsalted cache.
func (st *Store) NewSeqWithPrefixSalt(tokens []int32, salt string) (SeqID, int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.newSeq()
	if salt != "" {
		h := sha256.New()
		fmt.Fprintf(h, "kvq-salt-v1\x00%d\x00%s", st.root, salt)
		s.root = binary.LittleEndian.Uint64(h.Sum(nil))
	}
	if st.prefixOK {
		st.registerAll()
		st.adopt(s, tokens)
	}
	id := st.next
	st.next++
	st.seqs[id] = s
	return id, s.n, nil
}

// adopt gives the new sequence s the longest run of cached blocks that begins
// tokens and that it can use: for each block count k (longest first), every group
// must hold its blocks from adoptFrom on, with the side rows their end needs, and
// the budget must hold them.
func (st *Store) adopt(s *seq, tokens []int32) {
	B, G := st.g.B, len(st.g.groups)
	parent := s.root
	full := st.g.unitBlocks(len(tokens))
	st.prefixQueried += int64(full)
	ids := make([][]int32, G) // ids[g][i]: the cached block, −1 when not held
	var hs []uint64
lookup:
	for i := range full {
		toks := tokens[i*B : st.g.unitEnd(i)]
		h := BlockHash(parent, toks)
		for g := range G {
			id, ok := st.pool.idx.lookup(h, g, parent, toks)
			if !ok {
				if st.g.groups[g].window == 0 {
					break lookup // a group that needs every block misses this one
				}
				id = -1
			}
			ids[g] = append(ids[g], id)
		}
		hs = append(hs, h)
		parent = h
	}
	for g := range G {
		ids[g] = ids[g][:len(hs)]
	}
	step := st.g.U / B // a run ends where a unit does
	k := len(hs) / step * step
	for ; k > 0; k -= step {
		fresh, ok := 0, true
		for g := 0; g < G && ok; g++ {
			from := st.adoptFrom(g, k*B)
			for _, id := range ids[g][from:k] {
				if ok = id >= 0; !ok {
					break
				}
				if st.pool.refs[id] == 0 {
					fresh++
				}
			}
			ok = ok && st.sidesHeld(g, from, ids[g][:k])
		}
		if ok && st.checkBudget(fresh, st.adoptTailBytes(k*B)) == nil {
			break
		}
	}
	for g := range G {
		from := st.adoptFrom(g, k*B)
		tb := make([]int32, k)
		for i := range k {
			tb[i] = -1
			if i >= from {
				tb[i] = ids[g][i]
				st.pool.adopt(tb[i])
				st.pool.touchSides(tb[i])
			}
		}
		s.tables[g], s.winFree[g] = tb, from
	}
	s.hashes = append(s.hashes, hs[:k]...)
	n := k * B
	st.prefixHits += int64(k)
	s.tokens = append(s.tokens, tokens[:n]...)
	s.n, s.base = n, n
	st.adoptTails(s, n)
}

// adoptFrom is the first block of group g that a sequence adopting P tokens refers
// to: 0 for a group without a window; else the first holding the next query's
// window (positions > P − w), its layers' KIVI value residuals or sinks.
func (st *Store) adoptFrom(g, P int) int {
	gr := &st.g.groups[g]
	if gr.window == 0 {
		return 0
	}
	from := max(0, P-gr.window+1)
	for _, l := range gr.layers {
		ly := &st.g.layers[l]
		if ly.r > 1 {
			from = min(from, max(0, P-ly.r+1))
		}
		if ly.sinksK > 0 || ly.sinksV > 0 {
			from = 0
		}
	}
	return from / st.g.U * st.g.U / st.g.B // whole units: a split key group needs all its blocks
}

// Side rows.
//
// A sequence that ends at a block boundary P holds, beside its blocks, rows that no
// block carries: per layer the KIVI value residual [P−r+1, P) and the sink rows
// [0, sinks) (the open KIVI key group is empty at P: blocks are whole key groups). To
// adopt a prefix ending at P exactly, those rows are kept beside the blocks that hold
// them: block i's side rows are, per layer, the tail-codec rows of its last
// min(B, r−1) values and of its sink positions, written by Append when a step
// completes the block (Grow hands out the side blocks if the pool has room for them
// without exceeding the budget) and made usable when the block is registered. Side
// blocks are cached from the start: they count as free memory and any allocation
// may take them back (the least recently used first), which only shortens the
// prefixes that can be adopted. Their rows are the bytes the computing sequence
// read, so an adopter reads exactly what it would have computed.

// sidePart is one run of side rows of one layer: positions [lo, lo+n) at byte off.
type sidePart struct{ off, lo, n int }

// sideParts returns the parts of the side rows of block i of group grp, three per
// layer of the group in order (value residual, key sinks, value sinks), and their
// total bytes. dst is reused.
func (st *Store) sideParts(grp, i int, dst []sidePart) ([]sidePart, int) {
	B, tr := st.g.B, st.g.tailRow
	lo, end := i*B, (i+1)*B
	off := 0
	dst = dst[:0]
	for _, l := range st.g.groups[grp].layers {
		ly := &st.g.layers[l]
		w := 0
		if ly.r > 1 {
			w = min(B, ly.r-1)
		}
		ks := min(end, max(lo, ly.sinksK)) - lo
		vs := min(end, max(lo, ly.sinksV)) - lo
		for _, p := range [3]sidePart{{lo: end - w, n: w}, {lo: lo, n: ks}, {lo: lo, n: vs}} {
			p.off = off
			dst = append(dst, p)
			off += p.n * tr
		}
	}
	return dst, off
}

// needSides reports whether some layer keeps rows that blocks do not carry.
func (g *geometry) needSides() bool {
	for i := range g.layers {
		if ly := &g.layers[i]; ly.r > 1 || ly.sinksK > 0 || ly.sinksV > 0 {
			return true
		}
	}
	return false
}

// sidesHeld reports whether adopting blocks ids of group grp (the first of a
// sequence; those before from are not adopted) would find the side rows a sequence
// ending after them holds.
func (st *Store) sidesHeld(grp, from int, ids []int32) bool {
	if !st.sides {
		return true
	}
	B, P := st.g.B, len(ids)*st.g.B
	first := len(ids)
	layers := st.g.groups[grp].layers
	for _, l := range layers {
		ly := &st.g.layers[l]
		if ly.r > 1 {
			first = min(first, max(0, P-ly.r+1)/B)
		}
	}
	for j := from; j < len(ids); j++ {
		needed := j >= first
		for _, l := range layers {
			ly := &st.g.layers[l]
			needed = needed || j*B < max(ly.sinksK, ly.sinksV)
		}
		if needed && !st.pool.idx.meta[ids[j]].sideReady {
			return false
		}
	}
	return true
}

// adoptTailBytes is the tail memory a sequence adopting P tokens gets.
func (st *Store) adoptTailBytes(P int) int64 {
	var n int64
	for l := range st.g.layers {
		ly := &st.g.layers[l]
		rows := ly.sinksK + ly.sinksV
		if ly.hasVTail() {
			rows += ly.vSteady()
		}
		n += int64(rows) * int64(st.g.tailRow)
	}
	if P == 0 {
		return 0
	}
	return n
}

// adoptTails gives s, which holds adopted blocks up to P, the rows a sequence that
// computed them would hold: the value residuals and sink rows, read from the blocks'
// side rows (sidesHeld checked they are there).
func (st *Store) adoptTails(s *seq, P int) {
	if P == 0 || !st.sides {
		return
	}
	B, tr := st.g.B, st.g.tailRow
	var parts []sidePart
	var ly *layer
	read := func(part, q int, dst []byte) {
		i := q / B
		parts, _ = st.sideParts(ly.grp, i, parts)
		p := parts[3*ly.inGrp+part]
		st.pool.sideIO(st.pool.idx.meta[s.tables[ly.grp][i]].side, p.off+(q-p.lo)*tr, dst, false)
	}
	for l := range st.g.layers {
		t := &s.tails[l]
		ly = &st.g.layers[l]
		if ly.hasKTail() {
			t.k.start = P
		}
		if ly.hasVTail() {
			t.v.resize(ly.vSteady())
			t.v.start, t.v.n = ly.vTailStart(P), 0
			for q := t.v.start; q < P; q++ {
				read(0, q, t.v.at(q))
				t.v.n++
			}
		}
		if ly.sinksK > 0 {
			t.sk = make([]byte, ly.sinksK*tr)
			for q := range min(P, ly.sinksK) {
				read(1, q, t.sk[q*tr:(q+1)*tr])
			}
		}
		if ly.sinksV > 0 {
			t.sv = make([]byte, ly.sinksV*tr)
			for q := range min(P, ly.sinksV) {
				read(2, q, t.sv[q*tr:(q+1)*tr])
			}
		}
	}
	st.tailBytes += s.tailBytes()
}

// planSides hands out side blocks for the blocks that the step [p0, end) of s
// completes, where the pool has room (see allocSides), but none to blocks holding
// rows grown without token ids: those are never registered.
func (st *Store) planSides(s *seq, p0, end int) {
	if !st.sides || s.evicted() {
		return
	}
	B := st.g.B
	end = min(end, s.opaqueFrom)
	for i := p0 / B; (i+1)*B <= end; i++ {
		for g, tb := range s.tables {
			var total int
			s.parts, total = st.sideParts(g, i, s.parts)
			st.pool.allocSides(tb[i], (total+st.g.blockBytes-1)/st.g.blockBytes)
		}
	}
}

// writeSides writes layer l's side rows of the blocks that the current step of s
// completes and that have side blocks. Caller holds the read lock, after Append's
// rows are in the work area and the sink rows.
func (st *Store) writeSides(s *seq, l int) {
	B, tr := st.g.B, st.g.tailRow
	end := s.base + s.pending
	t, ly := &s.tails[l], &st.g.layers[l]
	for i := s.base / B; (i+1)*B <= end; i++ {
		chain := st.pool.idx.meta[s.tables[ly.grp][i]].side
		if chain == nil {
			continue
		}
		s.parts, _ = st.sideParts(ly.grp, i, s.parts)
		for j, p := range s.parts[3*ly.inGrp : 3*ly.inGrp+3] {
			for q := p.lo; q < p.lo+p.n; q++ {
				var row []byte
				switch {
				case j == 1:
					row = t.sk[q*tr : (q+1)*tr]
				case j == 2:
					row = t.sv[q*tr : (q+1)*tr]
				case q >= s.base:
					row = s.work.v[(q-s.base)*tr : (q-s.base+1)*tr]
				default:
					row = t.v.at(q)
				}
				st.pool.sideIO(chain, p.off+(q-p.lo)*tr, row, true)
			}
		}
	}
}

// PrefixBlock is a full block of the prefix cache as a shared cache tier moves it
// between stores of the same configuration (the same RootHash): its identity, its
// bytes and its side rows.
type PrefixBlock struct {
	Hash   uint64  // BlockHash(Parent, Tokens)
	Parent uint64  // hash of the block before it, RootHash for the first
	Index  int     // its place in a sequence: it holds positions [Index·B, (Index+1)·B)
	Tokens []int32 // the token ids its hash names: positions BlockTokenRange(Index)
	// Bytes is the block as Layout describes it (BlockBytes long: the blocks of
	// every layer group).
	Bytes []byte
	// Side is its side rows when the store keeps them (a cache with KIVI value
	// windows or sinks; those of each layer group in turn): what a sequence that
	// ends with this block holds beside its
	// blocks. Nil when the store keeps none or they were taken back; a block without
	// them can be adopted only with later blocks that have theirs.
	Side []byte
}

// ExportPrefixBlock returns the registered block with the given hash, copied, or
// false when the store does not hold it (for every layer group).
func (st *Store) ExportPrefixBlock(hash uint64) (PrefixBlock, bool) {
	st.mu.Lock() // registers pending blocks
	defer st.mu.Unlock()
	st.registerAll()
	ids, ok := st.groupBlocks(hash)
	if !ok {
		return PrefixBlock{}, false
	}
	m := &st.pool.idx.meta[ids[0]]
	bb := st.g.blockBytes
	b := PrefixBlock{Hash: m.hash, Parent: m.parent, Index: m.index, Tokens: slices.Clone(m.tokens),
		Bytes: make([]byte, st.g.tokenBlockBytes())}
	side, n := true, 0
	for g, id := range ids {
		st.pool.blockIO(id, g, 0, b.Bytes[g*bb:(g+1)*bb], false)
		_, ng := st.sideParts(g, m.index, nil)
		side, n = side && (ng == 0 || st.pool.idx.meta[id].sideReady), n+ng
	}
	if side && n > 0 {
		b.Side = make([]byte, 0, n)
		for g, id := range ids {
			_, ng := st.sideParts(g, m.index, nil)
			if ng > 0 {
				st.pool.sideIO(st.pool.idx.meta[id].side, 0, b.Side[len(b.Side):len(b.Side)+ng], false)
				b.Side = b.Side[:len(b.Side)+ng]
			}
		}
	}
	return b, true
}

// groupBlocks returns the registered blocks with this hash of every layer group.
func (st *Store) groupBlocks(hash uint64) ([]int32, bool) {
	ids := make([]int32, len(st.g.groups))
	for g := range ids {
		id, ok := st.pool.idx.byHash[blockKey{hash, g}]
		if !ok {
			return nil, false
		}
		ids[g] = id
	}
	return ids, true
}

// ImportPrefixBlock adds b to the prefix cache as a cached block (free memory, like a
// block whose sequences all ended), findable by NewSeqWithPrefix. It checks
// everything it can before changing anything: the hash against the parent and
// tokens, the sizes, and that a first block's parent is this store's root; an error
// names what is wrong. A block already held is left as it is (nil error); of a
// block held for some layer groups only, the others are added. It fails with
// ErrNoSpace when no block can be freed for it.
func (st *Store) ImportPrefixBlock(b PrefixBlock) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	B := st.g.B
	switch {
	case !st.prefixOK:
		return fmt.Errorf("kv: import prefix block %#x: prefix caching is off", b.Hash)
	case b.Index < 0 || b.Index > 1<<30/B:
		return fmt.Errorf("kv: import prefix block %#x: index %d out of range", b.Hash, b.Index)
	case len(b.Tokens) != st.g.unitEnd(b.Index)-b.Index*B:
		return fmt.Errorf("kv: import prefix block %#x: %d tokens, want %d", b.Hash, len(b.Tokens), st.g.unitEnd(b.Index)-b.Index*B)
	case BlockHash(b.Parent, b.Tokens) != b.Hash:
		return fmt.Errorf("kv: import prefix block %#x: hash does not match its parent and tokens", b.Hash)
	case b.Index < 0 || (b.Index == 0) != (b.Parent == st.root):
		return fmt.Errorf("kv: import prefix block %#x: index %d with parent %#x (this store's root is %#x)", b.Hash, b.Index, b.Parent, st.root)
	case len(b.Bytes) != st.g.tokenBlockBytes():
		return fmt.Errorf("kv: import prefix block %#x: %d bytes, want %d", b.Hash, len(b.Bytes), st.g.tokenBlockBytes())
	}
	G, bb := len(st.g.groups), st.g.blockBytes
	sideAt := make([]int, G+1) // group g's side rows are Side[sideAt[g]:sideAt[g+1]]
	for g := range G {
		_, n := st.sideParts(g, b.Index, nil)
		sideAt[g+1] = sideAt[g] + n
	}
	withSides := st.sides && b.Side != nil
	if withSides && len(b.Side) != sideAt[G] {
		return fmt.Errorf("kv: import prefix block %#x: %d side bytes, want %d", b.Hash, len(b.Side), sideAt[G])
	}
	st.registerAll()
	var missing []int
	for g := range G {
		if _, ok := st.pool.idx.byHash[blockKey{b.Hash, g}]; !ok {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if a := st.pool.available(); a >= 0 && a < len(missing) {
		return fmt.Errorf("kv: import prefix block %#x: %w", b.Hash, ErrNoSpace)
	}
	ids := make([]int32, len(missing))
	for j, g := range missing { // referenced until all are made: none evicts another
		ids[j] = st.pool.alloc(-1)
		st.pool.blockIO(ids[j], g, 0, b.Bytes[g*bb:(g+1)*bb], true)
		st.pool.idx.register(ids[j], g, b.Hash, b.Parent, b.Tokens)
		st.pool.idx.meta[ids[j]].index = b.Index
	}
	for j, g := range missing {
		id, n := ids[j], sideAt[g+1]-sideAt[g]
		if withSides && n > 0 && st.pool.allocSides(id, (n+bb-1)/bb) {
			m := &st.pool.idx.meta[id] // after allocSides, which may grow meta
			st.pool.sideIO(m.side, 0, b.Side[sideAt[g]:sideAt[g+1]], true)
			m.sideReady = true
		}
	}
	for _, id := range ids {
		st.pool.decRef(id) // cached: registered, no references
	}
	return nil
}
