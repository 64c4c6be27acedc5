package kv

import "fmt"

// Attention sinks + sliding window (StreamingLLM).
//
// Evict(seq, sinks, window) keeps the first sinks tokens of a sequence and its last
// window tokens and forgets the rest: whole blocks inside the forgotten range return
// to the pool at once (blocks it only partly covers stay, their forgotten slots
// counted as waste, and so do the blocks of a KIVI key group split over several
// blocks until the whole group is forgotten). Positions keep counting: Len is unchanged and the next token
// is at position Len, so the model keeps applying RoPE at logical positions, and
// keys stay stored after RoPE at the positions where they were computed.
//
// Attention stays exact for every codec without touching stored keys: what
// StreamingLLM prescribes is attention as if the kept tokens were contiguous — sinks
// at 0..sinks−1, the window right after them — i.e. a fresh run over the kept tokens
// whose window keys sit gap = winStart − sinks positions earlier. RoPE scores depend
// only on position differences, so a query at logical position p scores the window
// keys (stored at their logical positions) exactly as the fresh run would, and scores
// the sink keys as the fresh run would if the query is rotated back by gap positions
// first: q·R(−gap) against the sink spans (attn.Span.Delta = −gap, through
// Config.Rotate, which the model supplies). Only queries are rotated, and only in
// f32, so compressed keys are read unchanged and the result equals the fresh run's
// attention over the same stored bytes. Values carry no position and are unaffected.
//
// Later calls may move the window forward (the evicted range grows); sinks must not
// change once something was evicted. A sequence that has evicted no longer registers
// prefix-cache blocks (their contents depend on what was evicted).

func (s *seq) evicted() bool { return s.winStart > s.sinkEnd }

// kept is the number of positions the sequence still holds.
func (s *seq) kept() int { return s.n - (s.winStart - s.sinkEnd) }

// Eviction is what one Evict call did.
type Eviction struct {
	// Positions is the number of positions newly forgotten; 0 when there was nothing
	// to do (Len ≤ sinks + window, or the window has not moved since the last call).
	Positions int
	// Blocks is the number of blocks returned to the pool: those holding only
	// forgotten positions. It may be 0 while Positions is not (the forgotten
	// positions share their blocks with kept ones).
	Blocks int
}

// Evict forgets seq's positions between its first sinks and its last window tokens
// and frees the blocks that held only forgotten positions; it reports how many
// positions it forgot and how many blocks it released (of every layer group).
// Nothing is forgotten while Len ≤ sinks + window. It fails (changing nothing) while
// a step is open, with sinks but without Config.Rotate (needed to rotate queries
// onto the sinks), or with sinks different from an earlier eviction's. Layers with
// an attention window of their own read no position before it either way (see
// slide).
func (st *Store) Evict(id SeqID, sinks, window int) (Eviction, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.lookup(id)
	if err != nil {
		return Eviction{}, fmt.Errorf("kv: evict: %w", err)
	}
	if sinks < 0 || window < 1 {
		return Eviction{}, fmt.Errorf("kv: evict sequence %d: want sinks ≥ 0 and window ≥ 1, got %d and %d", id, sinks, window)
	}
	if s.stepOpen(len(st.g.layers)) {
		return Eviction{}, fmt.Errorf("kv: evict sequence %d: a step is open (%d of %d layers appended)", id, s.nDone, len(st.g.layers))
	}
	if sinks > 0 && st.g.cfg.Rotate == nil {
		return Eviction{}, fmt.Errorf("kv: evict sequence %d: Config.Rotate is nil (the model's RoPE rotation is needed to score the sinks exactly)", id)
	}
	if s.evicted() && sinks != s.sinkEnd {
		return Eviction{}, fmt.Errorf("kv: evict sequence %d: sinks=%d, but an earlier eviction kept %d", id, sinks, s.sinkEnd)
	}
	return st.evict(s, sinks, s.n-window), nil
}

// evict forgets s's positions in [sinks, start) and frees the blocks wholly inside.
func (st *Store) evict(s *seq, sinks, start int) Eviction {
	if start <= sinks || start <= s.winStart {
		return Eviction{}
	}
	st.register(s) // blocks computed before the eviction stay valid prefixes
	B, U := st.g.B, st.g.U
	freed := 0
	// Blocks whose units (a split KIVI key group's blocks together) lie entirely
	// inside [sinks, start).
	for _, tb := range s.tables {
		for i := (sinks + U - 1) / U * U / B; i < st.g.unitBlocks(start); i++ {
			if b := tb[i]; b >= 0 {
				st.pool.decRef(b)
				tb[i] = -1
				freed++
			}
		}
	}
	forgot := start - max(sinks, s.winStart)
	s.sinkEnd, s.winStart = sinks, start
	return Eviction{Positions: forgot, Blocks: freed}
}

// slide frees, in each layer group with an attention window w, the blocks of s
// that no later query of its layers can see: the next query, at position Len, sees
// positions > Len − w. Attention is unchanged, and the blocks stay valid prefix
// blocks (registered first: their contents depend only on the tokens before them),
// so a freed registered block waits in the LRU queue like any other. Grow calls it
// first; its freeing stands even when the Grow then fails (nothing it freed is
// visible).
func (st *Store) slide(s *seq) {
	for g, tb := range s.tables {
		end := st.slideEnd(s, g)
		for j := s.winFree[g]; j < end; j++ {
			if tb[j] >= 0 {
				st.pool.decRef(tb[j])
				tb[j] = -1
			}
		}
		s.winFree[g] = max(s.winFree[g], end)
	}
}

// slideEnd is the table index before which group g's blocks lie wholly outside the
// window of s's next query, whole units of them (a KIVI key group split over blocks
// goes when all of it is out; 0 for a group without a window).
func (st *Store) slideEnd(s *seq, g int) int {
	return min(len(s.tables[g]), st.g.outOfWindow(st.g.groups[g].window, s.n))
}

// slideFrees is the number of blocks slide would return to the pool now (those
// that s alone refers to; a block shared with a fork stays used).
func (st *Store) slideFrees(s *seq) int {
	n := 0
	for g, tb := range s.tables {
		for j := s.winFree[g]; j < st.slideEnd(s, g); j++ {
			if tb[j] >= 0 && st.pool.refs[tb[j]] == 1 {
				n++
			}
		}
	}
	return n
}

// shortestLen is the shortest length s can be truncated to (other than 0) whose
// next query's window the window groups still hold: a group that freed its blocks
// before index f needs a query at n ≥ f·B + w − 1.
func (st *Store) shortestLen(s *seq) int {
	short := 0
	for g, f := range s.winFree {
		if f > 0 {
			short = max(short, f*st.g.B+st.g.groups[g].window-1)
		}
	}
	return short
}
