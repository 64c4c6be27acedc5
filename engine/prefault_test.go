package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"kvq/kv"
	"kvq/model"
)

// tracedStore is a kv.Store that records, in order, the engine's Prefault calls and
// the Grow of each step, and the most time a Prefault call was given, and runs
// before (once) at the first Prefault.
type tracedStore struct {
	*kv.Store
	mu     sync.Mutex
	events []string
	spare  time.Duration
	before func()
}

func (s *tracedStore) log(ev string) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

func (s *tracedStore) Grow(id kv.SeqID, tokens []int32) error {
	s.log("grow")
	return s.Store.Grow(id, tokens)
}

func (s *tracedStore) Prefault(ready int64, d time.Duration) bool {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	s.log("prefault")
	s.mu.Lock()
	s.spare = max(s.spare, d)
	s.mu.Unlock()
	return s.Store.Prefault(ready, d)
}

func (s *tracedStore) trace() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// waitFor polls cond until it holds, failing after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("30 s without %s", what)
		}
	}
}

// TestPrefaultIdle: an idle engine makes free blocks up to Config.Prefault, reports
// it once, and makes no more; with a budget smaller than that, up to the budget's
// whole extents; with Prefault 0, nothing.
func TestPrefaultIdle(t *testing.T) {
	m := loadModel(t)
	probe := newCache(t, m, "f16", 0).(*kv.Store)
	block := int64(probe.BlockBytes())
	probe.Prefault(1, time.Hour) // one extent
	perExt := probe.PoolStats().BlocksMade
	ext := int64(perExt) * block
	for _, tc := range []struct {
		name             string
		budget, prefault int64
		wantBlocks       int
	}{
		{"up to Prefault", 0, 5*ext - block, 5 * perExt},
		{"up to the budget", 3*ext + block, 5 * ext, 3 * perExt},
		{"off", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, m, "f16", tc.budget).(*kv.Store)
			var mu sync.Mutex
			var reports []int64
			e := newEngine(t, m, c, Config{Prefault: tc.prefault, OnPrefault: func(n int64, _ time.Duration) {
				mu.Lock()
				reports = append(reports, n)
				mu.Unlock()
			}})
			if tc.wantBlocks > 0 {
				waitFor(t, "the report of prefaulting", func() bool { mu.Lock(); defer mu.Unlock(); return len(reports) > 0 })
			} else {
				// Nothing to wait for: run a request, whose end leaves the engine idle.
				s, err := e.Submit(context.Background(), Request{Prompt: m.Tok.Encode("Once upon a time", true), MaxTokens: 4})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Wait(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond) // idle: an engine that prefaults would have begun
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.Close(ctx); err != nil { // no more pieces: the figures are final
				t.Fatal(err)
			}
			ps, st := c.PoolStats(), e.Stats()
			if tc.wantBlocks > 0 && (ps.BlocksMade != tc.wantBlocks || ps.BlocksReady != tc.wantBlocks) {
				t.Errorf("made %d, ready %d blocks; want %d", ps.BlocksMade, ps.BlocksReady, tc.wantBlocks)
			}
			if tc.wantBlocks == 0 && ps.PrefaultBytes != 0 {
				t.Errorf("%d bytes prefaulted, want none", ps.PrefaultBytes)
			}
			if st.Pool != ps {
				t.Errorf("Stats().Pool %+v, cache's %+v", st.Pool, ps)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := int64(tc.wantBlocks) * block; tc.wantBlocks > 0 && (len(reports) != 1 || reports[0] != ps.PrefaultBytes || ps.PrefaultBytes < want) {
				t.Errorf("reports %v, PrefaultBytes %d; want one report of it, ≥ %d", reports, ps.PrefaultBytes, want)
			}
			if tc.wantBlocks == 0 && len(reports) != 0 {
				t.Errorf("reports %v with Prefault %d", reports, tc.prefault)
			}
			if u := c.Usage(); u.AllocBytes != 0 {
				t.Errorf("idle cache: AllocBytes %d", u.AllocBytes)
			}
		})
	}
}

// TestPrefaultYields: the engine prefaults a piece per call (no time to spare), so
// a request that arrives while it prefaults runs at the next step, with no prefault
// piece before its end, and gives the tokens it gives alone; prefaulting resumes
// when the engine is idle again, up to Prefault.
func TestPrefaultYields(t *testing.T) {
	m := loadModel(t)
	prompt := m.Tok.Encode("Lily and Tom went to the park. They saw a big", true)
	want := solo(t, m, "f16", prompt, 30, model.SamplerConfig{})
	c := &tracedStore{Store: newCache(t, m, "f16", 0).(*kv.Store)}
	const prefault = 4 << 20
	engine := make(chan *Engine, 1) // the first piece may begin before newEngine returns
	sc := make(chan *Stream, 1)
	c.before = func() { // on the scheduler goroutine, in the engine's first piece
		s, err := (<-engine).Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 30})
		if err != nil {
			t.Error(err)
		}
		sc <- s
	}
	done := make(chan struct{})
	engine <- newEngine(t, m, c, Config{Prefault: prefault, OnPrefault: func(int64, time.Duration) { close(done) }})
	s := <-sc
	if s == nil {
		t.FailNow()
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Tokens; !slices.Equal(got, want) {
		t.Errorf("tokens %v, alone %v", got, want)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("prefaulting did not finish 30 s after the request")
	}
	ev := c.trace()
	c.mu.Lock()
	spare := c.spare
	c.mu.Unlock()
	if spare != 0 {
		t.Errorf("Prefault given up to %v, want no time to spare (a piece per call)", spare)
	}
	first, lastGrow := slices.Index(ev, "grow"), -1
	for i, x := range ev {
		if x == "grow" {
			lastGrow = i
		}
	}
	if first != 1 || slices.Contains(ev[first:lastGrow], "prefault") {
		t.Errorf("events %v: want one prefault, then the request's steps with no prefault among them", ev)
	}
	t.Logf("events: %v", ev)
	if !slices.Contains(ev[lastGrow:], "prefault") {
		t.Errorf("events %v: no prefault after the request", ev)
	}
	if ps := c.PoolStats(); int64(ps.BlocksReady)*int64(ps.BlockBytes) < prefault {
		t.Errorf("after prefaulting: %d ready blocks of %d bytes, want ≥ %d bytes", ps.BlocksReady, ps.BlockBytes, prefault)
	}
}
