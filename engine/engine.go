// Package engine schedules many completion requests over one model and one KV cache
// with continuous batching: requests join and leave the running batch at every step.
//
// Each step is one model.Forward over a batch of spans, built within a token budget:
// first one decode token for every running choice, then prefill chunks of running
// requests whose prompt (or recomputation) is incomplete, then new requests admitted
// from the waiting queue in arrival order while the sequence limit
// (Config.MaxRunning) and the cache's free memory allow.
//
// Mixed load (chunked prefill as in Sarathi-Serve and vLLM): a step from which any
// sequence gets a token (a decode, or the first token after its prompt) holds at
// most Config.DecodeStepTokens tokens, so a long prompt prefills over several steps
// and every decoding sequence waits at most one such step per token (a step's time
// grows with its tokens). Only a step of long prompts' parts, from which no sequence
// gets a token, grows to Config.MaxBatchTokens. Within a step every pending prefill
// first gets at most Config.LongPrefillTokens, in arrival order, so that several
// prompts share the step and a short one starts beside a long one instead of
// behind it; the budget left then extends the chunks, shortest remaining first.
//
// Memory: a waiting request starts only if the cache's free memory covers what the
// running sequences still have to compute plus one block of growth each, the new
// request's history and growth, and the full-precision tail every sequence holds
// (kv.SteadyBytes). When a step still cannot reserve cache room (kv.ErrNoSpace —
// Forward then has changed nothing), the newest running request is preempted: its
// sequences are dropped, their blocks freed, and it goes back to the waiting queue to
// be recomputed later from its prompt and the tokens it had generated (its samplers
// keep their state, so the continuation is the one an uninterrupted run would
// produce). Other sequences are never touched. After a preemption no request starts
// until a running one ends, which bounds recomputation. A request that does not fit
// even alone fails with ErrTooLarge.
//
// Prefix caching: when the cache offers NewSeqWithPrefix (kv.Store), a starting or
// resuming request takes the cached blocks its history begins with instead of
// computing them (Usage.CachedPromptTokens, Stats.ReusedTokens); a preempted
// request's own blocks usually are still cached when it resumes.
//
// Shared tiers: when the cache also keeps blocks beyond memory (kv/tier.Cache),
// Submit first brings the blocks a prompt begins with into memory (Prefetch, on the
// caller's goroutine, bounded in time), and admission adopts them as it adopts any
// cached block; they count in CachedPromptTokens.
//
// Idle time: with Config.Prefault, an engine with nothing to do makes cache memory
// ahead of need (kv.Store.Prefault), a piece (512 KiB) at a time, looking for new
// work in between, so that steps take blocks whose pages are already there.
//
// Streaming past the context: with Config.Window, sequences keep attention sinks and
// a sliding window (kv.Store.Evict) and may grow beyond the model's context.
//
// Concurrency: Submit, Stats and Close may be called from any goroutine; one
// scheduler goroutine owns the model and the cache for the engine's lifetime (nothing
// else may use them until Close returns). It yields to the Go scheduler after every
// step, so that the goroutines reading a step's tokens get them before the next step.
package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"kvq/kv"
	"kvq/model"
)

// Defaults of Config fields. DefaultMaxBatchTokens is within vLLM's range for
// chunked prefill (2048–8192): at 512 a step took about two 300-token prompts, so
// the step budget, not the cache's memory, bounded how many sequences ran
// (llama-134m, kivi4/kivi2, 64 MiB: 7 sequences at 512, 15 at 2048, the memory's
// limit); decode tokens still go first in every step.
//
// DefaultDecodeStepTokens bounds steps from which sequences get tokens: at ~2000 prefill
// tokens/s (llama-134m Q8_0, 2 threads) a step of 256 tokens takes ~130 ms, the
// inter-token latency a long prompt can add, against ~1 s for a 2048-token step.
const (
	DefaultMaxBatchTokens   = 2048
	DefaultDecodeStepTokens = 256
	DefaultMaxRunning       = 64
	DefaultMaxQueue         = 1024
)

