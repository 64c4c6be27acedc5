package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"kvq/model"
)

// TestLogprobs: prompt and generated tokens' log-probabilities equal the log-softmax
// of the logits of a direct forward pass over an f32 cache (within 1e-4), top
// alternatives come most likely first and include the greedy token, and they hold
// when the prompt was cached by an earlier request (prompt logprobs turn reuse off)
// and with a small prefill chunk (the prompt's logits come from several steps).
func TestLogprobs(t *testing.T) {
	m := loadModel(t)
	prompt := m.Tok.Encode("Lily and Tom went to the park. They saw a big", true)
	const maxNew = 6
	// Reference: the whole sequence at once, all logits.
	gen := solo(t, m, "f32", prompt, maxNew, model.SamplerConfig{})
	all := append(append([]int32(nil), prompt...), gen...)
	c := newCache(t, m, "f32", 0)
	seq, _ := c.NewSeq()
	out, err := m.Forward(c, []model.Span{{Seq: seq, Tokens: all, AllLogits: true}})
	if err != nil {
		t.Fatal(err)
	}
	refLogits := slices.Clone(out[0]) // out is the model's buffer, reused by the engine
	V := m.Vocab
	ref := func(pos int) []float64 { // log-softmax of the row predicting position pos
		row := refLogits[(pos-1)*V : pos*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = max(mx, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - mx)
		}
		out := make([]float64, V)
		for i, v := range row {
			out[i] = float64(v) - mx - math.Log(s)
		}
		return out
	}
	for _, chunk := range []int{0, 5, 1} {
		e := newEngine(t, m, newCache(t, m, "f32", 0), Config{PrefillChunk: chunk, MaxBatchTokens: 64})
		// Run the prompt once first so that its blocks are cached.
		if st, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 1}); err == nil {
			st.Wait()
		}
		st, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: maxNew, Logprobs: true, TopLogprobs: 3, PromptLogprobs: true})
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		for ev := range st.Events() {
			evs = append(evs, ev)
		}
		res, err := st.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.PromptLogprobs) != len(prompt)-1 {
			t.Fatalf("chunk %d: %d prompt logprobs for %d prompt tokens", chunk, len(res.PromptLogprobs), len(prompt))
		}
		check := func(what string, pos int, lp Logprob) {
			r := ref(pos)
			if lp.Token != all[pos] || math.Abs(float64(lp.Logprob)-r[all[pos]]) > 1e-4 {
				t.Errorf("chunk %d %s position %d: token %d logprob %v, want token %d logprob %v", chunk, what, pos, lp.Token, lp.Logprob, all[pos], r[all[pos]])
			}
			if len(lp.Top) != 3 {
				t.Fatalf("%s position %d: %d top logprobs, want 3", what, pos, len(lp.Top))
			}
			for i, tl := range lp.Top {
				if math.Abs(float64(tl.Logprob)-r[tl.Token]) > 1e-4 || i > 0 && tl.Logprob > lp.Top[i-1].Logprob {
					t.Errorf("%s position %d: top %d is %+v (reference %v)", what, pos, i, tl, r[tl.Token])
				}
			}
			if lp.Top[0].Token != int32(argmax(r)) {
				t.Errorf("%s position %d: top token %d, argmax %d", what, pos, lp.Top[0].Token, argmax(r))
			}
		}
		for i, lp := range res.PromptLogprobs {
			check("prompt", i+1, lp)
		}
		n := 0
		for _, ev := range evs {
			if ev.Logprob == nil {
				t.Fatalf("event without logprob: %+v", ev)
			}
			if pos := len(prompt) + n; pos < len(all) {
				check("generated", pos, *ev.Logprob)
			}
			n++
		}
		if n < len(gen) {
			t.Errorf("%d events for %d generated tokens", n, len(gen))
		}
		if res.Usage.CachedPromptTokens != 0 {
			t.Errorf("prompt logprobs with %d cached prompt tokens", res.Usage.CachedPromptTokens)
		}
	}
}

func argmax(x []float64) int {
	b := 0
	for i, v := range x {
		if v > x[b] {
			b = i
		}
	}
	return b
}
