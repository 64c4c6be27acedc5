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
// position 0 to its end (attention is causal), which the hash chain names. Lookups
// also compare the parent hash and the token ids stored with the block, so a hash
// collision cannot alias two different prefixes.
//
// A sequence's full blocks are registered (made findable) once every layer of the
// step that completed them is appended — lazily, by the next write-locked operation
// (Grow, Drop, Fork, Truncate, NewSeqWithPrefix). A registered block whose last
// reference goes away is not freed: it waits in an LRU queue, still findable, until
// a new block needs its memory (the least recently released is taken first, counted
// in PoolStats.Evictions). A registered block that would be written again (after a
// Truncate into it) is unregistered first, or copied if shared.
//
// Exactness: a sequence adopting cached blocks must attend exactly as if it had
// computed them. Blocks hold the compressed form of every token, but KIVI value
// residuals (r > 1) and sink rows live in per-sequence full-precision tails that
// blocks do not carry, so caches with such layers do not share prefixes
// (PrefixCaching reports false and NewSeqWithPrefix adopts nothing). Sequences that
// have evicted part of their history (Evict) stop registering blocks: their later
// blocks were computed over the kept tokens only.

// PrefixCaching reports whether the store shares full blocks between sequences with
// the same prefix (see NewSeqWithPrefix): true unless Config.NoPrefixCache is set or
// some layer keeps full-precision rows that blocks do not carry (KIVI values with
// r > 1, or sinks on a lossy side).
func (st *Store) PrefixCaching() bool { return st.prefixOK }

func prefixEligible(g *geometry) bool {
	if g.cfg.NoPrefixCache {
		return false
	}
	for i := range g.layers {
		ly := &g.layers[i]
		if ly.r > 1 || ly.sinksK > 0 || ly.sinksV > 0 {
			return false
		}
	}
	return true
}

// rootHash is the parent hash of every sequence's block 0.
func rootHash(g *geometry) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "kvq-prefix-v1\x00%s\x00B=%d layers=%d heads=%d kvheads=%d headdim=%d\x00",
		g.cfg.ModelFingerprint, g.B, g.cfg.Layers, g.cfg.Heads, g.cfg.KVHeads, g.cfg.HeadDim)
	for i := range g.layers {
		fmt.Fprintf(h, "%d=%s;", i, g.layers[i].spec.String())
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

// blockMeta is the prefix identity of one physical block.
type blockMeta struct {
	registered bool
	hash       uint64
	parent     uint64
	tokens     []int32
	prev, next int32 // LRU links while cached (refs == 0), −1 at the ends
}

// prefixIndex finds registered blocks by hash and keeps the LRU queue of cached
// ones. It lives inside the pool, which calls it when references change.
type prefixIndex struct {
	meta       []blockMeta      // block id → identity
	byHash     map[uint64]int32 // hash → registered block
	head, tail int32            // LRU queue of cached blocks, oldest at head; −1 when empty
	cached     int
	evictions  int64
}

func (x *prefixIndex) grow(n int) {
	for len(x.meta) < n {
		x.meta = append(x.meta, blockMeta{prev: -1, next: -1})
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
	if x.byHash[m.hash] == id {
		delete(x.byHash, m.hash)
	}
	m.registered, m.tokens = false, m.tokens[:0]
}

// register makes block id findable under hash unless another block already is.
func (x *prefixIndex) register(id int32, hash, parent uint64, tokens []int32) {
	if _, dup := x.byHash[hash]; dup {
		return
	}
	m := &x.meta[id]
	m.registered, m.hash, m.parent = true, hash, parent
	m.tokens = append(m.tokens[:0], tokens...)
	x.byHash[hash] = id
}

// lookup returns the registered block holding tokens after parent.
func (x *prefixIndex) lookup(hash, parent uint64, tokens []int32) (int32, bool) {
	id, ok := x.byHash[hash]
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
	full := min(s.committed(len(st.g.layers)), s.opaqueFrom) / B
	for i := len(s.hashes); i < full; i++ {
		parent := st.root
		if i > 0 {
			parent = s.hashes[i-1]
		}
		toks := s.tokens[i*B : (i+1)*B]
		h := BlockHash(parent, toks)
		s.hashes = append(s.hashes, h)
		st.pool.idx.register(s.blocks[i], h, parent, toks)
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
// tokens it holds (a multiple of BlockTokens, ≤ len(tokens)); the caller continues
// with Grow for tokens[cached:]. Adopted blocks are shared with any sequence using
// them (a later write into one copies it first). Only blocks that fit the budget are
// adopted. Without prefix caching (see PrefixCaching) it equals NewSeq.
func (st *Store) NewSeqWithPrefix(tokens []int32) (SeqID, int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.newSeq()
	if st.prefixOK {
		st.registerAll()
		B := st.g.B
		parent := st.root
		full := len(tokens) / B
		st.prefixQueried += int64(full)
		for i := range full {
			toks := tokens[i*B : (i+1)*B]
			h := BlockHash(parent, toks)
			id, ok := st.pool.idx.lookup(h, parent, toks)
			if !ok {
				break
			}
			if st.pool.refs[id] == 0 && st.checkBudget(1, 0) != nil {
				break
			}
			st.pool.adopt(id)
			s.blocks = append(s.blocks, id)
			s.hashes = append(s.hashes, h)
			parent = h
		}
		n := len(s.blocks) * B
		st.prefixHits += int64(len(s.blocks))
		s.tokens = append(s.tokens, tokens[:n]...)
		s.n, s.base = n, n
	}
	id := st.next
	st.next++
	st.seqs[id] = s
	return id, s.n, nil
}
