package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadersKeepUpWithSteps: with a single P, the scheduler goroutine never blocks
// while requests run, so the streams' readers (and their pumps) could run only when
// the runtime preempts the scheduler. The engine yields after every step: each
// step's tokens reach their readers before the next step is done, for one reader
// and for many (the runtime takes the yielding goroutine back from its global
// queue every 61st time it schedules, before the readers behind it). The runtime
// may still run the engine first now and then, so the test allows a few late
// steps, far below the nearly all steps late without the yield.
func TestReadersKeepUpWithSteps(t *testing.T) {
	m := loadModel(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const gen = 48
	for _, readers := range []int{1, 32} {
		t.Run(fmt.Sprintf("readers=%d", readers), func(t *testing.T) {
			var (
				received       atomic.Int64
				sampled, steps int64
				late           int64
			)
			e := newEngine(t, m, newCache(t, m, "f16", 0), Config{OnStep: func(si StepInfo) {
				// On the scheduler goroutine, after step n's tokens were pushed:
				// the readers should hold every token of steps 1…n-1.
				if steps > 0 && received.Load() < sampled {
					late++
				}
				steps++
				sampled += int64(si.Sampled)
			}})
			reqs := make([]Request, readers)
			for i := range reqs {
				reqs[i] = Request{Prompt: m.Tok.Encode(fmt.Sprintf("Once upon a time %d", i), true), MaxTokens: gen, IgnoreEOS: true}
			}
			ss, err := e.SubmitBatch(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, s := range ss {
				evs := s.Events()
				wg.Go(func() {
					for range evs {
						received.Add(1)
					}
				})
			}
			wg.Wait()
			for _, s := range ss {
				if _, err := s.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := received.Load(), int64(readers*gen); got != want {
				t.Fatalf("readers received %d events, want %d", got, want)
			}
			// steps and late are final: the last OnStep ran before the streams finished.
			report := t.Logf
			if late > steps/4 {
				report = t.Errorf
			}
			report("%d of %d steps ran before the readers had the previous step's tokens", late, steps)
		})
	}
}
