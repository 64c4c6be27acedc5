package model

import (
	"kvq/linalg"
	"math"
	"math/rand/v2"
	"slices"
)

// SamplerConfig chooses how the next token is drawn from logits.
type SamplerConfig struct {
	Temp          float32 // ≤ 0 means greedy (argmax)
	TopK          int     // keep the K most likely tokens; ≤ 0 keeps all
	TopP          float32 // keep the smallest set whose probability reaches P; ≤ 0 or ≥ 1 keeps all
	RepeatPenalty float32 // > 1 discourages tokens seen in the last RepeatLastN; ≤ 1 disables
	RepeatLastN   int     // history window for the penalty; ≤ 0 means 64
	Seed          uint64  // fixed seed: the same seed and logits give the same tokens

	// OpenAI's penalties, over the tokens this Sampler has drawn (not the prompt):
	// a token's logit is lowered by PresencePenalty once it was drawn and by
	// FrequencyPenalty times the number of times it was drawn. 0 disables; negative
	// values encourage repetition.
	PresencePenalty, FrequencyPenalty float32
	// LogitBias is added to the logits of the tokens it names before any other step
	// (greedy included); −100 or less bans a token, as in OpenAI's API.
	LogitBias map[int32]float32
	// MinP keeps only tokens whose probability (after temperature) is at least MinP
	// times the most likely token's; ≤ 0 keeps all.
	MinP float32
}

// Sampler draws tokens. It is not safe for concurrent use.
type Sampler struct {
	cfg    SamplerConfig
	rng    *rand.Rand
	work   []float32
	idx    []int32
	counts map[int32]int // tokens drawn, when a presence or frequency penalty is set
}

// NewSampler returns a sampler seeded from cfg.Seed.
func NewSampler(cfg SamplerConfig) *Sampler {
	if cfg.RepeatLastN <= 0 {
		cfg.RepeatLastN = 64
	}
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6b7671))}
}

// Argmax returns the index of the largest logit (the lowest index among ties; a NaN
// is never larger, and a NaN at index 0 is returned as it is never exceeded):
// linalg.Argmax, SIMD where the CPU has it.
func Argmax(logits []float32) int32 { return int32(linalg.Argmax(logits)) }

// Sample draws the next token from logits given the tokens so far (for the
// repetition penalty). logits is not modified.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	t := s.sample(logits, history)
	if s.cfg.PresencePenalty != 0 || s.cfg.FrequencyPenalty != 0 {
		if s.counts == nil {
			s.counts = map[int32]int{}
		}
		s.counts[t]++
	}
	return t
}

// adjusted returns logits after the logit bias and the presence and frequency
// penalties, in s.work (copied true), or logits itself when none applies.
func (s *Sampler) adjusted(logits []float32) (l []float32, copied bool) {
	if len(s.cfg.LogitBias) == 0 && len(s.counts) == 0 {
		return logits, false
	}
	s.work = append(s.work[:0], logits...)
	l = s.work
	for t, b := range s.cfg.LogitBias {
		if t >= 0 && int(t) < len(l) {
			if b <= -100 {
				l[t] = float32(math.Inf(-1))
			} else {
				l[t] += b
			}
		}
	}
	for t, n := range s.counts {
		if int(t) < len(l) {
			l[t] -= s.cfg.PresencePenalty + s.cfg.FrequencyPenalty*float32(n)
		}
	}
	return l, true
}

func (s *Sampler) sample(logits []float32, history []int32) int32 {
	l, copied := s.adjusted(logits)
	if s.cfg.RepeatPenalty > 1 && len(history) > 0 {
		if !copied {
			s.work = append(s.work[:0], l...)
			l = s.work
		}
		h := history[max(0, len(history)-s.cfg.RepeatLastN):]
		seen := map[int32]bool{}
		for _, t := range h {
			if t < 0 || int(t) >= len(l) || seen[t] {
				continue
			}
			seen[t] = true
			if l[t] > 0 {
				l[t] /= s.cfg.RepeatPenalty
			} else {
				l[t] *= s.cfg.RepeatPenalty
			}
		}
	}
	if s.cfg.Temp <= 0 {
		return Argmax(l)
	}

	// Candidates sorted by logit, descending (ties by id), cut by top-k.
	s.idx = s.idx[:0]
	for i := range l {
		s.idx = append(s.idx, int32(i))
	}
	slices.SortFunc(s.idx, func(a, b int32) int {
		switch {
		case l[a] > l[b]:
			return -1
		case l[a] < l[b]:
			return 1
		}
		return int(a - b)
	})
	cand := s.idx
	if k := s.cfg.TopK; k > 0 && k < len(cand) {
		cand = cand[:k]
	}
	// Softmax with temperature over the candidates.
	probs := make([]float64, len(cand))
	maxL := float64(l[cand[0]])
	var sum float64
	for i, t := range cand {
		p := math.Exp((float64(l[t]) - maxL) / float64(s.cfg.Temp))
		probs[i] = p
		sum += p
	}
	if mp := s.cfg.MinP; mp > 0 {
		// probs[0] is the largest (candidates are sorted); keep the prefix above the bar.
		keep := len(cand)
		for i := range probs {
			if probs[i] < float64(mp)*probs[0] {
				keep = i
				break
			}
		}
		cand, probs = cand[:keep], probs[:keep]
		sum = 0
		for _, q := range probs {
			sum += q
		}
	}
	if p := s.cfg.TopP; p > 0 && p < 1 {
		var cum float64
		for i := range cand {
			cum += probs[i] / sum
			if cum >= float64(p) {
				cand, probs = cand[:i+1], probs[:i+1]
				break
			}
		}
		sum = 0
		for _, q := range probs {
			sum += q
		}
	}
	r := s.rng.Float64() * sum
	for i, q := range probs {
		r -= q
		if r < 0 {
			return cand[i]
		}
	}
	return cand[len(cand)-1]
}
