package model

import (
	"slices"
	"testing"
)

func TestSampler(t *testing.T) {
	logits := []float32{1, 5, 3, 4.9, -2}
	tests := []struct {
		name    string
		cfg     SamplerConfig
		history []int32
		allowed map[int32]bool // every draw must be one of these
		want    int32          // when ≥ 0, every draw must equal it
	}{
		{"greedy", SamplerConfig{}, nil, nil, 1},
		{"greedy with penalty", SamplerConfig{RepeatPenalty: 2}, []int32{1}, nil, 3},
		{"top-k 1", SamplerConfig{Temp: 1, TopK: 1}, nil, nil, 1},
		{"top-k 2", SamplerConfig{Temp: 1, TopK: 2}, nil, map[int32]bool{1: true, 3: true}, -1},
		{"top-p small", SamplerConfig{Temp: 1, TopP: 0.1}, nil, nil, 1},
		{"top-p 0.9", SamplerConfig{Temp: 1, TopP: 0.9}, nil, map[int32]bool{1: true, 3: true, 2: true}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSampler(tc.cfg)
			seen := map[int32]int{}
			for range 2000 {
				got := s.Sample(logits, tc.history)
				seen[got]++
				if tc.want >= 0 && got != tc.want {
					t.Fatalf("drew %d, want %d", got, tc.want)
				}
				if tc.allowed != nil && !tc.allowed[got] {
					t.Fatalf("drew %d, not among %v", got, tc.allowed)
				}
			}
			if tc.allowed != nil && len(seen) < 2 {
				t.Fatalf("only drew %v from a distribution over %v", seen, tc.allowed)
			}
		})
	}
}

func TestSamplerSeedIsReproducible(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(i%7) * 0.3
	}
	draw := func(seed uint64) []int32 {
		s := NewSampler(SamplerConfig{Temp: 1.5, Seed: seed})
		var out []int32
		for range 50 {
			out = append(out, s.Sample(logits, out))
		}
		return out
	}
	if a, b := draw(7), draw(7); !slices.Equal(a, b) {
		t.Fatalf("same seed gave %v and %v", a, b)
	}
	if a, b := draw(7), draw(8); slices.Equal(a, b) {
		t.Fatalf("seeds 7 and 8 gave the same 50 draws %v", a)
	}
}

// TestSamplerOpenAIOptions: logit bias, presence and frequency penalties and min-p
// change the draw as OpenAI's API defines them.
func TestSamplerOpenAIOptions(t *testing.T) {
	logits := []float32{3, 2.5, 1, -1}
	// Bias: −100 bans the argmax; +5 makes token 3 the argmax.
	if got := NewSampler(SamplerConfig{LogitBias: map[int32]float32{0: -100}}).Sample(logits, nil); got != 1 {
		t.Errorf("greedy with token 0 banned: %d, want 1", got)
	}
	if got := NewSampler(SamplerConfig{LogitBias: map[int32]float32{3: 5}}).Sample(logits, nil); got != 3 {
		t.Errorf("greedy with token 3 biased by +5: %d, want 3", got)
	}
	// Presence penalty 1: token 0 (3 → 2 after its first draw) loses to token 1 (2.5).
	s := NewSampler(SamplerConfig{PresencePenalty: 1})
	if a, b := s.Sample(logits, nil), s.Sample(logits, nil); a != 0 || b != 1 {
		t.Errorf("presence penalty: %d then %d, want 0 then 1", a, b)
	}
	// Frequency penalty 0.3: token 0 stays ahead for one more draw (3 − 0.3 > 2.5),
	// then falls behind (3 − 0.6 < 2.5).
	s = NewSampler(SamplerConfig{FrequencyPenalty: 0.3})
	var got []int32
	for range 3 {
		got = append(got, s.Sample(logits, nil))
	}
	if want := []int32{0, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("frequency penalty: %v, want %v", got, want)
	}
	// Min-p 0.5 at temperature 1: p(1)/p(0) = e^−0.5 ≈ 0.61 stays, p(2)/p(0) = e^−2 goes.
	s = NewSampler(SamplerConfig{Temp: 1, MinP: 0.5, Seed: 7})
	seen := map[int32]int{}
	for range 2000 {
		seen[s.Sample(logits, nil)]++
	}
	if seen[2] != 0 || seen[3] != 0 || seen[0] == 0 || seen[1] == 0 {
		t.Errorf("min-p 0.5 drew %v, want only tokens 0 and 1", seen)
	}
	// Top-k 1 at temperature 1 is greedy.
	s = NewSampler(SamplerConfig{Temp: 1, TopK: 1, Seed: 3})
	for range 50 {
		if got := s.Sample(logits, nil); got != 0 {
			t.Fatalf("top-k 1 drew %d", got)
		}
	}
}
