package engine

import "bytes"

// stopper accumulates a choice's text and decides what may be streamed: text that
// could still be the beginning of a stop string is held back until later text shows
// it is not (or completes the stop string, which ends the choice). Its work per
// piece is bounded by the piece and the held-back text, never by the text so far:
// the text grows by appending (amortised), and only the unstreamed end is searched.
type stopper struct {
	stops   []string
	buf     []byte // all text so far
	emitted int    // bytes of buf already streamed
	stopped bool
}

// text is the choice's text so far (cut before a completed stop string).
func (st *stopper) text() string { return string(st.buf) }

// add appends s and returns the text now safe to stream, and whether a stop string
// was completed (the choice's text is then cut before it and nothing more is added).
func (st *stopper) add(s string) (out string, stopped bool) {
	if st.stopped {
		return "", true
	}
	st.buf = append(st.buf, s...)
	pending := st.buf[st.emitted:]
	// Earliest complete stop string in the unstreamed text. Streamed text never holds
	// the start of a match: that start would have been held back.
	cut := -1
	for _, stop := range st.stops {
		if i := bytes.Index(pending, []byte(stop)); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out = string(pending[:cut])
		st.buf = st.buf[:st.emitted+cut]
		st.emitted, st.stopped = len(st.buf), true
		return out, true
	}
	end := len(pending) - st.held(pending)
	out = string(pending[:end])
	st.emitted += end
	return out, false
}

// held is the length of the longest suffix of the unstreamed text pending that is a
// proper prefix of some stop string.
func (st *stopper) held(pending []byte) int {
	best := 0
	for _, stop := range st.stops {
		for n := min(len(stop)-1, len(pending)); n > best; n-- {
			if string(pending[len(pending)-n:]) == stop[:n] {
				best = n
				break
			}
		}
	}
	return best
}

// flush returns the held-back text when the choice ends for another reason.
func (st *stopper) flush() string {
	out := string(st.buf[st.emitted:])
	st.emitted = len(st.buf)
	return out
}
