package kv

import (
	"slices"

	"kvq/internal/blockmem"
)

// pool is the set of physical blocks of one Store. Block memory is made on first
// use, outside the Go heap (blockmem), and kept for reuse after its block is freed;
// a cleanup releases it once the Store is unreachable. A block is used while at
// least one sequence's block table refers to it; refs counts those references.
//
// The pool does no budget checks itself: the Store plans every operation, checks
// the budget against the plan, and only then calls alloc, so that a failure leaves
// nothing behind.
//
// Registered blocks (prefix caching, see prefix.go) whose references all go away are
// not freed but cached: they stay findable in idx's LRU queue. alloc takes free
// blocks first, then makes new memory while the pool holds fewer than maxBlocks,
// then evicts the least recently cached block.
type pool struct {
	blockBytes int
	maxBlocks  int             // blocks the budget holds; 0 when unlimited
	mem        *blockmem.Arena // where block memory comes from
	data       [][]byte        // block id → memory; nil until first used
	refs       []int32         // block id → references from block tables
	free       []int32         // ids with refs == 0, memory made and not cached, reused first
	used       int             // blocks with refs > 0
	shared     int             // blocks with refs > 1
	idx        prefixIndex
}

// alloc returns a block with one reference. Its contents are unspecified.
func (p *pool) alloc() int32 {
	var id int32
	switch n := len(p.free); {
	case n > 0:
		id = p.free[n-1]
		p.free = p.free[:n-1]
	case p.idx.head >= 0 && p.maxBlocks > 0 && len(p.data) >= p.maxBlocks:
		id = p.idx.head
		p.idx.remove(id)
		if owner := p.idx.meta[id].sideOf; owner >= 0 {
			// A side block: its owner loses all its side rows.
			p.idx.meta[id].sideOf = -1
			p.idx.sides--
			p.idx.meta[owner].side = slices.DeleteFunc(p.idx.meta[owner].side, func(x int32) bool { return x == id })
			p.dropSides(owner)
		} else {
			p.idx.unregister(id)
			p.dropSides(id)
		}
		p.idx.evictions++
	default:
		id = int32(len(p.data))
		p.data = append(p.data, p.mem.Alloc())
		p.refs = append(p.refs, 0)
		p.idx.grow(len(p.data))
	}
	p.refs[id] = 1
	p.used++
	return id
}

// adopt adds a reference to a registered block, taking it out of the LRU queue if
// it was cached.
func (p *pool) adopt(id int32) {
	if p.refs[id] == 0 {
		p.idx.remove(id)
		p.refs[id] = 1
		p.used++
		return
	}
	p.incRef(id)
}

// write prepares block id, referenced once, for new contents: it stops being
// findable under its old identity and loses its side rows.
func (p *pool) write(id int32) {
	p.idx.unregister(id)
	p.dropSides(id)
}

// available is the number of blocks alloc can hand out without making memory
// beyond the budget's blocks (free, new, or taken from the LRU queue); −1 when
// unlimited.
func (p *pool) available() int {
	if p.maxBlocks == 0 {
		return -1
	}
	return len(p.free) + max(0, p.maxBlocks-len(p.data)) + p.idx.cached
}

// allocSides gives block owner n side blocks (see prefix.go) if the pool can hand
// them out without evicting owner's own; they are cached at once (no references,
// in the LRU queue), so they count as free memory and any allocation may take them
// back. It reports whether owner has them.
func (p *pool) allocSides(owner int32, n int) bool {
	p.dropSides(owner)
	if a := p.available(); n < 1 || a >= 0 && a < n {
		return false
	}
	chain := make([]int32, n)
	for i := range chain {
		chain[i] = p.alloc() // referenced while the chain is made: not evicted by it
	}
	for _, id := range chain {
		p.refs[id] = 0
		p.used--
		p.idx.meta[id].sideOf = owner
		p.idx.push(id)
		p.idx.sides++
	}
	p.idx.meta[owner].side = chain
	p.idx.meta[owner].sideReady = false
	return true
}

