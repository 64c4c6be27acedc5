package tokenizer

import (
	"fmt"
	"strings"
)

// byteRune maps each byte to the printable rune GPT-2's byte-level BPE spells it with
// (bytes_to_unicode in GPT-2's encoder.py): the printable Latin-1 bytes '!'..'~',
// '¡'..'¬' and '®'..'ÿ' stand for themselves, the other 68 bytes map in order to
// U+0100 onwards.
var byteRune [256]rune

// runeByte is the inverse of byteRune, indexed by rune (all mapped runes are < 0x144).
var runeByte [0x144]int16

func init() {
	for i := range runeByte {
		runeByte[i] = -1
	}
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE && b <= 0xFF:
			byteRune[b] = rune(b)
		default:
			byteRune[b] = next
			next++
		}
		runeByte[byteRune[b]] = int16(b)
	}
}

// mapBytes spells the bytes of s in the byte-level alphabet.
func mapBytes(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteRune[s[i]])
	}
	return b.String()
}

// unmapBytes turns a byte-level piece back into the bytes it stands for. Runes outside
// the byte-level alphabet (as in added tokens) are kept as their UTF-8 encoding.
func unmapBytes(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	for _, r := range p {
		if r >= 0 && int(r) < len(runeByte) && runeByte[r] >= 0 {
			b.WriteByte(byte(runeByte[r]))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// initGPT2 checks the merge rules and indexes them by their text "left right": a
// rule's rank is its index (the first of equal rules counts). Symbols being merged
// hold no space (the byte-level alphabet spells it Ġ), so the text of a pair names
// one rule exactly as the rule's own split at its first space would.
func (t *Tokenizer) initGPT2(merges []string) error {
	if len(merges) > 1<<31-1 {
		return fmt.Errorf("%w: %d merges do not fit int32 ranks", ErrInvalidVocab, len(merges))
	}
	for i, m := range merges {
		k := -1
		if len(m) > 1 {
			k = strings.IndexByte(m[1:], ' ')
		}
		if k < 0 || k+2 >= len(m) {
			return fmt.Errorf("%w: merge %d %q is not \"left right\"", ErrInvalidVocab, i, m)
		}
	}
	var err error
	if t.merges, err = newStrTable(merges); err != nil {
		return err
	}
	t.ranks = newStrIndex(len(merges))
	for i := range merges {
		t.ranks.add(&t.merges, int32(i))
	}
	return nil
}

// encodeGPT2 appends the byte-level BPE encoding of text to out: the text is split by
// the vocabulary's pre-tokenizer and each part is encoded on its own (a part that is a
// piece itself is taken whole when the pre-tokenizer ignores merges, as Llama 3 does).
func (t *Tokenizer) encodeGPT2(out []int32, text string) []int32 {
	var syms []symbol
	var q bigramQueue
	var key []byte // a merge rule's text "left right"
	var encodeWord func(word string)
	encodeWord = func(word string) {
		for len(word) > maxMergeBytes/2 { // mapped, a byte takes up to 2 bytes
			k := cutAt(word, maxMergeBytes/2)
			encodeWord(word[:k])
			word = word[k:]
		}
		s := mapBytes(word)
		if t.ignoreMerges {
			if id, ok := t.lookup.get(&t.pieces, s); ok {
				out = append(out, id)
				return
			}
		}
		syms = splitChars(syms, s)
		q = q[:0]
		tryAdd := func(left, right int32) {
			if left < 0 || right < 0 {
				return
			}
			l, r := syms[left], syms[right]
			key = append(append(append(key[:0], s[l.start:l.start+l.n]...), ' '), s[r.start:r.start+r.n]...)
			rank, ok := t.ranks.getBytes(&t.merges, key)
			if !ok {
				return
			}
			q.push(bigram{key: rankKey(rank, left), size: l.n + r.n})
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
			p := s[sym.start : sym.start+sym.n]
			if id, ok := t.lookup.get(&t.pieces, p); ok {
				out = append(out, id)
				continue
			}
			// Not a piece (merges without a result in the vocabulary): one token per
			// byte-level character, or UNK for characters without one.
			for _, r := range p {
				if id, ok := t.lookup.get(&t.pieces, string(r)); ok {
					out = append(out, id)
				} else if t.unk >= 0 {
					out = append(out, t.unk)
				}
			}
		}
	}
	split(text, t.pre, encodeWord)
	return out
}
