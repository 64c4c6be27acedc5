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
	started bool   // some text has been produced (the leading space is handled)
}

// NewStreamDecoder returns a decoder at the start of a sequence: like Decode, it drops
// the dummy leading space of the first text when the vocabulary adds one.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t}
}

// Write adds token id and returns the text that is now complete: possibly "", possibly
// text held back from earlier tokens. Control tokens and ids out of range add nothing.
func (d *StreamDecoder) Write(id int32) string {
	s := d.t.Piece(id)
	if s == "" {
		return ""
	}
	if !d.started {
		d.started = true
		if d.t.prefix && s[0] == ' ' {
			s = s[1:]
		}
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
