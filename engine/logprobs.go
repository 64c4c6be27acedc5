package engine

import (
	"slices"

	"kvq/model"
)

// MaxTopLogprobs is the largest Request.TopLogprobs accepted.
const MaxTopLogprobs = 20

// TokenLogprob is one token and its log-probability.
type TokenLogprob struct {
	Token   int32
	Logprob float32
}

// Logprob is the log-probability of one token under the model at its position, with
// the most likely tokens there. Log-probabilities are the log-softmax of the model's
// logits, before any sampling option (temperature, penalties, bias, top-k/p).
type Logprob struct {
	Token   int32
	Logprob float32
	Top     []TokenLogprob // the TopLogprobs most likely tokens, most likely first (ties: lower id)
}

// logprobOf computes the log-softmax of logits at token t and the top n tokens,
// in float64 for the normalizer.
func logprobOf(logits []float32, t int32, n int) Logprob {
	lse := model.LogSumExp(logits)
	lp := Logprob{Token: t, Logprob: float32(float64(logits[t]) - lse)}
	if n <= 0 {
		return lp
	}
	// The n largest by a bounded insertion (n ≤ MaxTopLogprobs).
	top := make([]int32, 0, n+1)
	better := func(a, b int32) bool { return logits[a] > logits[b] || logits[a] == logits[b] && a < b }
	for i := range logits {
		id := int32(i)
		if len(top) == n && !better(id, top[n-1]) {
			continue
		}
		j, _ := slices.BinarySearchFunc(top, id, func(x, y int32) int {
			if better(x, y) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, j, id)
		if len(top) > n {
			top = top[:n]
		}
	}
	lp.Top = make([]TokenLogprob, len(top))
	for i, id := range top {
		lp.Top[i] = TokenLogprob{Token: id, Logprob: float32(float64(logits[id]) - lse)}
	}
	return lp
}

// wantsPromptLogprobs reports whether r still needs logits of prompt positions.
func (r *request) wantsPromptLogprobs() bool {
	return r.req.PromptLogprobs && len(r.promptLP) < len(r.prompt)-1
}

// allLogits reports whether the span's step needs the logits of all its tokens:
// its choice computes prompt positions whose log-probabilities are still wanted.
// step and apply ask it of the same state (nothing changes between them).
func (p span) allLogits() bool {
	return p.r.wantsPromptLogprobs() && p.c.fed < len(p.r.prompt)-1
}

// takePromptLogits records the prompt log-probabilities that the logits of the n
// tokens at positions [pos, pos+n) give (vocab values per token): the row of
// position p predicts prompt token p+1. Rows already recorded (a recomputation after
// preemption) are skipped.
func (r *request) takePromptLogits(logits []float32, pos, n, vocab int) {
	for j := range n {
		p := pos + j
		if p != len(r.promptLP) || p+1 >= len(r.prompt) {
			continue
		}
		r.promptLP = append(r.promptLP, logprobOf(logits[j*vocab:(j+1)*vocab], r.prompt[p+1], r.req.TopLogprobs))
	}
}
