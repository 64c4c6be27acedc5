package kv

import (
	"slices"
	"time"

	"kvq/internal/blockmem"
)

// pool is the set of physical blocks of one Store. Block memory is made on first
// use, outside the Go heap (blockmem), and kept for reuse after its block is freed;
// a cleanup releases it once the Store is unreachable. A block is used while at
// least one sequence's block table refers to it; refs counts those references.
//
// Memory is made in extents of ext blocks (block id = extent·ext + slot). A block's
// bytes are not one range: an extent holds each piece of its blocks' layout (one
// layer side of one KV head of its group, see group.pieces) for all its slots side
// by side (a block's group is its table's: whoever reads it knows it), so
// the rows of blocks in consecutive slots follow one another and attention reads a
// run of them in one kernel call (allocation granularity is not kernel
// granularity). alloc takes the slot after a sequence's last block when it is free.
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
	ext        int             // blocks per extent
	pieces     [][]piece       // per group, its block layout piece by piece (group.pieces)
	maxBlocks  int             // blocks the budget holds; 0 when unlimited
	mem        *blockmem.Arena // where extent memory comes from
	data       [][]byte        // extent → memory
	refs       []int32         // block id → references from block tables; len: blocks made
	free       []int32         // ids with refs == 0, memory made and not cached, reused first
	freeAt     []int32         // block id → its index in free, −1 when not free
	freeIn     []int32         // extent → its free slots
	lastAny    int32           // the block alloc(−1) gave last, −1 for none
	used       int             // blocks with refs > 0
	shared     int             // blocks with refs > 1
	idx        prefixIndex

	// Prefault (see Store.Prefault): faulting is the extent whose memory is being
	// faulted in, −1 for none, and faulted the bytes of it done; prefaulted counts
	// the bytes faulted in since the Store was made.
	faulting, faulted int
	prefaulted        int64
}

// made is the number of blocks whose memory exists.
func (p *pool) made() int { return len(p.refs) }

func (p *pool) pushFree(id int32) {
	p.freeAt[id] = int32(len(p.free))
	p.free = append(p.free, id)
	p.freeIn[int(id)/p.ext]++
}

// takeFree removes id from the free list.
func (p *pool) takeFree(id int32) {
	i, last := p.freeAt[id], p.free[len(p.free)-1]
	p.free[i], p.freeAt[last] = last, i
	p.free = p.free[:len(p.free)-1]
	p.freeAt[id] = -1
	p.freeIn[int(id)/p.ext]--
}

// extend makes one more extent, its slots free (the lowest handed out first), up to
// maxBlocks blocks in all.
func (p *pool) extend() {
	x := len(p.data)
	p.data = append(p.data, p.mem.Alloc())
	p.freeIn = append(p.freeIn, 0)
	n := p.ext
	if p.maxBlocks > 0 {
		n = min(n, p.maxBlocks-p.made())
	}
	for range n {
		p.refs = append(p.refs, 0)
		p.freeAt = append(p.freeAt, -1)
	}
	p.idx.grow(p.made())
	for s := n - 1; s >= 0; s-- {
		p.pushFree(int32(x*p.ext + s))
	}
}

// faultPiece is the most extent memory prefault faults in between two looks at the
// clock: well under a millisecond whether it is faulted in as base pages (0.4–1.2 ms
// per MiB on the 2-core VM this was measured on) or makes one huge page of 2 MiB
// (0.1–0.3 ms per MiB).
const faultPiece = 512 << 10

// prefault makes extents of free blocks and faults their memory in (Arena.Fault)
// until the pool holds ready bytes of free blocks or as many whole extents as the
// budget holds, or until the clock passes until (checked after every faultPiece
// bytes). It reports whether more remains to do; the extent it was faulting in when
// time ran out is resumed by the next call.
func (p *pool) prefault(ready int64, until time.Time) bool {
	for {
		if p.faulting < 0 {
			if !p.wantsExtent(ready) {
				return false
			}
			p.extend()
			p.faulting, p.faulted = len(p.data)-1, 0
		}
		mem := p.data[p.faulting]
		for p.faulted < len(mem) {
			n := min(faultPiece, len(mem)-p.faulted)
			p.mem.Fault(mem[p.faulted : p.faulted+n])
			p.faulted += n
			p.prefaulted += int64(n)
			if time.Now().After(until) {
				return p.faulted < len(mem) || p.wantsExtent(ready)
			}
		}
		p.faulting = -1
	}
}

