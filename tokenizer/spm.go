package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// spaceMark is SentencePiece's stand-in for a space, U+2581 LOWER ONE EIGHTH BLOCK.
const spaceMark = "\u2581"

// symbol is one piece of text under construction, linked to its neighbours. Merged
// symbols keep the index of their left part; the right part is emptied (n = 0).
type symbol struct {
	start, n   int   // byte range in the text being encoded
	prev, next int32 // neighbour indices, -1 at the ends
}

// bigram is a candidate merge of symbols left and right (left.next == right while it
// is valid). SPM orders by prio, the merged piece's score (higher first), with rank 0;
// GPT-2 orders by rank, the merge rule's index (lower first), with prio 0.
type bigram struct {
	left, right int32
	prio        float32
	rank        int32 // GPT-2: merge rank (lower first); SPM: 0
	size        int   // byte length of the merged text when the bigram was made
}

// before reports whether a is merged before b: higher priority, lower rank, then
// leftmost.
func (a *bigram) before(b *bigram) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.left < b.left
}

// bigramQueue is a binary heap of bigrams ordered by before.
type bigramQueue []bigram

func (q *bigramQueue) push(b bigram) {
	h := append(*q, b)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *bigramQueue) pop() bigram {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// splitChars splits s into one symbol per UTF-8 character, linked in order. An invalid
// byte is a symbol of its own.
func splitChars(syms []symbol, s string) []symbol {
	syms = syms[:0]
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		k := int32(len(syms))
		syms = append(syms, symbol{start: i, n: n, prev: k - 1, next: k + 1})
		i += n
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// stale reports whether b no longer describes two adjacent live symbols of the sizes
// it was made with.
func stale(syms []symbol, b *bigram) bool {
	l, r := &syms[b.left], &syms[b.right]
	return l.n == 0 || r.n == 0 || l.next != b.right || l.n+r.n != b.size
}

// merge joins symbol b.right into b.left.
func merge(syms []symbol, b *bigram) {
	l, r := &syms[b.left], &syms[b.right]
	l.n += r.n
	r.n = 0
	l.next = r.next
	if r.next >= 0 {
		syms[r.next].prev = b.left
	}
}

// encodeSPM appends the SentencePiece BPE encoding of text (already space-prefixed if
// the vocabulary asks for it) to out.
func (t *Tokenizer) encodeSPM(out []int32, text string) []int32 {
	s := strings.ReplaceAll(text, " ", spaceMark)
	syms := splitChars(make([]symbol, 0, len(s)), s)
	q := make(bigramQueue, 0, len(syms))
	tryAdd := func(left, right int32) {
		if left < 0 || right < 0 {
			return
		}
		l, r := syms[left], syms[right]
		id, ok := t.lookup[s[l.start:l.start+l.n+r.n]]
		if !ok {
			return
		}
		q.push(bigram{left: left, right: right, prio: t.scores[id], size: l.n + r.n})
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(int32(i-1), int32(i))
	}
	for len(q) > 0 {
		b := q.pop()
		if stale(syms, &b) {
			continue
		}
		merge(syms, &b)
		tryAdd(syms[b.left].prev, b.left)
		tryAdd(b.left, syms[b.left].next)
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
	if id, ok := t.lookup[p]; ok {
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
