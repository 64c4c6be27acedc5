package server

import (
	"kvq/engine"
	"kvq/tokenizer"
)

// Log-probabilities in OpenAI's two shapes: the legacy one of /v1/completions
// (parallel arrays) and the one of /v1/chat/completions (one object per token).
// Log-probabilities are the model's own (log-softmax of its logits, before
// temperature, penalties and the other sampling options).

// completionLogprobs is the logprobs object of a /v1/completions choice. Entries
// for the first prompt token (echo) have a null log-probability and, like every
// entry without alternatives (logprobs 0), an empty top_logprobs object rather than
// null, which some clients (the official Go one) cannot read inside the array.
// text_offset is the byte offset of each token's text in the choice's text.
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
			if _, dup := m[s]; !dup { // two ids with one text: keep the likelier
				m[s] = t.Logprob
			}
		}
	}
	c.TopLogprobs = append(c.TopLogprobs, m)
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
