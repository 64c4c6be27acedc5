package engine

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestReaderKeepsUpWithSteps: with a single P, the scheduler goroutine never blocks
// while a request runs, so a stream's reader (and the pump before it) could run
// only when the runtime preempts the scheduler. The engine yields after every step:
// each step's tokens reach the reader before the next step is done. The runtime's
// scheduler may still run the engine first now and then (its global queue is
// checked every 61st pass), so the test allows a few late deliveries, far below the
// nearly all steps late without the yield.
func TestReaderKeepsUpWithSteps(t *testing.T) {
	m := loadModel(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const gen = 64
	var (
		received       atomic.Int64
		sampled, steps int64
		late           int64
	)
	e := newEngine(t, m, newCache(t, m, "f16", 0), Config{OnStep: func(si StepInfo) {
		// On the scheduler goroutine, after step n's tokens were pushed: the
		// reader should hold every token of steps 1…n-1.
		if steps > 0 && received.Load() < sampled {
			late++
		}
		steps++
		sampled += int64(si.Sampled)
	}})
	s, err := e.Submit(context.Background(), Request{Prompt: m.Tok.Encode("Once upon a time", true), MaxTokens: gen, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for range s.Events() {
		received.Add(1)
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if received.Load() != gen {
		t.Fatalf("reader received %d events, want %d", received.Load(), gen)
	}
	// steps and late are final: the last OnStep ran before the stream finished.
	if late > steps/4 {
		t.Errorf("%d of %d steps ran before the reader had the previous step's token", late, steps)
	}
	t.Logf("%d of %d steps ran before the reader had the previous step's token", late, steps)
}
