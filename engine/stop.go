package engine

import "strings"

// stopper accumulates a choice's text and decides what may be streamed: text that
// could still be the beginning of a stop string is held back until later text shows
// it is not (or completes the stop string, which ends the choice).
type stopper struct {
	stops   []string
	text    string // all text so far
	emitted int    // bytes of text already streamed
	stopped bool
}

// add appends s and returns the text now safe to stream, and whether a stop string
// was completed (the choice's text is then cut before it and nothing more is added).
func (st *stopper) add(s string) (out string, stopped bool) {
	if st.stopped {
		return "", true
	}
	st.text += s
	// Earliest complete stop string in the unstreamed text. Streamed text never holds
	// the start of a match: that start would have been held back.
	cut := -1
	for _, stop := range st.stops {
		if i := strings.Index(st.text[st.emitted:], stop); i >= 0 && (cut < 0 || st.emitted+i < cut) {
			cut = st.emitted + i
		}
	}
	if cut >= 0 {
		out = st.text[st.emitted:cut]
		st.text, st.emitted, st.stopped = st.text[:cut], cut, true
		return out, true
	}
	end := len(st.text) - st.held()
	out = st.text[st.emitted:end]
	st.emitted = end
	return out, false
}

// held is the length of the longest suffix of the unstreamed text that is a proper
// prefix of some stop string.
func (st *stopper) held() int {
	pending := st.text[st.emitted:]
	best := 0
	for _, stop := range st.stops {
		for n := min(len(stop)-1, len(pending)); n > best; n-- {
			if strings.HasSuffix(pending, stop[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// flush returns the held-back text when the choice ends for another reason.
func (st *stopper) flush() string {
	out := st.text[st.emitted:]
	st.emitted = len(st.text)
	return out
}
