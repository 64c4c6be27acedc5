package engine

import (
	"context"
	"slices"
	"testing"

	"kvq/kv"
	"kvq/model"
)

func TestSlidingWindowPastContext(t *testing.T) {
	ref := loadModel(t)
	prompt := ref.Tok.Encode("Once upon a time", true)
	const sinks, window = 4, 64
	// Before the first eviction the sequence is what a plain run computes.
	before := sinks + window - len(prompt)
	want := solo(t, ref, "q8", prompt, before, model.SamplerConfig{})
	m := loadModel(t)
	c := newCache(t, m, "q8", 0)
	var peak int64
	var peakTokens int
	e := newEngine(t, m, c, Config{Window: window, Sinks: sinks, OnStep: func(si StepInfo) {
		peak = max(peak, si.Cache.AllocBytes)
		peakTokens = max(peakTokens, si.Cache.Tokens)
	}})
	n := m.Ctx + 200 // past the trained context
	s, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: n, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	got := res.Choices[0]
	if len(got.Tokens) != n || got.FinishReason != FinishLength {
		t.Fatalf("%d tokens, finish %q; want %d and %q", len(got.Tokens), got.FinishReason, n, FinishLength)
	}
	if !slices.Equal(got.Tokens[:len(want)], want) {
		t.Errorf("tokens before the first eviction differ:\n%v\nwant %v", got.Tokens[:len(want)], want)
	}
	// Memory stays bounded: at most sinks + window + one step's token held, in
	// blocks (partly filled blocks at both ends of the gap).
	st := c.(*kv.Store)
	B := int64(st.PoolStats().BlockTokens)
	bound := ((sinks+window+1)/B + 3) * int64(st.BlockBytes())
	if peak > bound || peakTokens > sinks+window+1 {
		t.Errorf("peak %d bytes for %d tokens held, bound %d bytes for %d tokens", peak, peakTokens, bound, sinks+window+1)
	}
	// Without a window the same request is refused.
	e2 := newEngine(t, m, newCache(t, m, "q8", 0), Config{})
	if _, err := e2.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: n}); err == nil {
		t.Error("request past the context accepted without a window")
	}
	if _, err := New(m, plainCache{c}, Config{Window: 8}); err == nil {
		t.Error("window accepted on a cache that cannot evict")
	}
}
