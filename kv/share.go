package kv

// Sharing full blocks beyond one process (package kv/tier stores them on disk or in
// Redis, moving them with ExportPrefixBlock and ImportPrefixBlock). Blocks of salted
// sequences (NewSeqWithPrefixSalt) are never reported: they stay in their process.

// OnRegister sets fn (nil: none) to be called with the hash of every block this store
// registers from its own unsalted sequences (not those of ImportPrefixBlock). fn runs
// with the store locked, during Grow, Drop and the other write-locked operations: it
// must return at once and must not call the store.
func (st *Store) OnRegister(fn func(hash uint64)) {
	st.mu.Lock()
	st.onRegister = fn
	st.mu.Unlock()
}

// HasBlock reports whether a block with this hash is registered (used or cached)
// for every layer group.
func (st *Store) HasBlock(hash uint64) bool {
	st.mu.RLock()
	defer st.mu.RUnlock()
	_, ok := st.groupBlocks(hash)
	return ok
}

// SideBytes is the length of PrefixBlock.Side for the block at index i of a
// sequence: the side rows a block there holds when it has them; 0 for a store that
// keeps none (no KIVI value window, no sinks).
func (st *Store) SideBytes(i int) int {
	if !st.sides {
		return 0
	}
	n := 0
	for g := range st.g.groups {
		_, ng := st.sideParts(g, i, nil)
		n += ng
	}
	return n
}
