package kv

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// noOpaque is seq.opaqueFrom of a sequence grown only with token ids.
const noOpaque = math.MaxInt

// OpaqueToken is the token id Tokens reports for positions grown by GrowWithoutTokens.
const OpaqueToken int32 = -1

// GrowWithoutTokens is Grow for n rows that have no token ids (embeddings, image or
// audio spans, rows imported from another engine): it reserves room for n tokens
// exactly as Grow does, and the next step appends and attends them as usual.
//
// Such rows never take part in prefix caching: the block holding the first of them
// and every later block of the sequence (their contents depend on these rows) are
// never registered, so no other sequence adopts them, and a sequence grown this way
// matches nothing either if it was created with NewSeq (NewSeqWithPrefix is the only
// way a sequence adopts cached blocks, and it takes token ids). Earlier whole blocks
// grown with real ids stay shareable. Tokens reports OpaqueToken for these
// positions. Truncating below the first of them makes the sequence ordinary again.
func (st *Store) GrowWithoutTokens(id SeqID, n int) error {
	if n < 0 {
		return fmt.Errorf("kv: grow of sequence %d by %d tokens without ids: n must be ≥ 0", id, n)
	}
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = OpaqueToken
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.grow(id, ids)
	if err != nil {
		return err
	}
	if n > 0 {
		s.opaqueFrom = min(s.opaqueFrom, s.base)
		// Blocks that are never registered need no side rows. Only this step's blocks
		// can hold any: earlier ones past opaqueFrom were cleared by earlier calls, and
		// planSides gives none to blocks past opaqueFrom.
		for _, tb := range s.tables {
			for i := s.base / st.g.B; i < len(tb); i++ {
				st.pool.dropSides(tb[i])
			}
		}
	}
	return nil
}

// ErrNonFinite is returned (wrapped) by Append for keys or values holding a NaN or an
// infinity. The cache has then changed nothing: the layer is not appended, and the
// caller may Append it again with finite rows or Truncate the step away.
//
// Why reject rather than store: no codec can keep them honestly (integer codecs
// would read NaN as 0 and saturate ±Inf, float ones would keep a NaN that turns
// every later attention output of the sequence into NaN), and a NaN in the cache
// is a fault upstream of it that should surface where it enters.
var ErrNonFinite = errors.New("key or value is NaN or infinite")

// checkFinite reports the first non-finite value of k or v (token-major rows of
// rowLen = kvHeads·headDim values, the first at position base).
func checkFinite(k, v []float32, base, kvHeads, headDim int) error {
	if allFinite(k) && allFinite(v) {
		return nil
	}
	for _, side := range [2]struct {
		name string
		x    []float32
	}{{"key", k}, {"value", v}} {
		for i, x := range side.x {
			if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
				rl := kvHeads * headDim
				return fmt.Errorf("%w: %s of position %d, head %d, element %d is %v",
					ErrNonFinite, side.name, base+i/rl, i%rl/headDim, i%headDim, x)
			}
		}
	}
	return nil
}

// allFinite reports whether no value of x is NaN or infinite, branch-free over two
// values per 64-bit word: a value's exponent bits plus one exponent unit carry into
// its sign bit exactly when they are all ones (never into the next value's bits).
func allFinite(x []float32) bool {
	const exp, unit = 0x7f8000007f800000, 0x0080000000800000
	var acc0, acc1, acc2, acc3 uint64
	if n := len(x) / 8; n > 0 {
		w := unsafe.Slice((*uint64)(unsafe.Pointer(&x[0])), 4*n)
		for i := 0; i+4 <= len(w); i += 4 {
			q := w[i : i+4 : i+4]
			acc0 |= q[0]&exp + unit
			acc1 |= q[1]&exp + unit
			acc2 |= q[2]&exp + unit
			acc3 |= q[3]&exp + unit
		}
	}
	acc := acc0 | acc1 | acc2 | acc3
	for _, v := range x[len(x)&^7:] {
		acc |= uint64(math.Float32bits(v)&0x7f800000 + 0x00800000)
	}
	return acc&0x8000000080000000 == 0
}