// wantsExtent reports whether prefault makes another extent: the free blocks hold
// fewer than ready bytes and the budget holds a whole extent more (the last extent
// of a budget that holds only part of one is left to the first alloc that needs it:
// its memory is laid out for all ext slots, and would be faulted in for slots the
// budget never hands out).
func (p *pool) wantsExtent(ready int64) bool {
	return int64(len(p.free))*int64(p.blockBytes) < ready && p.made()%p.ext == 0 &&
		(p.maxBlocks == 0 || p.maxBlocks-p.made() >= p.ext)
}

// fresh, passed to alloc, asks for the first slot of an extent whose slots are all
// free: the first block of a span (see geometry.span), whose next blocks then
// follow it in the extent.
const fresh int32 = -2

// noPlace, passed to alloc, states no preference (alloc takes any free block).
const noPlace int32 = -4

// spanSlot is where the first of k blocks of a span that one Grow allocates goes
// (the next ones take the slots after it): the first slot of an empty extent (see
// freshSlot), else of a new extent, else the first run of k free slots of an
// extent, else, for k > 1, the first run of k slots each free or cached (alloc
// takes a cached block it is asked for out of the LRU order), else noPlace. free
// and cached say what a slot is and extend makes an extent: Store.gatherPlan
// passes its own view of the pool to follow this choice.
func (p *pool) spanSlot(k int, free, cached func(id int32) bool, extend func() int32) int32 {
	for x := range p.freeIn {
		if id := p.run(x, min(p.ext, p.made()-x*p.ext), free); id == int32(x*p.ext) {
			return id
		}
	}
	if id := extend(); id >= 0 {
		return id
	}
	for x := range p.freeIn {
		if id := p.run(x, k, free); id >= 0 {
			return id
		}
	}
	if k > 1 { // a single block is placed as well by the LRU order
		for x := range p.freeIn {
			if id := p.run(x, k, func(id int32) bool { return free(id) || cached(id) }); id >= 0 {
				return id
			}
		}
	}
	return noPlace
}

// run returns the first slot of the first run of k slots of extent x for which ok
// holds, or −1.
func (p *pool) run(x, k int, ok func(id int32) bool) int32 {
	n := 0
	for id := int32(x * p.ext); int(id) < min((x+1)*p.ext, p.made()); id++ {
		if n++; !ok(id) {
			n = 0
		} else if n == k {
			return id + 1 - int32(k)
		}
	}
	return -1
}

// isFree and isCached say whether a made block is on the free list, or cached
// (registered or a side block, no references, in the LRU queue).
func (p *pool) isFree(id int32) bool   { return p.freeAt[id] >= 0 }
func (p *pool) isCached(id int32) bool { return p.refs[id] == 0 && p.freeAt[id] < 0 }

// spanStart is spanSlot on the pool as it is (alloc's preference for a span's
// first block; it may make an extent).
func (p *pool) spanStart(k int) int32 {
	return p.spanSlot(k, p.isFree, p.isCached, func() int32 {
		if p.made()%p.ext == 0 && (p.maxBlocks == 0 || p.made() < p.maxBlocks) {
			p.extend()
			return int32((len(p.data) - 1) * p.ext)
		}
		return -1
	})
}

// freshSlot returns the first slot of an extent whose slots are all free, making
// one if the budget allows, or −1.
func (p *pool) freshSlot() int32 {
	for x, n := range p.freeIn {
		if int(n) == min(p.ext, p.made()-x*p.ext) {
			return int32(x * p.ext)
		}
	}
	if p.made()%p.ext == 0 && (p.maxBlocks == 0 || p.made() < p.maxBlocks) {
		p.extend()
		return int32((len(p.data) - 1) * p.ext)
	}
	return -1
}

