package tokenizer

import "unicode/utf8"

// StreamDecoder turns ids into text one at a time, for printing tokens as a model
// produces them. Byte-fallback tokens may carry part of a UTF-8 character; the decoder
// holds such bytes back until the character is complete, so each Write returns only
// whole characters. Bytes that can no longer become a valid character are passed on
// unchanged. The concatenation of all Write results followed by Flush equals Decode of
// the same ids. A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte // bytes of an incomplete UTF-8 character, at most 3
	prev    int32  // the previous id, -1 at the start
}

// NewStreamDecoder returns a decoder at the start of a sequence. Like Decode, it drops
// the dummy leading space of a piece that follows BOS; a decoder fed only the tokens
// generated after a prompt therefore keeps the space of the first one.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t, prev: -1}
}

// Write adds token id and returns the text that is now complete: possibly "", possibly
// text held back from earlier tokens. Control tokens and ids out of range add nothing.
func (d *StreamDecoder) Write(id int32) string {
	s := d.t.afterPrev(d.prev, id)
	d.prev = id
	if s == "" {
		return ""
	}
	buf := append(d.pending, s...)
	i := 0
	for i < len(buf) && utf8.FullRune(buf[i:]) {
		_, n := utf8.DecodeRune(buf[i:])
		i += n
	}
	out := string(buf[:i])
	d.pending = append(d.pending[:0], buf[i:]...)
	return out
}

// Flush returns the bytes held back (an incomplete character at the end of the
// stream) and empties the decoder's buffer; later Writes continue the same sequence.
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}
