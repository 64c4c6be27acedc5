package tokenizer

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"
)

// strTable holds n strings back to back in one string: string i is s[off[i]:off[i+1]].
// A vocabulary takes its bytes plus 4 per string this way, where a []string takes a
// 16-byte header and an allocation per string, and a map[string]int32 about 40 bytes
// per entry more (a 32k vocabulary: 0.6 MB against 2.6 MB; 128k pieces and 280k
// merges: 4 MB against 30).
type strTable struct {
	s   string
	off []uint32
}

// newStrTable copies ss into a table. It fails when their bytes exceed 4 GiB − 1.
func newStrTable(ss []string) (strTable, error) {
	total := 0
	for _, s := range ss {
		total += len(s)
	}
	if total > 1<<32-1 {
		return strTable{}, fmt.Errorf("%w: %d bytes of strings do not fit 32-bit offsets", ErrInvalidVocab, total)
	}
	var b strings.Builder
	b.Grow(total)
	off := make([]uint32, len(ss)+1)
	for i, s := range ss {
		b.WriteString(s)
		off[i+1] = uint32(b.Len())
	}
	return strTable{s: b.String(), off: off}, nil
}

// len returns the number of strings.
func (t *strTable) len() int { return len(t.off) - 1 }

// at returns string i, 0 ≤ i < t.len().
func (t *strTable) at(i int32) string { return t.s[t.off[i]:t.off[i+1]] }

// strIndex finds a string's id in a strTable: open addressing with linear probing
// over a power-of-two table of id+1 (0: empty slot), filled to at most half.
type strIndex struct {
	seed  maphash.Seed
	slots []int32
}

// newStrIndex returns an empty index with room for n strings.
func newStrIndex(n int) strIndex {
	size := 1 << bits.Len(uint(2*n)) // > 2n: at most half full
	return strIndex{seed: maphash.MakeSeed(), slots: make([]int32, size)}
}

// add indexes string id of tab unless an equal string is indexed already (then the
// first id stays).
func (x *strIndex) add(tab *strTable, id int32) {
	s := tab.at(id)
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, s) & mask; ; h = (h + 1) & mask {
		e := x.slots[h]
		if e == 0 {
			x.slots[h] = id + 1
			return
		}
		if tab.at(e-1) == s {
			return
		}
	}
}

// get returns the id of s in tab, if s is indexed.
func (x *strIndex) get(tab *strTable, s string) (int32, bool) {
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, s) & mask; ; h = (h + 1) & mask {
		e := x.slots[h]
		if e == 0 {
			return 0, false
		}
		if tab.at(e-1) == s {
			return e - 1, true
		}
	}
}

// getBytes is get for a key held in a byte slice (no string is allocated).
func (x *strIndex) getBytes(tab *strTable, b []byte) (int32, bool) {
	mask := uint64(len(x.slots) - 1)
	for h := maphash.Bytes(x.seed, b) & mask; ; h = (h + 1) & mask {
		e := x.slots[h]
		if e == 0 {
			return 0, false
		}
		if tab.at(e-1) == string(b) {
			return e - 1, true
		}
	}
}