// Config tunes an Engine. The zero value selects the defaults.
type Config struct {
	// MaxBatchTokens is the number of tokens (decode + prefill) per forward step.
	MaxBatchTokens int
	// DecodeStepTokens is the most tokens of a step from which any sequence gets a
	// token (a decode, or the first token after its prompt): prefill chunks fill
	// what the decode tokens leave, at least LongPrefillTokens so that prompts always
	// progress. It bounds inter-token latency to the time of a step of this many
	// tokens (of decodes + LongPrefillTokens when more sequences decode); steps of
	// long prompts' parts alone take up to MaxBatchTokens. 0 means
	// min(DefaultDecodeStepTokens, MaxBatchTokens); MaxBatchTokens lets prefill take
	// whole steps beside decodes (throughput first, for offline work).
	DecodeStepTokens int
	// LongPrefillTokens is the share of a step each pending prefill gets before any
	// gets more: running prefills, then requests admitted from the queue, each in
	// arrival order, take at most this many tokens; the budget left then extends
	// their chunks, shortest remaining first. A prompt of at most this many tokens
	// thus starts and completes in the first step with room for it, whatever long
	// prompts prefill beside it. 0 means a quarter of DecodeStepTokens.
	LongPrefillTokens int
	// MaxRunning is the maximum number of sequences (choices) in the running batch;
	// it must not exceed MaxBatchTokens.
	MaxRunning int
	// PrefillChunk is the most tokens one sequence computes in one step (its prompt
	// is split into chunks of this size); 0 means MaxBatchTokens. Smaller chunks
	// bound what a step holds on top of the steady state — a cache with
	// full-precision tails (KIVI) keeps a step's rows in f32 until the next step —
	// and interleave prefill with the decoding of running requests.
	PrefillChunk int
	// MaxQueue bounds the requests submitted but not yet started; Submit returns
	// ErrQueueFull beyond it. Preempted requests do not count.
	MaxQueue int
	// BytesPerToken is the cache memory one more token of a sequence needs, used to
	// decide whether a waiting request may start. 0 means: measure it from the cache
	// (allocated bytes ÷ tokens held), admitting freely while the cache is empty.
	BytesPerToken float64
	// Window, if > 0, bounds every sequence's cache memory with attention sinks and a
	// sliding window (StreamingLLM): after each step, a sequence longer than
	// Sinks+Window keeps only its first Sinks and its last Window tokens (see
	// kv.Store.Evict), and requests may generate past the model's context. The cache
	// must be able to evict. A preempted request is recomputed with evictions at its
	// chunk boundaries, so its continuation may differ slightly from an uninterrupted
	// run's.
	Window, Sinks int
	// OnStep, if not nil, is called on the scheduler goroutine after every step.
	OnStep func(StepInfo)
	// Prefault, if > 0, is the block memory in bytes the engine keeps made and
	// faulted in ahead of need (kv.Store.Prefault): whenever nothing runs or waits,
	// it makes free blocks until they hold Prefault bytes or the cache's budget is
	// made, so that steps take blocks whose pages the kernel has already zeroed
	// instead of stopping for that. It works a piece at a time (one call of
	// kv.Store.Prefault with no time to spare: 512 KiB), looking for new work in
	// between: a request that arrives meanwhile waits for that piece. Its memory
	// counts in PoolStats.BlocksMade and HeldBytes, not in the budget's AllocBytes.
	// 0: off.
	Prefault int64
	// OnPrefault, if not nil, is called on the scheduler goroutine when idle-time
	// prefaulting reaches Prefault (or the budget): the bytes faulted in since it
	// began, and the time spent on it (pieces interrupted by work do not count the
	// work).
	OnPrefault func(bytes int64, spent time.Duration)
}

// prefaulter is implemented by caches that can make block memory ahead of need
// (kv.Store).
type prefaulter interface {
	Prefault(ready int64, d time.Duration) (more bool)
}

// prefetcher is implemented by caches that keep blocks beyond memory (kv/tier.Cache):
// Prefetch brings the blocks a prompt begins with into memory, bounded in time, so
// that admission adopts them as cached. Submit calls it on the caller's goroutine,
// never on the scheduler's.
type prefetcher interface {
	Prefetch(ctx context.Context, tokens []int32) int
}

