package tokenizer

import (
	"math"
	"strings"
	"unicode/utf8"
)

// spaceMark is SentencePiece's stand-in for a space, U+2581 LOWER ONE EIGHTH BLOCK.
const spaceMark = "\u2581"

// symbol is one piece of text under construction, linked to its neighbours. Merged
// symbols keep the index of their left part; the right part is emptied (n = 0).
type symbol struct {
	start, n   int32 // byte range in the text being encoded (texts are cut below 2 GiB; see maxMergeBytes)
	prev, next int32 // neighbour indices, -1 at the ends
}

// bigram is a candidate merge of the symbol at index left with its right neighbour.
// key orders the queue (larger first): its high 32 bits hold the merge priority (SPM:
// the merged piece's score; GPT-2: the merge rank, lower first), its low 32 bits the
// complement of left, so that among equal priorities the leftmost pair comes first.
// size is the byte length of the merged text when the bigram was made; see stale.
type bigram struct {
	key  uint64
	size int32
}

// left returns the index of the bigram's left symbol.
func (b bigram) left() int32 { return int32(^uint32(b.key)) }

// scoreKey is the key of a bigram at left whose merged piece has score s.
func scoreKey(s float32, left int32) uint64 {
	if s == 0 {
		s = 0 // −0 and +0 tie
	}
	u := math.Float32bits(s)
	if u&(1<<31) != 0 {
		u = ^u
	} else {
		u |= 1 << 31
	}
	return uint64(u)<<32 | uint64(^uint32(left))
}

// rankKey is the key of a bigram at left whose merge rule has the given rank.
func rankKey(rank, left int32) uint64 {
	return uint64(^uint32(rank))<<32 | uint64(^uint32(left))
}

// bigramQueue is a binary max-heap of bigrams by key.
type bigramQueue []bigram

func (q *bigramQueue) push(b bigram) {
	h := append(*q, b)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].key >= b.key {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = b
	*q = h
}

func (q *bigramQueue) pop() bigram {
	h := *q
	top := h[0]
	last := len(h) - 1
	x := h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].key > h[l].key {
			m = r
		}
		if x.key >= h[m].key {
			break
		}
		h[i] = h[m]
		i = m
	}
	if i < len(h) {
		h[i] = x
	}
	*q = h
	return top
}

// splitChars splits s into one symbol per UTF-8 character, linked in order. An invalid
// byte is a symbol of its own. It allocates at most once, exactly what s needs (16
// bytes a character), when syms cannot hold it.
func splitChars(syms []symbol, s string) []symbol {
	if n := utf8.RuneCountInString(s); cap(syms) < n {
		syms = make([]symbol, 0, n)
	}
	syms = syms[:0]
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		k := int32(len(syms))
		syms = append(syms, symbol{start: int32(i), n: int32(n), prev: k - 1, next: k + 1})
		i += n
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// stale reports whether b no longer describes two adjacent live symbols of the sizes
// it was made with. Symbols only grow, and a symbol merged into its left neighbour
// becomes empty, so the pair is unchanged exactly when its left symbol is live and
// the left symbol and its current right neighbour still add up to b.size bytes.
func stale(syms []symbol, b bigram) bool {
	l := &syms[b.left()]
	return l.n == 0 || l.next < 0 || l.n+syms[l.next].n != b.size
}

// merge joins the right neighbour of symbol left into it.
func merge(syms []symbol, left int32) {
	l := &syms[left]
	r := &syms[l.next]
	l.n += r.n
	r.n = 0
	l.next = r.next
	if r.next >= 0 {
		syms[r.next].prev = left
	}
}

// encodeSPM appends the SentencePiece BPE encoding of text (already space-prefixed if
// the vocabulary asks for it) to out.
//
// When no piece of the vocabulary contains a ▁ right after another character
// (t.splitWords, true of SentencePiece vocabularies), no merge can join a character
// to a following ▁ that does not itself follow a ▁. The text is then cut before each
// such ▁ and the parts are merged independently; the result equals merging the whole
// text at once, because every merge candidate lies within one part and each part's
// candidates are unaffected by merges in the others. Small parts keep the merge queue
// small and in cache.
func (t *Tokenizer) encodeSPM(out []int32, text string) []int32 {
	s := strings.ReplaceAll(text, " ", spaceMark)
	var sc spmScratch
	if !t.splitWords {
		return t.mergeLong(out, s, &sc)
	}
	start := 0
	for i := 1; i < len(s); {
		k := strings.Index(s[i:], spaceMark)
		if k < 0 {
			break
		}
		i += k
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); r != '\u2581' {
			out = t.mergeLong(out, s[start:i], &sc)
			start = i
		}
		i += len(spaceMark)
	}
	return t.mergeLong(out, s[start:], &sc)
}