// alloc returns a block with one reference: prefer if it is free or cached (the
// slot after a sequence's last block, or the first of a run, see Store.placeFor;
// fresh for the first slot of an empty extent), else any.
// Its contents are unspecified. Blocks asked for with prefer −1 (side rows,
// imported blocks) fill extents of their own, one after another, so that they
// do not take the slots a sequence's span is about to grow into.
func (p *pool) alloc(prefer int32) int32 {
	var id int32
	anyBlock := prefer == -1
	if anyBlock {
		if prefer = p.next(p.lastAny); prefer < 0 || p.freeAt[prefer] < 0 {
			prefer = fresh
		}
	}
	if prefer == fresh {
		prefer = p.freshSlot()
	}
	switch {
	case prefer >= 0 && int(prefer) < p.made() && p.freeAt[prefer] >= 0:
		id = prefer
		p.takeFree(id)
	case !anyBlock && prefer >= 0 && int(prefer) < p.made() && p.isCached(prefer):
		// Taken from the prefix cache out of the LRU order: the sequence's span
		// stays in consecutive slots, and attention reads it in place rather than
		// copying it every step and layer (see Store.gather; under 16 clients
		// sending their prompts again, llama-134m f16, that copy was 18% of the CPU
		// time), and the copy needs no room in the budget.
		id = prefer
		p.evict(id)
	case len(p.free) > 0:
		id = p.free[len(p.free)-1]
		p.takeFree(id)
	case p.idx.head >= 0 && p.maxBlocks > 0 && p.made() >= p.maxBlocks:
		id = p.idx.head
		p.evict(id)
	default:
		p.extend()
		id = p.free[len(p.free)-1]
		p.takeFree(id)
	}
	if anyBlock {
		p.lastAny = id
	}
	p.refs[id] = 1
	p.used++
	return id
}

// evict takes the cached block id (no references) out of the LRU queue and the
// prefix index.
func (p *pool) evict(id int32) {
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
}

// next is the block a sequence whose last block is last prefers next: the
// following slot of the same extent (−1 when there is none).
func (p *pool) next(last int32) int32 {
	if last < 0 || (last+1)%int32(p.ext) == 0 || int(last)+1 >= p.made() {
		return -1
	}
	return last + 1
}

// section returns the memory from block id's part of the piece that starts at byte
// off of the block layout (of n bytes per block) to the end of its extent: the
// same piece of the blocks in later slots follows, then the next piece.
func (p *pool) section(id int32, off, n int) []byte {
	x, s := int(id)/p.ext, int(id)%p.ext
	return p.data[x][off*p.ext+s*n:]
}

// blockIO copies between b and block id's bytes in the layout of group grp from
// byte off (as if the block were one range), writing into the block when write is
// set; it returns the bytes copied (up to the end of the group's layout).
func (p *pool) blockIO(id int32, grp, off int, b []byte, write bool) int {
	done := 0
	pieces := p.pieces[grp]
	i, _ := slices.BinarySearchFunc(pieces, off, func(pc piece, off int) int {
		switch {
		case pc.off+pc.n <= off:
			return -1
		case pc.off > off:
			return 1
		}
		return 0
	})
	for ; i < len(pieces) && len(b) > 0; i++ {
		pc := pieces[i]
		mem := p.section(id, pc.off, pc.n)[off-pc.off : pc.n]
		var n int
		if write {
			n = copy(mem, b)
		} else {
			n = copy(b, mem)
		}
		b, off, done = b[n:], off+n, done+n
	}
	return done
}

// copyBlock copies block src's bytes into block dst, both of group grp.
func (p *pool) copyBlock(dst, src int32, grp int) {
	for _, pc := range p.pieces[grp] {
		copy(p.section(dst, pc.off, pc.n)[:pc.n], p.section(src, pc.off, pc.n)[:pc.n])
	}
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
	return len(p.free) + max(0, p.maxBlocks-p.made()) + p.idx.cached
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
		chain[i] = p.alloc(-1) // referenced while the chain is made: not evicted by it
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
		p.pushFree(id)
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
		n := p.blockIO(chain[off/p.blockBytes], 0, off%p.blockBytes, b, write) // any group's layout covers a block
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
			p.pushFree(id)
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