// evicter is implemented by caches that can drop the middle of a sequence (kv.Store).
type evicter interface {
	Evict(seq kv.SeqID, sinks, window int) (kv.Eviction, error)
}

// StepInfo describes one completed step.
type StepInfo struct {
	DecodeTokens  int // tokens of choices that were decoding (one each)
	PrefillTokens int // prompt and recomputation tokens
	Sampled       int // tokens sampled (first tokens after a prefill included)
	Running       int // sequences in the running batch after the step
	Waiting       int // requests waiting after the step
	Duration      time.Duration
	Cache         kv.Usage
}

// Stats is a snapshot of the engine's state and counters since New.
type Stats struct {
	Running         int // sequences (choices) in the running batch
	RunningRequests int
	Waiting         int // requests waiting to start or to resume after preemption
	PeakRunning     int // largest Running seen after a step
	Queued          int // requests submitted and not yet started: what MaxQueue bounds
	MaxQueue        int // Config.MaxQueue: Submit fails with ErrQueueFull at Queued + 1 > MaxQueue

	Steps              int64
	Preemptions        int64
	Completed          int64 // requests finished normally
	Failed             int64 // requests that ended with an error other than cancellation
	Cancelled          int64 // requests ended by their context or by Close
	PromptTokens       int64 // prompt tokens of admitted requests, each request counted once
	CachedPromptTokens int64 // of which taken from the prefix cache at first admission
	ReusedTokens       int64 // tokens taken from the prefix cache at every admission, resumes included
	PrefillTokens      int64 // tokens computed by prefill, recomputation included
	GeneratedTokens    int64 // tokens sampled

	TTFTSum   time.Duration // sum of times to first token
	TTFTCount int64
	ITLSum    time.Duration // sum of inter-token latencies
	ITLCount  int64

	Cache kv.Usage     // cache figures after the last step
	Pool  kv.PoolStats // block pool figures after the last step; zero if the cache has none
}

// PrefixHitRate is the fraction of admitted prompt tokens served from the prefix cache.
func (s Stats) PrefixHitRate() float64 {
	if s.PromptTokens == 0 {
		return 0
	}
	return float64(s.CachedPromptTokens) / float64(s.PromptTokens)
}

// Engine is a continuous-batching scheduler over one model and one cache.
type Engine struct {
	m    *model.Model
	c    kv.Cache
	cfg  Config
	pool poolStatser // c's block pool figures, nil if it has none
	ev   evicter     // c's eviction, set when Config.Window > 0

	// Static pool geometry (0 without a pool or without a budget).
	blockTokens, blocksTotal int
	// groupWindows is the attention window of each layer group's layers, 0 for
	// the whole history (kv.Store.GroupWindows); nil when the cache does not say.
	groupWindows []int
	// prefixBlock is the tokens per block of a cache with a prefix cache, 0 without
	// one (see prefixComing).
	prefixBlock int
	// seqTail is the full-precision tail memory one sequence holds in the steady
	// state (rings and sinks, kv.SteadyTail), 0 if unknown.
	seqTail int64
	// workRow is the memory a sequence's step holds per token beyond its steady
	// tail (the step's full-precision rows, kv.Tail.WorkRows of them), 0 if unknown.
	workRow int64
	// blockBytes and budget: the pool's block size and the cache's byte budget (0
	// without a pool or a budget), for the never-fits check.
	blockBytes, budget int64

	mu       sync.Mutex
	incoming []*request
	cancels  []*request
	queued   int // requests submitted and not yet started
	closing  bool
	abort    bool
	nextID   uint64
	stats    Stats
	wake     chan struct{}
	exited   chan struct{}

	// Owned by the scheduler goroutine.
	waiting []*request // sorted by id (arrival order)
	running []*request // sorted by id
	ending  []ending   // finished requests whose streams the next publish releases
	sampled int        // tokens sampled in the current step
	draws   []draw     // apply's draws, kept for reuse
	yielder yielder    // lets the readers of a step's tokens run before the next step
	// hold stops admission after a preemption until a running request ends, so that
	// a preempted request is not readmitted only to be preempted again.
	hold bool
	// Idle-time prefaulting (Config.Prefault): pf is the cache's, nil when off.
	// pfDone is set once it has nothing more to do, until the next step; pfRun
	// while a run (pieces until pfDone) is under way, with pfFrom the
	// PoolStats.PrefaultBytes it began at and pfSpent its time so far.
	pf            prefaulter
	pfDone, pfRun bool
	pfFrom        int64
	pfSpent       time.Duration
}