// spmScratch holds buffers reused across the parts of one encoding.
type spmScratch struct {
	syms []symbol
	q    bigramQueue
}

// mergeLong merges s, cut into parts of at most maxMergeBytes.
func (t *Tokenizer) mergeLong(out []int32, s string, sc *spmScratch) []int32 {
	for len(s) > maxMergeBytes {
		k := cutAt(s, maxMergeBytes)
		out = t.mergeSPM(out, s[:k], sc)
		s = s[k:]
	}
	return t.mergeSPM(out, s, sc)
}

// maxMergeBytes bounds the text that one run of the merge loop handles, so that symbol
// indices and sizes fit in 32 bits. Longer texts (over a gigabyte) are merged in
// pieces cut at character boundaries; no merge crosses a cut. A variable for tests.
var maxMergeBytes = 1 << 30

// cutAt returns the largest character boundary of s in (0, n], or n if there is none
// (s[:n] is all continuation bytes).
func cutAt(s string, n int) int {
	for k := n; k > n-utf8.UTFMax && k > 0; k-- {
		if utf8.RuneStart(s[k]) {
			return k
		}
	}
	return n
}

// mergeSPM appends the SentencePiece BPE encoding of s, in which spaces are already ▁.
func (t *Tokenizer) mergeSPM(out []int32, s string, sc *spmScratch) []int32 {
	syms := splitChars(sc.syms, s)
	q := sc.q[:0]
	if cap(q) < 2*len(syms) {
		// Each pair is queued once, and each merge queues at most two more: room for
		// 2n up front spares the queue most of its regrowth (a 4 MiB run without
		// spaces: 419 → 215 MB allocated).
		q = make(bigramQueue, 0, 2*len(syms))
	}
	defer func() { sc.syms, sc.q = syms, q }()
	tryAdd := func(left, right int32) {
		if left < 0 || right < 0 {
			return
		}
		l, r := syms[left], syms[right]
		id, ok := t.lookup.get(&t.pieces, s[l.start:l.start+l.n+r.n])
		if !ok {
			return
		}
		q.push(bigram{key: scoreKey(t.scores[id], left), size: l.n + r.n})
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(int32(i-1), int32(i))
	}
	for len(q) > 0 {
		b := q.pop()
		if stale(syms, b) {
			continue
		}
		left := b.left()
		merge(syms, left)
		tryAdd(syms[left].prev, left)
		tryAdd(left, syms[left].next)
	}
	for i := int32(0); i >= 0 && int(i) < len(syms); i = syms[i].next {
		sym := syms[i]
		out = t.appendPiece(out, s[sym.start:sym.start+sym.n])
	}
	return out
}

// appendPiece appends the id of piece p, or its byte tokens when p is not a piece and
// every byte has one, or else UNK (nothing if the vocabulary has no UNK).
func (t *Tokenizer) appendPiece(out []int32, p string) []int32 {
	if id, ok := t.lookup.get(&t.pieces, p); ok {
		return append(out, id)
	}
	for i := 0; i < len(p); i++ {
		if t.byteTok[p[i]] < 0 {
			if t.unk >= 0 {
				out = append(out, t.unk)
			}
			return out
		}
	}
	for i := 0; i < len(p); i++ {
		out = append(out, t.byteTok[p[i]])
	}
	return out
}
