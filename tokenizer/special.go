package tokenizer

import (
	"slices"
	"strings"
)

// special is a token matched whole in text: its text and id.
type special struct {
	text string
	id   int32
}

// sortSpecials orders specials longest first (then by id), the order in which partition
// prefers them at one position.
func sortSpecials(s []special) {
	slices.SortStableFunc(s, func(a, b special) int {
		if len(a.text) != len(b.text) {
			return len(b.text) - len(a.text)
		}
		return int(a.id) - int(b.id)
	})
}

// mergeSpecials returns the union of two lists, longest first.
func mergeSpecials(a, b []special) []special {
	m := append(slices.Clone(a), b...)
	sortSpecials(m)
	return m
}

// partition calls emit, in order, for the parts of text: each occurrence of a special
// token's text as (text, id), and the text between them as (text, -1); text parts are
// never empty. At each position the earliest occurrence wins, and among occurrences at
// the same position the first in specials (the longest). An occurrence of specials[i]
// at byte at counts only if allow(i, at) (nil allows every one). It runs in
// O(len(text) · len(specials)) time: each special's next occurrence is searched only
// after the previous one has been passed.
func partition(text string, specials []special, allow func(i, at int) bool, emit func(string, int32)) {
	next := make([]int, len(specials)) // next occurrence at or after pos, -1 if none; -2 unknown
	for i := range next {
		next[i] = -2
	}
	pos := 0
	for pos < len(text) {
		best, bestAt := -1, len(text)
		for i, s := range specials {
			if next[i] == -1 {
				continue
			}
			for from := pos; next[i] < pos; {
				k := strings.Index(text[from:], s.text)
				if k < 0 {
					next[i] = -1
					break
				}
				if allow == nil || allow(i, from+k) {
					next[i] = from + k
					break
				}
				from += k + 1
			}
			if next[i] >= 0 && next[i] < bestAt { // ties keep the earlier (longer) special
				best, bestAt = i, next[i]
			}
		}
		if best < 0 {
			emit(text[pos:], -1)
			return
		}
		if bestAt > pos {
			emit(text[pos:bestAt], -1)
		}
		emit(specials[best].text, specials[best].id)
		pos = bestAt + len(specials[best].text)
	}
}