// New starts an engine over m and c. The engine owns both until Close returns.
func New(m *model.Model, c kv.Cache, cfg Config) (*Engine, error) {
	if m == nil || c == nil {
		return nil, fmt.Errorf("engine: nil model or cache")
	}
	if cfg.MaxBatchTokens == 0 {
		cfg.MaxBatchTokens = DefaultMaxBatchTokens
	}
	if cfg.MaxRunning == 0 {
		cfg.MaxRunning = min(DefaultMaxRunning, cfg.MaxBatchTokens)
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.PrefillChunk == 0 {
		cfg.PrefillChunk = cfg.MaxBatchTokens
	}
	if cfg.DecodeStepTokens == 0 {
		cfg.DecodeStepTokens = min(DefaultDecodeStepTokens, cfg.MaxBatchTokens)
	}
	if cfg.LongPrefillTokens == 0 {
		cfg.LongPrefillTokens = max(1, cfg.DecodeStepTokens/4)
	}
	switch {
	case cfg.MaxBatchTokens < 1:
		return nil, fmt.Errorf("engine: MaxBatchTokens = %d, must be ≥ 1", cfg.MaxBatchTokens)
	case cfg.MaxRunning < 1 || cfg.MaxRunning > cfg.MaxBatchTokens:
		return nil, fmt.Errorf("engine: MaxRunning = %d, must be in [1, MaxBatchTokens = %d]", cfg.MaxRunning, cfg.MaxBatchTokens)
	case cfg.DecodeStepTokens < 1 || cfg.DecodeStepTokens > cfg.MaxBatchTokens:
		return nil, fmt.Errorf("engine: DecodeStepTokens = %d, must be in [1, MaxBatchTokens = %d]", cfg.DecodeStepTokens, cfg.MaxBatchTokens)
	case cfg.LongPrefillTokens < 1:
		return nil, fmt.Errorf("engine: LongPrefillTokens = %d, must be ≥ 1", cfg.LongPrefillTokens)
	case cfg.PrefillChunk < 1:
		return nil, fmt.Errorf("engine: PrefillChunk = %d, must be ≥ 1", cfg.PrefillChunk)
	case cfg.MaxQueue < 1:
		return nil, fmt.Errorf("engine: MaxQueue = %d, must be ≥ 1", cfg.MaxQueue)
	case cfg.BytesPerToken < 0:
		return nil, fmt.Errorf("engine: BytesPerToken = %g, must be ≥ 0", cfg.BytesPerToken)
	case cfg.Window < 0 || cfg.Sinks < 0:
		return nil, fmt.Errorf("engine: Window = %d and Sinks = %d must be ≥ 0", cfg.Window, cfg.Sinks)
	case cfg.Prefault < 0:
		return nil, fmt.Errorf("engine: Prefault = %d, must be ≥ 0", cfg.Prefault)
	}
	var ev evicter
	if cfg.Window > 0 {
		var ok bool
		if ev, ok = c.(evicter); !ok {
			return nil, fmt.Errorf("engine: Window = %d needs a cache that can evict (%T cannot)", cfg.Window, c)
		}
	}
	e := &Engine{m: m, c: c, cfg: cfg, ev: ev, wake: make(chan struct{}, 1), exited: make(chan struct{}), yielder: newYielder()}
	if pf, ok := c.(prefaulter); ok && cfg.Prefault > 0 {
		e.pf = pf
	}
	e.stats.Cache = c.Usage()
	if gw, ok := c.(interface{ GroupWindows() []int }); ok {
		e.groupWindows = gw.GroupWindows()
	}
	if ps, ok := c.(poolStatser); ok {
		e.pool = ps
		p := ps.PoolStats()
		e.stats.Pool = p
		if pc, ok := c.(interface{ PrefixCaching() bool }); ok && pc.PrefixCaching() {
			e.prefixBlock = p.BlockTokens
		}
		if p.BlocksTotal > 0 && p.BlockTokens > 0 {
			e.blockTokens, e.blocksTotal = p.BlockTokens, p.BlocksTotal
			e.blockBytes, e.budget = int64(p.BlockBytes), e.stats.Cache.BudgetBytes
		}
		if cc, ok := c.(interface{ Config() kv.Config }); ok {
			if t, err := kv.SteadyTail(cc.Config()); err == nil {
				e.seqTail = t.Bytes
				e.workRow = int64(t.WorkRows) * int64(t.RowBytes)
			}
		}
	}
	go e.loop()
	return e, nil
}

// Submit queues a request and returns its stream. ctx governs the request's life:
// when it is cancelled the request ends at once (before the next step), its cache
// memory is freed, and Wait returns ctx's error. Submit never blocks on the
// scheduler (though a cache with tiers may first fetch the prompt's blocks, within
// its own time bound); it fails with ErrQueueFull when MaxQueue requests are waiting to start,
// ErrClosed after Close, ErrTooLarge or ErrBadRequest for requests that cannot run.
func (e *Engine) Submit(ctx context.Context, req Request) (*Stream, error) {
	ss, err := e.SubmitBatch(ctx, []Request{req})
	if err != nil {
		return nil, err
	}
	return ss[0], nil
}

// SubmitBatch queues several requests at once, as Submit does one: the scheduler
// sees all of them in the same step (offline workloads, benchmarks). Either every
// request is queued or, on error, none; they share ctx.
func (e *Engine) SubmitBatch(ctx context.Context, reqs []Request) ([]*Stream, error) {
	rs := make([]*request, len(reqs))
	for i, req := range reqs {
		r, err := e.newRequest(req)
		if err != nil {
			if len(reqs) > 1 {
				return nil, fmt.Errorf("request %d: %w", i, err)
			}
			return nil, err
		}
		r.stream = newStream(ctx)
		r.submitted = time.Now()
		rs[i] = r
	}
	if pf, ok := e.c.(prefetcher); ok {
		for _, r := range rs {
			if r.req.CacheSalt == "" { // salted prompts keep to their own blocks
				pf.Prefetch(ctx, r.prompt)
			}
		}
	}
	e.mu.Lock()
	switch {
	case e.closing:
		e.mu.Unlock()
		return nil, ErrClosed
	case len(rs) > e.cfg.MaxQueue:
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %d requests at once, but at most %d may wait to start (MaxQueue)", ErrTooLarge, len(rs), e.cfg.MaxQueue)
	case e.queued+len(rs) > e.cfg.MaxQueue:
		queued := e.queued
		e.mu.Unlock()
		return nil, fmt.Errorf("%w (%d requests waiting to start, room for %d)", ErrQueueFull, queued, e.cfg.MaxQueue-queued)
	}
	streams := make([]*Stream, len(rs))
	for i, r := range rs {
		e.queued++
		r.id = e.nextID
		e.nextID++
		// AfterFunc runs its function on its own goroutine, so registering it under
		// e.mu cannot deadlock; r is complete before the scheduler can see it.
		r.stopCancel = context.AfterFunc(ctx, func() {
			e.mu.Lock()
			e.cancels = append(e.cancels, r)
			e.mu.Unlock()
			e.poke()
		})
		e.incoming = append(e.incoming, r)
		streams[i] = r.stream
	}
	e.mu.Unlock()
	e.poke()
	return streams, nil
}

// poke wakes the scheduler.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Stats returns a snapshot of the engine's state, updated after every step.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Waiting += len(e.incoming)
	s.Queued, s.MaxQueue = e.queued, e.cfg.MaxQueue
	return s
}

// Close stops accepting requests and lets the ones in flight finish; if ctx ends
// first, the remaining requests are cancelled (their Wait returns ErrClosed). It
// returns when the scheduler has stopped, with ctx's error if it cut the wait short.
// After Close the model and cache belong to the caller again; sequences of cancelled
// requests have been dropped.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.poke()
	select {
	case <-e.exited:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	e.abort = true
	e.mu.Unlock()
	e.poke()
	<-e.exited
	return ctx.Err()
}
