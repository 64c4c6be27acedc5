package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/kv"
	"kvq/model"
)

func loadModel(t testing.TB) *model.Model {
	t.Helper()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatalf("LoadDefault: %v", err)
	}
	return m
}

// testBlockTokens is the block size of the tests' caches: the tests' short prompts
// cross several blocks, and their budgets hold a few sequences of the small model.
// Some tests also run at kv.DefaultBlockTokens (newCacheBlocks).
const testBlockTokens = 16

func newCache(t testing.TB, m *model.Model, spec string, budget int64) kv.Cache {
	t.Helper()
	return newCacheBlocks(t, m, spec, budget, testBlockTokens)
}

// newCacheBlocks is newCache with blocks of the given number of tokens.
func newCacheBlocks(t testing.TB, m *model.Model, spec string, budget int64, blockTokens int) kv.Cache {
	t.Helper()
	cfg, err := m.CacheConfig(spec, "")
	if err != nil {
		t.Fatalf("CacheConfig(%q): %v", spec, err)
	}
	cfg.BudgetBytes = budget
	cfg.BlockTokens = blockTokens
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatalf("kv.New: %v", err)
	}
	return c
}

func newEngine(t testing.TB, m *model.Model, c kv.Cache, cfg Config) *Engine {
	t.Helper()
	e, err := New(m, c, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// solo runs one request alone with model.Generate on its own unlimited cache and
// returns the generated tokens without a final EOS.
func solo(t testing.TB, m *model.Model, spec string, prompt []int32, maxNew int, sc model.SamplerConfig) []int32 {
	t.Helper()
	c := newCache(t, m, spec, 0)
	seq, err := c.NewSeq()
	if err != nil {
		t.Fatalf("NewSeq: %v", err)
	}
	out, err := m.Generate(c, seq, prompt, maxNew, model.NewSampler(sc), nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(out) > 0 && out[len(out)-1] == m.Tok.EOS() {
		out = out[:len(out)-1]
	}
	return out
}

var prompts = []string{
	"Once upon a time",
	"The little dog",
	"Lily and Tom went to the park. They saw a big",
	"One day, a bird",
	"Sam had a red ball",
	"The sun was hot and the",
}

type job struct {
	prompt []int32
	max    int
}

func jobs(m *model.Model, maxes ...int) []job {
	js := make([]job, len(prompts))
	for i, p := range prompts {
		js[i] = job{m.Tok.Encode(p, true), maxes[i%len(maxes)]}
	}
	return js
}

// runConcurrently submits every job from its own goroutine and waits for all.
func runConcurrently(t *testing.T, e *Engine, js []job, mk func(job) Request) []Result {
	t.Helper()
	res := make([]Result, len(js))
	errs := make([]error, len(js))
	var wg sync.WaitGroup
	start := make(chan struct{}) // all goroutines submit at once
	for i, j := range js {
		wg.Go(func() {
			<-start
			s, err := e.Submit(context.Background(), mk(j))
			if err != nil {
				errs[i] = err
				return
			}
			res[i], errs[i] = s.Wait()
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return res
}

// runBatch submits every job in one SubmitBatch, so that the scheduler sees them all
// in its first step whatever the goroutines' timing, and waits for all.
func runBatch(t *testing.T, e *Engine, js []job, mk func(job) Request) []Result {
	t.Helper()
	reqs := make([]Request, len(js))
	for i, j := range js {
		reqs[i] = mk(j)
	}
	ss, err := e.SubmitBatch(context.Background(), reqs)
	if err != nil {
		t.Fatalf("SubmitBatch: %v", err)
	}
	res := make([]Result, len(js))
	for i, s := range ss {
		if res[i], err = s.Wait(); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return res
}

func greedy(j job) Request { return Request{Prompt: j.prompt, MaxTokens: j.max} }

func TestBatchedGreedyEqualsSolo(t *testing.T) {
	ref := loadModel(t)
	js := jobs(ref, 40, 7, 90, 1, 60, 25)
	want := make([][]int32, len(js))
	for i, j := range js {
		want[i] = solo(t, ref, "f32", j.prompt, j.max, model.SamplerConfig{})
	}
	wantBySpec := map[string][][]int32{"f32": want}
	for _, tc := range []struct {
		name   string
		spec   string
		cfg    Config
		blocks int // tokens per cache block; 0: testBlockTokens
	}{
		{"defaults", "f32", Config{}, 0},
		{"small steps", "f32", Config{MaxBatchTokens: 5, MaxRunning: 3}, 0},
		{"one at a time", "f32", Config{MaxRunning: 1}, 0},
		{"small steps beside decodes", "f32", Config{MaxBatchTokens: 32, DecodeStepTokens: 6, LongPrefillTokens: 2}, 0},
		{"kivi4/kivi2", "kivi4/kivi2:r=16", Config{MaxBatchTokens: 7}, 0},
		{"q8", "q8", Config{}, 0},
		{"prefaulted", "f32", Config{Prefault: 1 << 20}, 0},
		{"default blocks", "f32", Config{MaxBatchTokens: 5, MaxRunning: 3}, kv.DefaultBlockTokens},
		{"default blocks kivi4/kivi2", "kivi4/kivi2:r=16", Config{MaxBatchTokens: 7}, kv.DefaultBlockTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, ok := wantBySpec[tc.spec]
			if !ok {
				want = make([][]int32, len(js))
				for i, j := range js {
					want[i] = solo(t, ref, tc.spec, j.prompt, j.max, model.SamplerConfig{})
				}
				wantBySpec[tc.spec] = want
			}
			m := loadModel(t)
			c := newCacheBlocks(t, m, tc.spec, 0, cmp.Or(tc.blocks, testBlockTokens))
			e := newEngine(t, m, c, tc.cfg)
			// One batch: the check below that requests ran together must not depend on
			// how soon the submitting goroutines were scheduled (under load, one request
			// of the tiny model could finish before the next was submitted).
			res := runBatch(t, e, js, greedy)
			for i, r := range res {
				got := r.Choices[0]
				if !slices.Equal(got.Tokens, want[i]) {
					t.Errorf("request %d: tokens %v\nwant %v", i, got.Tokens, want[i])
				}
				if wt := m.Tok.Decode(want[i]); got.Text != wt {
					t.Errorf("request %d: text %q, want %q", i, got.Text, wt)
				}
				if r.Usage.PromptTokens != len(js[i].prompt) {
					t.Errorf("request %d: prompt tokens %d, want %d", i, r.Usage.PromptTokens, len(js[i].prompt))
				}
				if len(got.Tokens) < js[i].max && got.FinishReason != FinishStop || len(got.Tokens) == js[i].max && got.FinishReason != FinishLength {
					t.Errorf("request %d: %d tokens of %d, finish %q", i, len(got.Tokens), js[i].max, got.FinishReason)
				}
			}
			st := e.Stats()
			if st.Completed != int64(len(js)) || st.Running != 0 || st.Waiting != 0 {
				t.Errorf("stats after the run: %+v", st)
			}
			if tc.cfg.MaxRunning == 0 && st.PeakRunning < 2 {
				t.Errorf("peak running %d: requests were not batched", st.PeakRunning)
			}
			if st.Cache.Sequences != 0 {
				t.Errorf("%d sequences left in the cache", st.Cache.Sequences)
			}
		})
	}
}

// seqBytes measures the cache bytes one sequence of n tokens holds after a short
// prefill and single-token steps (a long prefill may hold a larger full-precision
// tail until the next step).
func seqBytes(t *testing.T, m *model.Model, spec string, n, blockTokens int) int64 {
	t.Helper()
	c := newCacheBlocks(t, m, spec, 0, blockTokens)
	seq, err := c.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := m.Forward(c, []model.Span{{Seq: seq, Tokens: []int32{int32(1 + i%50)}}}); err != nil {
			t.Fatal(err)
		}
	}
	return c.Usage().AllocBytes
}

func TestPreemptionResumesExactly(t *testing.T) {
	for _, spec := range []string{"f32", "kivi4/kivi2:r=16", "q4"} {
		t.Run(spec, func(t *testing.T) { testPreemption(t, loadModel, spec, testBlockTokens) })
	}
	t.Run("q4 default blocks", func(t *testing.T) { testPreemption(t, loadModel, "q4", kv.DefaultBlockTokens) })
}

// testPreemption runs requests sampled with a seed through an engine whose budget
// forces preemption, on models load returns, and checks that every request gives the
// tokens it gives alone.
func testPreemption(t *testing.T, load func(testing.TB) *model.Model, spec string, blockTokens int) {
	ref := load(t)
	js := jobs(ref, 100)
	sc := model.SamplerConfig{Temp: 0.8, TopK: 40, Seed: 7}
	want := make([][]int32, len(js))
	for i, j := range js {
		want[i] = solo(t, ref, spec, j.prompt, j.max, sc)
	}
	// Room for about two and a half full requests at once: admission reserves one
	// block of growth per sequence, so sequences growing together run out of
	// memory and force preemption. The cache hides its pool figures.
	budget := seqBytes(t, ref, spec, 105, blockTokens) * 5 / 2
	m := load(t)
	c := plainCache{newCacheBlocks(t, m, spec, budget, blockTokens)}
	e := newEngine(t, m, c, Config{BytesPerToken: 1})
	// One batch: requests submitted from goroutines may arrive one by one on a loaded
	// machine, each done before the next, and then nothing is preempted.
	res := runBatch(t, e, js, func(j job) Request {
		return Request{Prompt: j.prompt, MaxTokens: j.max, Sampling: sc, IgnoreEOS: false}
	})
	preempted := 0
	for i, r := range res {
		if got := r.Choices[0].Tokens; !slices.Equal(got, want[i]) {
			t.Errorf("request %d (preempted %d times): tokens %v\nwant %v", i, r.Preemptions, got, want[i])
		}
		preempted += r.Preemptions
	}
	st := e.Stats()
	if st.Preemptions == 0 || int64(preempted) != st.Preemptions {
		t.Errorf("preemptions: stats %d, sum over requests %d; the budget should force some", st.Preemptions, preempted)
	}
	if st.Cache.AllocBytes > budget {
		t.Errorf("cache holds %d bytes, over the budget of %d", st.Cache.AllocBytes, budget)
	}
	t.Logf("budget %d bytes, %d preemptions, peak running %d", budget, st.Preemptions, st.PeakRunning)
}

func TestParallelChoicesFork(t *testing.T) {
	ref := loadModel(t)
	prompt := ref.Tok.Encode("Once upon a time, there was a little girl", true)
	sc := model.SamplerConfig{Temp: 1, Seed: 100}
	const n = 4
	m := loadModel(t)
	c := newCache(t, m, "f32", 0)
	e := newEngine(t, m, c, Config{})
	s, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 30, Sampling: sc, N: n})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != n {
		t.Fatalf("%d choices, want %d", len(res.Choices), n)
	}
	distinct := map[string]bool{}
	for i, ch := range res.Choices {
		sci := sc
		sci.Seed += uint64(i)
		want := solo(t, ref, "f32", prompt, 30, sci)
		if !slices.Equal(ch.Tokens, want) {
			t.Errorf("choice %d: %v\nwant %v", i, ch.Tokens, want)
		}
		distinct[ch.Text] = true
	}
	if len(distinct) < 2 {
		t.Errorf("all %d choices are equal: seeds not varied per choice", n)
	}
	if st := e.Stats(); st.PromptTokens != int64(len(prompt)) || st.PrefillTokens != int64(len(prompt)) {
		t.Errorf("prompt computed %d times for %d prompt tokens: forking should compute it once", st.PrefillTokens, st.PromptTokens)
	}
	total := 0
	for _, ch := range res.Choices {
		total += len(ch.Tokens)
		if ch.FinishReason == FinishStop {
			total++ // the EOS
		}
	}
	if res.Usage.CompletionTokens != total {
		t.Errorf("completion tokens %d, want %d", res.Usage.CompletionTokens, total)
	}
}

func TestCancelFreesBlocks(t *testing.T) {
	m := loadModel(t)
	c := newCache(t, m, "f32", 0)
	e, err := New(m, c, Config{MaxRunning: 1})
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tok.Encode("Once upon a time", true)
	ctx, cancel := context.WithCancel(context.Background())
	// Stats are published after each step: by the second token the first step's are.
	second := make(chan struct{})
	tokens := 0 // touched only by the scheduler goroutine
	s, err := e.Submit(ctx, Request{Prompt: prompt, IgnoreEOS: true, OnToken: func(Event) {
		if tokens++; tokens == 2 {
			close(second)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A second request waits behind MaxRunning = 1 and is cancelled from the queue.
	ctx2, cancel2 := context.WithCancel(context.Background())
	s2, err := e.Submit(ctx2, Request{Prompt: prompt, MaxTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	<-second
	if u := e.Stats().Cache; u.AllocBytes == 0 {
		t.Errorf("no cache memory in use while generating")
	}
	cancel2()
	cancel()
	res, err := s.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel: %v, want context.Canceled", err)
	}
	if len(res.Choices) != 1 || len(res.Choices[0].Tokens) == 0 || res.Choices[0].FinishReason != "" {
		t.Errorf("partial result after cancel: %+v", res.Choices)
	}
	if _, err := s2.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("queued request after cancel: %v, want context.Canceled", err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if u := c.Usage(); u.AllocBytes != 0 || u.Sequences != 0 {
		t.Errorf("after cancel the cache holds %d bytes in %d sequences, want 0", u.AllocBytes, u.Sequences)
	}
	if st := e.Stats(); st.Cancelled != 2 || st.Completed != 0 {
		t.Errorf("stats: cancelled %d completed %d, want 2 and 0", st.Cancelled, st.Completed)
	}
}

func TestStopStrings(t *testing.T) {
	ref := loadModel(t)
	prompt := ref.Tok.Encode("Once upon a time", true)
	full := ref.Tok.Decode(solo(t, ref, "f32", prompt, 120, model.SamplerConfig{}))
	words := strings.Fields(full)
	if len(words) < 12 {
		t.Fatalf("reference text too short: %q", full)
	}
	stop := words[8] + " " + words[9]
	cut := strings.Index(full, stop)
	m := loadModel(t)
	e := newEngine(t, m, newCache(t, m, "f32", 0), Config{})
	s, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 120, Stop: []string{"no such text", stop}})
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	var last Event
	for ev := range s.Events() {
		streamed.WriteString(ev.Text)
		last = ev
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Choices[0]
	if ch.Text != full[:cut] || ch.FinishReason != FinishStop {
		t.Errorf("text %q finish %q, want %q and %q", ch.Text, ch.FinishReason, full[:cut], FinishStop)
	}
	if streamed.String() != ch.Text {
		t.Errorf("streamed %q, want %q", streamed.String(), ch.Text)
	}
	if last.Finish != FinishStop {
		t.Errorf("last event finish %q", last.Finish)
	}
}

func TestQueueFullAndErrors(t *testing.T) {
	m := loadModel(t)
	c := newCache(t, m, "f32", 0)
	e := newEngine(t, m, c, Config{MaxRunning: 1, MaxQueue: 2})
	prompt := m.Tok.Encode("Once upon a time", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var once sync.Once
	if _, err := e.Submit(ctx, Request{Prompt: prompt, IgnoreEOS: true, OnToken: func(Event) { once.Do(func() { close(started) }) }}); err != nil {
		t.Fatal(err)
	}
	<-started
	for i := range 2 {
		if _, err := e.Submit(ctx, Request{Prompt: prompt, MaxTokens: 3}); err != nil {
			t.Fatalf("queued request %d: %v", i, err)
		}
	}
	if _, err := e.Submit(ctx, Request{Prompt: prompt, MaxTokens: 3}); !errors.Is(err, ErrQueueFull) {
		t.Errorf("third queued request: %v, want ErrQueueFull", err)
	}
	for _, tc := range []struct {
		name string
		req  Request
		want error
	}{
		{"empty prompt", Request{}, ErrBadRequest},
		{"token out of range", Request{Prompt: []int32{1, int32(m.Vocab)}}, ErrBadRequest},
		{"negative token", Request{Prompt: []int32{-1}}, ErrBadRequest},
		{"empty stop", Request{Prompt: prompt, Stop: []string{""}}, ErrBadRequest},
		{"beyond context", Request{Prompt: prompt, MaxTokens: m.Ctx}, ErrTooLarge},
	} {
		if _, err := e.Submit(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// plainCache hides the pool figures of a cache, so that the engine cannot check a
// request against the budget at Submit and must find out at run time.
type plainCache struct{ kv.Cache }

func TestNeverFits(t *testing.T) {
	m := loadModel(t)
	prompt := m.Tok.Encode("Once upon a time there was", true)
	budget := seqBytes(t, m, "f32", 20, testBlockTokens)
	e := newEngine(t, m, newCache(t, m, "f32", budget), Config{})
	if _, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 200}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Submit of a request larger than the budget: %v, want ErrTooLarge", err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	e = newEngine(t, m, plainCache{newCache(t, m, "f32", budget)}, Config{})
	// Fits: short prompt and a few tokens.
	s, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 4, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(); err != nil {
		t.Fatalf("small request: %v", err)
	}
	// Does not fit alone: fails cleanly, and the engine keeps serving.
	s, err = e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 200, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Wait()
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, kv.ErrNoSpace) {
		t.Errorf("oversized request: %v, want ErrTooLarge wrapping kv.ErrNoSpace", err)
	}
	if len(res.Choices[0].Tokens) == 0 {
		t.Errorf("oversized request: no partial tokens")
	}
	s, err = e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(); err != nil {
		t.Fatalf("request after a failed one: %v", err)
	}
	if st := e.Stats(); st.Failed != 1 || st.Completed != 2 || st.Cache.Sequences != 0 {
		t.Errorf("stats: %+v", st)
	}
}

func TestClose(t *testing.T) {
	m := loadModel(t)
	c := newCache(t, m, "f32", 0)
	e, err := New(m, c, Config{})
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tok.Encode("Once upon a time", true)
	short, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	long, err := e.Submit(context.Background(), Request{Prompt: prompt, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	// The long request cannot finish within the deadline: Close cancels it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	closeErr := e.Close(ctx)
	if _, err := short.Wait(); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("short request: %v", err)
	}
	_, longErr := long.Wait()
	if closeErr == nil && longErr != nil || closeErr != nil && !errors.Is(longErr, ErrClosed) {
		t.Errorf("Close: %v; long request: %v", closeErr, longErr)
	}
	if _, err := e.Submit(context.Background(), Request{Prompt: prompt}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	if u := c.Usage(); u.Sequences != 0 || u.AllocBytes != 0 {
		t.Errorf("after Close the cache holds %d sequences, %d bytes", u.Sequences, u.AllocBytes)
	}
	// Graceful close: everything finishes.
	e2, err := New(m, c, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ss []*Stream
	for i := range 3 {
		s, err := e2.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: 10 + i})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	if err := e2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, s := range ss {
		if _, err := s.Wait(); err != nil {
			t.Errorf("request %d after graceful Close: %v", i, err)
		}
	}
}

func TestEventsMatchResult(t *testing.T) {
	m := loadModel(t)
	e := newEngine(t, m, newCache(t, m, "f32", 0), Config{})
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			s, err := e.Submit(context.Background(), Request{Prompt: m.Tok.Encode(p, true), MaxTokens: 20 + 10*i, N: 2, Sampling: model.SamplerConfig{Temp: 0.9, Seed: uint64(i)}})
			if err != nil {
				t.Error(err)
				return
			}
			texts := make([]strings.Builder, 2)
			counts := make([]int, 2)
			for ev := range s.Events() {
				texts[ev.Choice].WriteString(ev.Text)
				counts[ev.Choice]++
			}
			res, err := s.Wait()
			if err != nil {
				t.Error(err)
				return
			}
			for k, ch := range res.Choices {
				if texts[k].String() != ch.Text {
					t.Errorf("prompt %d choice %d: streamed %q, result %q", i, k, texts[k].String(), ch.Text)
				}
				want := len(ch.Tokens)
				if ch.FinishReason == FinishStop {
					want++
				}
				if counts[k] != want {
					t.Errorf("prompt %d choice %d: %d events for %d tokens (%s)", i, k, counts[k], len(ch.Tokens), ch.FinishReason)
				}
			}
		})
	}
	wg.Wait()
	if st := e.Stats(); st.TTFTCount != int64(len(prompts)) || st.ITLCount == 0 {
		t.Errorf("latency counters: %d TTFT, %d ITL", st.TTFTCount, st.ITLCount)
	}
}

// forkPrefixCache serves a fixed cached prefix by forking a donor sequence that holds
// it, standing in for a cache with prefix caching.
type forkPrefixCache struct {
	kv.Cache
	donor  kv.SeqID
	prefix []int32
	hits   int
}

func (f *forkPrefixCache) NewSeqWithPrefix(tokens []int32) (kv.SeqID, int, error) {
	if len(tokens) < len(f.prefix) || !slices.Equal(tokens[:len(f.prefix)], f.prefix) {
		id, err := f.NewSeq()
		return id, 0, err
	}
	id, err := f.Fork(f.donor)
	if err == nil {
		f.hits++
	}
	return id, len(f.prefix), err
}

func TestPrefixReuse(t *testing.T) {
	ref := loadModel(t)
	prefix := ref.Tok.Encode("Once upon a time, there was a little girl named Lily.", true)
	var js []job
	for i, p := range []string{" She", " One day", " Lily", " She loved to play"} {
		js = append(js, job{append(slices.Clone(prefix), ref.Tok.Encode(p, false)...), 20 + 5*i})
	}
	js = append(js, job{prefix[:len(prefix)-2], 10}) // shorter than the prefix: no hit
	want := make([][]int32, len(js))
	for i, j := range js {
		want[i] = solo(t, ref, "f32", j.prompt, j.max, model.SamplerConfig{})
	}
	m := loadModel(t)
	c := &forkPrefixCache{Cache: newCache(t, m, "f32", 0), prefix: prefix}
	var err error
	if c.donor, err = c.NewSeq(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(c, []model.Span{{Seq: c.donor, Tokens: prefix}}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, m, c, Config{})
	res := runConcurrently(t, e, js, greedy)
	for i, r := range res {
		if !slices.Equal(r.Choices[0].Tokens, want[i]) {
			t.Errorf("request %d: %v\nwant %v", i, r.Choices[0].Tokens, want[i])
		}
		wantCached := len(prefix)
		if i == len(js)-1 {
			wantCached = 0
		}
		if r.Usage.CachedPromptTokens != wantCached {
			t.Errorf("request %d: %d cached prompt tokens, want %d", i, r.Usage.CachedPromptTokens, wantCached)
		}
	}
	st := e.Stats()
	prompt := 0
	for _, j := range js {
		prompt += len(j.prompt)
	}
	if c.hits != 4 || st.CachedPromptTokens != int64(4*len(prefix)) || st.PrefillTokens != int64(prompt-4*len(prefix)) {
		t.Errorf("%d hits, %d cached tokens, %d prefill tokens; want 4, %d, %d", c.hits, st.CachedPromptTokens, st.PrefillTokens, 4*len(prefix), prompt-4*len(prefix))
	}
	if got, want := st.PrefixHitRate(), float64(4*len(prefix))/float64(prompt); got != want {
		t.Errorf("prefix hit rate %g, want %g", got, want)
	}
}

// TestPrefixCacheOfStore: every cache type serves a shared prompt prefix from the
// prefix cache (KIVI windows and sinks through the blocks' side rows) and generates
// what the request computed alone generates.
func TestPrefixCacheOfStore(t *testing.T) {
	for _, spec := range []string{"f16", "kivi4/kivi2", "q4:sinks=4", "kivi4/kivi2:r=16,sinks=4"} {
		t.Run(spec, func(t *testing.T) { testPrefixCacheOfStore(t, spec) })
	}
}

func testPrefixCacheOfStore(t *testing.T, spec string) {
	ref := loadModel(t)
	prefix := ref.Tok.Encode("Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her dog, Max. Every morning they ran to the park, and Max chased the ball.", true)
	suffixes := []string{" One day", " Lily", " Max was", " They"}
	m := loadModel(t)
	st := newCache(t, m, spec, 0).(*kv.Store)
	if !st.PrefixCaching() {
		t.Fatalf("%s store without prefix caching", spec)
	}
	B := st.PoolStats().BlockTokens
	if len(prefix) < 2*B {
		t.Fatalf("prefix of %d tokens is shorter than two blocks of %d", len(prefix), B)
	}
	e := newEngine(t, m, st, Config{})
	run := func(js []job) []Result { return runConcurrently(t, e, js, greedy) }
	var js []job
	for _, sfx := range suffixes {
		js = append(js, job{append(slices.Clone(prefix), ref.Tok.Encode(sfx, false)...), 24})
	}
	first := run(js[:1])[0]
	rest := run(js[1:])
	for i, r := range append([]Result{first}, rest...) {
		want := solo(t, ref, spec, js[i].prompt, js[i].max, model.SamplerConfig{})
		if !slices.Equal(r.Choices[0].Tokens, want) {
			t.Errorf("request %d: %v\nwant %v", i, r.Choices[0].Tokens, want)
		}
		wantCached := len(prefix) / B * B
		if i == 0 {
			wantCached = 0
		}
		if r.Usage.CachedPromptTokens != wantCached {
			t.Errorf("request %d: %d cached prompt tokens, want %d", i, r.Usage.CachedPromptTokens, wantCached)
		}
	}
	s := e.Stats()
	if s.Pool.BlocksCached == 0 || s.Pool.PrefixHitBlocks == 0 || s.Cache.AllocBytes != 0 {
		t.Errorf("pool after the run: %+v, cache %+v", s.Pool, s.Cache)
	}
}

func TestSubmitBatchAllOrNothing(t *testing.T) {
	m := loadModel(t)
	e := newEngine(t, m, newCache(t, m, "f32", 0), Config{MaxRunning: 1, MaxQueue: 3})
	prompt := m.Tok.Encode("Once upon a time", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var once sync.Once
	if _, err := e.Submit(ctx, Request{Prompt: prompt, IgnoreEOS: true, OnToken: func(Event) { once.Do(func() { close(started) }) }}); err != nil {
		t.Fatal(err)
	}
	<-started
	ok := Request{Prompt: prompt, MaxTokens: 2}
	if _, err := e.SubmitBatch(ctx, []Request{ok, ok, ok, ok}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("batch larger than the queue: %v, want ErrTooLarge", err)
	}
	qctx, qcancel := context.WithCancel(ctx)
	queued, err := e.Submit(qctx, ok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SubmitBatch(ctx, []Request{ok, ok, ok}); !errors.Is(err, ErrQueueFull) {
		t.Errorf("batch over the room left in the queue: %v, want ErrQueueFull", err)
	}
	qcancel()
	<-queued.Done()
	if _, err := e.SubmitBatch(ctx, []Request{ok, {Prompt: []int32{-5}}}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "request 1") {
		t.Errorf("batch with a bad request: %v, want ErrBadRequest naming request 1", err)
	}
	if w := e.Stats().Waiting; w != 0 {
		t.Errorf("failed batches left %d requests waiting", w)
	}
	ss, err := e.SubmitBatch(ctx, []Request{ok, ok, ok})
	if err != nil || len(ss) != 3 {
		t.Fatalf("batch that fits: %d streams, %v", len(ss), err)
	}
	if w := e.Stats().Waiting; w != 3 {
		t.Errorf("%d requests waiting, want 3", w)
	}
}

// A request whose blocks fit the budget but whose full-precision tails (KIVI rings)
// do not is refused up front with ErrTooLarge, as kv.SteadyBytes sizes the tail; one
// with room for both is accepted.
func TestNeverFitsWithTails(t *testing.T) {
	m := loadModel(t)
	const spec = "kivi4/kivi2:r=64"
	prompt := m.Tok.Encode("Once upon a time there was", true)
	probe := newCache(t, m, spec, 1<<30).(*kv.Store)
	ps := probe.PoolStats()
	blockBytes, B := int64(ps.BlockBytes), ps.BlockTokens // the codec may round the block size up
	steady, err := kv.SteadyBytes(probe.Config(), B)
	if err != nil {
		t.Fatal(err)
	}
	tail := steady - blockBytes
	if tail <= 0 {
		t.Fatalf("%s holds no tail (steady %d, block %d bytes)", spec, steady, blockBytes)
	}
	const maxTokens = 64
	need := int64((len(prompt)+B-1)/B + (maxTokens+B-1)/B)
	if len(prompt)%B != 0 {
		need--
	}
	for _, tc := range []struct {
		budget int64
		fits   bool
	}{
		{need*blockBytes + tail - 1, false},
		{need*blockBytes + tail, true},
	} {
		e := newEngine(t, m, newCache(t, m, spec, tc.budget), Config{})
		_, err := e.Submit(context.Background(), Request{Prompt: prompt, MaxTokens: maxTokens, IgnoreEOS: true})
		if got := !errors.Is(err, ErrTooLarge); got != tc.fits {
			t.Errorf("budget %d (%d blocks of %d bytes + a %d-byte tail): Submit error %v, want fits=%v", tc.budget, need, blockBytes, tail, err, tc.fits)
		}
	}
}

// More requests at once than the queue can ever hold is ErrTooLarge, not
// ErrQueueFull (which a retry could cure); Stats reports the queue and its bound.
func TestBatchLargerThanQueue(t *testing.T) {
	m := loadModel(t)
	e := newEngine(t, m, newCache(t, m, "f32", 0), Config{MaxQueue: 2})
	prompt := m.Tok.Encode("Once", true)
	reqs := []Request{{Prompt: prompt, MaxTokens: 2}, {Prompt: prompt, MaxTokens: 2}, {Prompt: prompt, MaxTokens: 2}}
	if _, err := e.SubmitBatch(context.Background(), reqs); !errors.Is(err, ErrTooLarge) {
		t.Errorf("3 requests with MaxQueue 2: %v, want ErrTooLarge", err)
	}
	if st := e.Stats(); st.MaxQueue != 2 || st.Queued != 0 {
		t.Errorf("Stats: Queued %d, MaxQueue %d; want 0 and 2", st.Queued, st.MaxQueue)
	}
	ss, err := e.SubmitBatch(context.Background(), reqs[:2])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if _, err := s.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
