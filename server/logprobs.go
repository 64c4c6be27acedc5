package server

import (
	"unicode/utf8"

	"kvq/engine"
	"kvq/tokenizer"
)

// Log-probabilities in OpenAI's two shapes: the legacy one of /v1/completions
// (parallel arrays) and the one of /v1/chat/completions (one object per token).
// Log-probabilities are the model's own (log-softmax of its logits, before
// temperature, penalties and the other sampling options).

// completionLogprobs is the logprobs object of a /v1/completions choice. As with
// OpenAI, an entry's top_logprobs holds the logprobs most likely tokens and the
// token itself (so up to logprobs+1, and never empty when the token has a
// log-probability); text_offset is where the token's text starts in the choice's
// text, in characters (Unicode code points, as OpenAI counts them). The first
// prompt token (echo) has a null log-probability and an empty top_logprobs object
// where OpenAI has null: the official Go client drops the whole top_logprobs array
// when an entry in it is null.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// add appends one token's entry; lp nil for a token without a log-probability.
func (c *completionLogprobs) add(text string, lp *engine.Logprob, top int, tok *tokenizer.Tokenizer, offset int) {
	c.Tokens = append(c.Tokens, text)
	c.TextOffset = append(c.TextOffset, offset)
	m := map[string]float32{}
	if lp == nil {
		c.TokenLogprobs = append(c.TokenLogprobs, nil)
		c.TopLogprobs = append(c.TopLogprobs, m)
		return
	}
	v := lp.Logprob
	c.TokenLogprobs = append(c.TokenLogprobs, &v)
	if top > 0 {
		for _, t := range lp.Top {
			s := tok.Piece(t.Token)
			if t.Token == lp.Token {
				s = text // the token's own key is its text in context, as in tokens
			}
			if _, dup := m[s]; !dup { // two ids with one text: keep the likelier
				m[s] = t.Logprob
			}
		}
	}
	if _, dup := m[text]; !dup {
		m[text] = v
	}
	c.TopLogprobs = append(c.TopLogprobs, m)
}

// tokenLogprob is a generated token's log-probability with its text in context
// and the character offset of that text in the choice's text.
type tokenLogprob struct {
	lp     engine.Logprob
	text   string
	offset int
}

// choiceLogprobs follows a choice's generated tokens so that their
// log-probabilities are reported as the text they make is: a token is held while
// its text is held back (a possible stop string, incomplete UTF-8), and a token
// whose text starts past a stop string's cut is dropped with that text.
type choiceLogprobs struct {
	prev  int32          // the last token taken (for the next one's text in context)
	next  int            // byte offset in the choice's text where the next token's text starts
	held  []heldLogprob  // taken, not all of their text shown yet
	shown []tokenLogprob // released, in order
	chars charCount      // characters of the choice's text, counted up to the last released token
}

type heldLogprob struct {
	lp         engine.Logprob
	text       string
	start, end int // byte offsets of text in the choice's text
}

// take appends a generated token.
func (c *choiceLogprobs) take(tok *tokenizer.Tokenizer, lp engine.Logprob) {
	s := tokenText(tok, c.prev, lp.Token)
	c.held = append(c.held, heldLogprob{lp: lp, text: s, start: c.next, end: c.next + len(s)})
	c.next += len(s)
	c.prev = lp.Token
}

// release moves the held tokens whose text the choice's text so far now shows in
// full to shown, and returns them; at the choice's end (final), it releases also
// those whose text starts before the end of text and drops the rest.
func (c *choiceLogprobs) release(text string, final bool) []tokenLogprob {
	n := 0
	for n < len(c.held) && (c.held[n].end <= len(text) || final && c.held[n].start < len(text)) {
		h := c.held[n]
		c.shown = append(c.shown, tokenLogprob{lp: h.lp, text: h.text, offset: c.chars.at(text, h.start)})
		n++
	}
	out := c.shown[len(c.shown)-n:]
	c.held = c.held[n:]
	if final {
		c.held = nil
	}
	return out
}

// charCount counts the characters (UTF-8 sequence starts) of a growing text
// incrementally, for offsets that only move forward.
type charCount struct{ bytes, chars int }

// at returns the number of characters in s[:b] (b ≥ every earlier b).
func (cc *charCount) at(s string, b int) int {
	for ; cc.bytes < b; cc.bytes++ {
		if utf8.RuneStart(s[cc.bytes]) {
			cc.chars++
		}
	}
	return cc.chars
}

// chatLogprobsOut is the logprobs object of a chat choice.
type chatLogprobsOut struct {
	Content []chatTokenLogprob `json:"content"`
	Refusal []chatTokenLogprob `json:"refusal"`
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float32          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func byteList(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

func chatEntry(text string, lp *engine.Logprob, tok *tokenizer.Tokenizer) chatTokenLogprob {
	e := chatTokenLogprob{Token: text, Logprob: lp.Logprob, Bytes: byteList(text), TopLogprobs: []chatTopLogprob{}}
	for _, t := range lp.Top {
		s := tok.Piece(t.Token)
		e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: s, Logprob: t.Logprob, Bytes: byteList(s)})
	}
	return e
}

// tokenText is the text token id adds after token prev (prev < 0: none), as the
// tokenizer decodes it in context.
func tokenText(tok *tokenizer.Tokenizer, prev, id int32) string {
	if prev < 0 {
		return tok.Decode([]int32{id})
	}
	return tok.Decode([]int32{prev, id})[len(tok.Decode([]int32{prev})):]
}
