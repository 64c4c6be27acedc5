package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"kvq/model"
)

// TestMixedLoadSteps checks the scheduling decisions of a mixed load, step by step:
// request A decodes; a long prompt L arrives after A's first step and a short prompt
// S while L prefills. With a decode step budget, every step beside A's decoding
// holds at most DecodeStepTokens tokens (L prefills in chunks, A's inter-token
// latency stays one small step) and S starts and gets its first token in the step
// after it arrives, long before L's, even when its prompt is longer than the share
// every pending prefill gets first. Throughput first (DecodeStepTokens =
// LongPrefillTokens = MaxBatchTokens), L takes whole steps beside A and S waits
// behind it. Either way every request's tokens are those it generates alone.
func TestMixedLoadSteps(t *testing.T) {
	ref := loadModel(t)
	short := ref.Tok.Encode("Once upon a time", true)
	sPrompt := ref.Tok.Encode("The dog", true)
	long := slices.Clone(short)
	for len(long) < 150 {
		long = append(long, ref.Tok.Encode(" Lily and Tom went to the park. They saw a big dog.", false)...)
	}
	const aMax, lMax, sMax = 60, 3, 3
	want := map[string][]int32{
		"A": solo(t, ref, "f32", short, aMax, model.SamplerConfig{}),
		"L": solo(t, ref, "f32", long, lMax, model.SamplerConfig{}),
		"S": solo(t, ref, "f32", sPrompt, sMax, model.SamplerConfig{}),
	}
	const maxBatch, decodeStep = 64, 12
	for _, tc := range []struct {
		name string
		cfg  Config
		// bounded: steps beside decodes hold at most decodeStep tokens;
		// shortFirst: S's first token comes in the step after its arrival, before L's.
		bounded, shortFirst bool
	}{
		{"decode step budget", Config{MaxBatchTokens: maxBatch, DecodeStepTokens: decodeStep, LongPrefillTokens: len(sPrompt)}, true, true},
		// S's prompt is longer than its share: the budget left goes to the prompt with
		// the fewest tokens to go, S, before L.
		{"shortest first", Config{MaxBatchTokens: maxBatch, DecodeStepTokens: decodeStep, LongPrefillTokens: 1}, true, true},
		{"throughput first", Config{MaxBatchTokens: maxBatch, DecodeStepTokens: maxBatch, LongPrefillTokens: maxBatch}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t)
			var (
				e       *Engine
				steps   []StepInfo
				first   = map[string]int{} // index of the step that sampled each request's first token
				arrived = map[string]int{} // index of the first step that could take it in
				mu      sync.Mutex
				streams = map[string]*Stream{}
				errs    []error
			)
			submit := func(name string, prompt []int32, max int) {
				arrived[name] = len(steps)
				s, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: max, IgnoreEOS: true,
					OnToken: func(Event) {
						if _, ok := first[name]; !ok {
							first[name] = len(steps) // the step being applied
						}
					}})
				mu.Lock()
				defer mu.Unlock()
				streams[name] = s
				if err != nil {
					errs = append(errs, err)
				}
			}
			cfg := tc.cfg
			// OnStep runs on the scheduler goroutine: requests submitted there are
			// taken in by the next step, whatever the machine's timing.
			cfg.OnStep = func(si StepInfo) {
				steps = append(steps, si)
				switch {
				case len(steps) == 1:
					submit("L", long, lMax)
				case len(steps) == 2:
					submit("S", sPrompt, sMax)
				}
			}
			e = newEngine(t, m, newCache(t, m, "f32", 0), cfg)
			submit("A", short, aMax)
			// A outlives L and S: once it ends, both were submitted.
			if _, err := streams["A"].Wait(); err != nil {
				t.Fatalf("A: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) > 0 || len(streams) != 3 {
				t.Fatalf("submitted %d requests: %v", len(streams), errs)
			}
			for name, s := range streams {
				res, err := s.Wait()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got := res.Choices[0].Tokens; !slices.Equal(got, want[name]) {
					t.Errorf("%s: tokens %v, alone %v", name, got, want[name])
				}
			}
			// Steps 1 to L's first token: A decodes in each, beside L's prefill.
			bounded := true
			for i := 1; i <= first["L"]; i++ {
				si := steps[i]
				if si.DecodeTokens < 1 {
					t.Fatalf("step %d: A did not decode: %+v", i, si)
				}
				if n := si.DecodeTokens + si.PrefillTokens; n > decodeStep {
					bounded = false
				}
			}
			if bounded != tc.bounded {
				t.Errorf("steps beside decodes within %d tokens: %v, want %v", decodeStep, bounded, tc.bounded)
			}
			if tc.bounded {
				// L prefills in chunks of what A's decoding leaves.
				chunk := decodeStep - 1
				if n, min := first["L"]-arrived["L"]+1, (len(long)+chunk-1)/chunk; n < min {
					t.Errorf("L prefilled in %d steps, want ≥ %d", n, min)
				}
			}
			shortFirst := first["S"] == arrived["S"] && first["S"] < first["L"]
			if shortFirst != tc.shortFirst {
				t.Errorf("S arrived after step %d, first token in step %d (L's in step %d): short first %v, want %v",
					arrived["S"], first["S"], first["L"], shortFirst, tc.shortFirst)
			}
			if steps[0].PrefillTokens != len(short) {
				t.Errorf("step 1: %d prefill tokens, want A's prompt of %d", steps[0].PrefillTokens, len(short))
			}
		})
	}
}

