package model

import "testing"

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
	if a, b := draw(7), draw(7); !equal(a, b) {
		t.Fatalf("same seed gave %v and %v", a, b)
	}
	if a, b := draw(7), draw(8); equal(a, b) {
		t.Fatalf("seeds 7 and 8 gave the same 50 draws %v", a)
	}
}
