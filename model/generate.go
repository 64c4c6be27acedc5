package model

import (
	"fmt"

	"kvq/kv"
)

// Generate feeds prompt to seq in one prefill step, then samples up to maxNew tokens one
// decode step at a time. onToken, if not nil, receives each generated token as soon as
// it is drawn and may return false to stop. Generation also stops at an end-of-generation
// token (EOS or an end-of-turn token; it is returned but not passed on) and before the
// sequence would exceed the trained context. It returns the generated tokens.
func (m *Model) Generate(c kv.Cache, seq kv.SeqID, prompt []int32, maxNew int, s *Sampler, onToken func(int32) bool) ([]int32, error) {
	if len(prompt) == 0 {
		return nil, fmt.Errorf("model: empty prompt")
	}
	if have := c.Len(seq) + len(prompt); have > m.Ctx {
		return nil, fmt.Errorf("model: prompt of %d tokens does not fit the context of %d tokens", have, m.Ctx)
	}
	history := append([]int32(nil), prompt...)
	logits, err := m.Forward(c, []Span{{Seq: seq, Tokens: prompt}})
	if err != nil {
		return nil, err
	}
	var out []int32
	for len(out) < maxNew {
		t := s.Sample(logits[0], history)
		out = append(out, t)
		history = append(history, t)
		if m.Tok.IsEOG(t) {
			break
		}
		if onToken != nil && !onToken(t) {
			break
		}
		if len(out) == maxNew || c.Len(seq) >= m.Ctx {
			break
		}
		if logits, err = m.Forward(c, []Span{{Seq: seq, Tokens: []int32{t}}}); err != nil {
			return out, err
		}
	}
	return out, nil
}