// TestBulkSteps: a step from which no sequence gets a token (parts of a long prompt
// alone) takes MaxBatchTokens; once a short prompt shares it, the step keeps to
// DecodeStepTokens and the short prompt gets its first token from it. Tokens are
// those of each request alone.
func TestBulkSteps(t *testing.T) {
	m := loadModel(t)
	short := m.Tok.Encode("The dog", true)
	long := slices.Clone(short)
	for len(long) < 150 {
		long = append(long, m.Tok.Encode(" Lily and Tom went to the park.", false)...)
	}
	const maxBatch, decodeStep = 64, 12
	for _, tc := range []struct {
		name  string
		reqs  [][]int32
		steps []int // tokens of the first steps
	}{
		{"long alone", [][]int32{long}, []int{maxBatch, maxBatch, len(long) - 2*maxBatch, 1}},
		{"long and short", [][]int32{long, short}, []int{decodeStep, decodeStep}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []int
			e := newEngine(t, m, newCache(t, m, "f32", 0), Config{MaxBatchTokens: maxBatch, DecodeStepTokens: decodeStep,
				OnStep: func(si StepInfo) { steps = append(steps, si.DecodeTokens+si.PrefillTokens) }})
			reqs := make([]Request, len(tc.reqs))
			for i, p := range tc.reqs {
				reqs[i] = Request{Prompt: p, MaxTokens: 2, IgnoreEOS: true}
			}
			ss, err := e.SubmitBatch(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			var first []time.Duration
			for i, s := range ss {
				res, err := s.Wait()
				if err != nil {
					t.Fatal(err)
				}
				first = append(first, res.TimeToFirstToken)
				if want := solo(t, m, "f32", tc.reqs[i], 2, model.SamplerConfig{}); !slices.Equal(res.Choices[0].Tokens, want) {
					t.Errorf("request %d: tokens %v, alone %v", i, res.Choices[0].Tokens, want)
				}
			}
			if len(steps) < len(tc.steps) || !slices.Equal(steps[:len(tc.steps)], tc.steps) {
				t.Errorf("steps of %v tokens, want %v first", steps, tc.steps)
			}
			if len(first) == 2 && first[1] >= first[0] {
				t.Errorf("short prompt's first token after %v, the long one's after %v", first[1], first[0])
			}
		})
	}
}