// dropSides frees the side blocks of owner.
func (p *pool) dropSides(owner int32) {
	m := &p.idx.meta[owner]
	for _, id := range m.side {
		p.idx.remove(id)
		p.idx.meta[id].sideOf = -1
		p.idx.sides--
		p.free = append(p.free, id)
	}
	m.side, m.sideReady = nil, false
}

// touchSides moves owner's side blocks to the recent end of the LRU queue.
func (p *pool) touchSides(owner int32) {
	for _, id := range p.idx.meta[owner].side {
		p.idx.remove(id)
		p.idx.push(id)
	}
}

// sideIO copies between b and the bytes of a side chain starting at byte off,
// writing into the chain when write is set.
func (p *pool) sideIO(chain []int32, off int, b []byte, write bool) {
	for len(b) > 0 {
		blk := p.data[chain[off/p.blockBytes]][off%p.blockBytes:]
		var n int
		if write {
			n = copy(blk, b)
		} else {
			n = copy(b, blk)
		}
		b, off = b[n:], off+n
	}
}

func (p *pool) incRef(id int32) {
	p.refs[id]++
	if p.refs[id] == 2 {
		p.shared++
	}
}

func (p *pool) decRef(id int32) {
	p.refs[id]--
	switch p.refs[id] {
	case 1:
		p.shared--
	case 0:
		p.used--
		if p.idx.meta[id].registered {
			p.idx.push(id)
		} else {
			p.dropSides(id)
			p.free = append(p.free, id)
		}
	}
}

// ring holds the full-precision rows (in the tail codec, see geometry.tail) of a
// contiguous range of positions [start, start+n) of one layer side of a sequence.
// Position p lives in row p mod capRows, so dropping old rows and appending new ones
// moves nothing.
type ring struct {
	buf        []byte
	rowBytes   int
	start, n   int
	capRowsVal int
}

func (r *ring) capRows() int { return r.capRowsVal }

func (r *ring) bytes() int64 { return int64(len(r.buf)) }

// at returns position p's row; p must be held or be the next position appended.
func (r *ring) at(p int) []byte {
	i := p % r.capRowsVal
	return r.buf[i*r.rowBytes : (i+1)*r.rowBytes]
}

// trim drops rows before position s (s ≥ start), or empties the ring at s.
func (r *ring) trim(s int) {
	if s <= r.start {
		return
	}
	if s >= r.start+r.n {
		r.start, r.n = s, 0
		return
	}
	r.n -= s - r.start
	r.start = s
}

// cut drops rows at positions ≥ e.
func (r *ring) cut(e int) {
	if e <= r.start {
		r.start, r.n = e, 0
		return
	}
	if e < r.start+r.n {
		r.n = e - r.start
	}
}

// resize makes the capacity exactly c rows (c ≥ n), keeping the held rows.
func (r *ring) resize(c int) {
	if c == r.capRowsVal {
		return
	}
	var nb []byte
	if c > 0 {
		nb = make([]byte, c*r.rowBytes)
	}
	for p := r.start; p < r.start+r.n; p++ {
		i := p % c
		copy(nb[i*r.rowBytes:(i+1)*r.rowBytes], r.at(p))
	}
	r.buf, r.capRowsVal = nb, c
}

// planCap is the capacity a ring gets when it must hold need rows: its steady size
// (the single-token-step size) from its first row on, exactly need for a step beyond
// steady, and back to steady after such a step. A ring is not grown by doubling: each
// outgrown buffer would stay in the Go heap as garbage until the next collection, up
// to the ring's size again, and every sequence past a few tokens needs the steady
// size anyway.
func planCap(cur, need, steady int) int {
	if cur == 0 && need == 0 {
		return 0
	}
	return max(need, steady)
}

// wrapEnd is the first position after a at which the ring's rows stop being
// contiguous in memory.
func (r *ring) wrapEnd(a int) int {
	return a + r.capRowsVal - a%r.capRowsVal
}
