package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"kvq/internal/procstat"
	"kvq/kv"
	"kvq/model"
)

// ThroughputConfig describes a throughput run: Requests synthetic requests, each a
// prompt of PromptLen token ids (LongPromptLen for LongRequests of them, spread
// evenly) followed by exactly GenLen greedy tokens (EOS ignored). All are submitted
// at once (offline), or with Concurrency > 0 by that many clients that each submit
// their next request when the previous one ends (a serving benchmark's closed loop).
type ThroughputConfig struct {
	Requests      int
	PromptLen     int // tokens per prompt, BOS included when the model adds one
	GenLen        int // tokens generated per request
	SharedPrefix  int // the first SharedPrefix prompt tokens are the same in every request
	LongRequests  int // requests with a prompt of LongPromptLen tokens instead
	LongPromptLen int
	Concurrency   int // requests in flight at most; 0: all submitted at once
	Seed          uint64
	Engine        Config // MaxQueue is raised to Requests if smaller
}

// Latency is the distribution of one latency over a run's requests, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// LatencyOf summarizes ds (it sorts them); the percentiles are nearest-rank.
func LatencyOf(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	rank := func(q float64) time.Duration { return ds[max(0, int(math.Ceil(q*float64(len(ds))))-1)] }
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Latency{Count: len(ds), Mean: millis(sum) / float64(len(ds)), P50: millis(rank(0.5)), P99: millis(rank(0.99)), Max: millis(ds[len(ds)-1])}
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// Latencies are the time to first token (from Submit) and the inter-token latency
// (between consecutive tokens of a request) of a class of requests.
type Latencies struct {
	TTFT Latency `json:"ttft"`
	ITL  Latency `json:"itl"`
}

// ThroughputResult holds the figures of a throughput run. Rates are per second of
// wall time from the first Submit to the last request's end.
type ThroughputResult struct {
	Requests        int     `json:"requests"`
	PromptLen       int     `json:"prompt_len"`
	GenLen          int     `json:"gen_len"`
	SharedPrefix    int     `json:"shared_prefix"`
	BudgetBytes     int64   `json:"budget_bytes"`
	Seconds         float64 `json:"seconds"`
	PromptTokens    int64   `json:"prompt_tokens"`
	GeneratedTokens int64   `json:"generated_tokens"`
	PrefillTokens   int64   `json:"prefill_tokens"` // prompt and recomputed tokens actually computed
	ReusedTokens    int64   `json:"reused_tokens"`  // prompt and recomputation tokens taken from the prefix cache
	TokensPerS      float64 `json:"tokens_per_s"`   // generated tokens per second
	TotalTokensPerS float64 `json:"total_tokens_per_s"`
	RequestsPerS    float64 `json:"requests_per_s"`
	Steps           int64   `json:"steps"`
	// DecodeStepTokens and LongPrefillTokens are the engine's, defaults resolved.
	DecodeStepTokens  int     `json:"decode_step_tokens"`
	LongPrefillTokens int     `json:"long_prefill_tokens"`
	PeakConcurrency   int     `json:"peak_concurrency"` // most sequences in one step's batch
	MeanConcurrency   float64 `json:"mean_concurrency"` // over steps
	Preemptions       int64   `json:"preemptions"`
	// Utilization is the cache's allocated bytes over its budget, mean and peak over
	// steps (0 without a budget).
	MeanUtilization float64 `json:"mean_utilization"`
	PeakUtilization float64 `json:"peak_utilization"`
	// WasteFrac is the mean over steps of unused token slots in the blocks in use
	// divided by the token slots of those blocks (needs a cache with PoolStats).
	WasteFrac float64 `json:"waste_frac"`
	// PeakGatherBytes is the most memory held for copies of spans whose blocks are
	// scattered in the pool (kv.PoolStats.GatherBytes), counted in the budget.
	PeakGatherBytes int64 `json:"peak_gather_bytes"`
	// CPUMsPerToken is the process's CPU time (all threads) during the run per
	// generated token: less moved than the rates by other processes on a shared
	// machine (0 where the CPU time is unknown).
	CPUMsPerToken float64 `json:"cpu_ms_per_token"`
	// PrefaultBytes is the block memory made ahead of the run (Engine.Prefault):
	// the cache as a server leaves it after idle time.
	PrefaultBytes int64   `json:"prefault_bytes,omitempty"`
	PrefixHitRate float64 `json:"prefix_hit_rate"` // prompt tokens served from the prefix cache
	// SharedHitRate is the cached prompt tokens over the shared-prefix tokens of all
	// requests (the first request cannot hit: at most (Requests−1)/Requests).
	SharedHitRate float64 `json:"shared_prefix_hit_rate"`
	// BytesPerToken is the mean over steps of allocated bytes per token held.
	BytesPerToken float64 `json:"bytes_per_token"`
	MeanTTFTms    float64 `json:"mean_ttft_ms"`
	MeanITLms     float64 `json:"mean_itl_ms"`
	// Short and Long: latencies of the requests with PromptLen and with
	// LongPromptLen tokens.
	Short Latencies  `json:"short"`
	Long  *Latencies `json:"long,omitempty"`
}

// poolStatser is implemented by caches that report block pool figures (kv.Store).
type poolStatser interface{ PoolStats() kv.PoolStats }

// SyntheticPrompts returns n prompts of length p drawn deterministically from seed:
// token ids uniform over the model's vocabulary except control tokens, BOS first when
// the model adds one; the first s tokens are the same in every prompt.
func SyntheticPrompts(m *model.Model, n, p, s int, seed uint64) ([][]int32, error) {
	if n < 1 || p < 1 || s < 0 || s > p {
		return nil, fmt.Errorf("engine: synthetic prompts: want n ≥ 1, p ≥ 1, 0 ≤ s ≤ p; got n=%d p=%d s=%d", n, p, s)
	}
	var pool []int32
	for id := range int32(m.Vocab) {
		if !m.Tok.IsControl(id) {
			pool = append(pool, id)
		}
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("engine: synthetic prompts: the vocabulary has only control tokens")
	}
	rng := rand.New(rand.NewPCG(seed, 0x70726f6d7074))
	draw := func(dst []int32) {
		for i := range dst {
			dst[i] = pool[rng.IntN(len(pool))]
		}
	}
	shared := make([]int32, s)
	draw(shared)
	if s > 0 && m.Tok.AddBOS() {
		shared[0] = m.Tok.BOS()
	}
	out := make([][]int32, n)
	for i := range out {
		pr := make([]int32, p)
		copy(pr, shared)
		draw(pr[s:])
		if s == 0 && m.Tok.AddBOS() {
			pr[0] = m.Tok.BOS()
		}
		out[i] = pr
	}
	return out, nil
}

// Throughput runs tc's workload through a new engine over m and c and measures it.
// The engine is closed before Throughput returns; c is left empty of sequences.
func Throughput(m *model.Model, c kv.Cache, tc ThroughputConfig) (ThroughputResult, error) {
	res := ThroughputResult{Requests: tc.Requests, PromptLen: tc.PromptLen, GenLen: tc.GenLen, SharedPrefix: tc.SharedPrefix}
	switch {
	case tc.GenLen < 1:
		return res, fmt.Errorf("engine: throughput: gen-len %d must be ≥ 1", tc.GenLen)
	case tc.LongRequests < 0 || tc.LongRequests > tc.Requests:
		return res, fmt.Errorf("engine: throughput: %d long requests, want 0 to %d", tc.LongRequests, tc.Requests)
	case tc.LongRequests > 0 && tc.LongPromptLen < tc.SharedPrefix:
		return res, fmt.Errorf("engine: throughput: long prompts of %d tokens, want at least the %d shared", tc.LongPromptLen, tc.SharedPrefix)
	case tc.Concurrency < 0:
		return res, fmt.Errorf("engine: throughput: concurrency %d must be ≥ 0", tc.Concurrency)
	}
	prompts, err := SyntheticPrompts(m, tc.Requests, tc.PromptLen, tc.SharedPrefix, tc.Seed)
	if err != nil {
		return res, err
	}
	long := make([]bool, len(prompts))
	if tc.LongRequests > 0 {
		lp, err := SyntheticPrompts(m, tc.LongRequests, tc.LongPromptLen, tc.SharedPrefix, tc.Seed^0x6c6f6e67)
		if err != nil {
			return res, err
		}
		for j, p := range lp {
			copy(p, prompts[0][:tc.SharedPrefix]) // the short prompts' shared prefix
			// The j-th long request is the last of the j-th of LongRequests equal runs.
			i := (j+1)*tc.Requests/tc.LongRequests - 1
			prompts[i], long[i] = p, true
		}
	}
	ps, _ := c.(poolStatser)
	var (
		steps            int
		sumRun, sumUtil  float64
		peakRun          int
		peakUtil         float64
		sumWaste, sumBPT float64
		nWaste, nBPT     int
	)
	cfg := tc.Engine
	if cfg.MaxQueue < tc.Requests {
		cfg.MaxQueue = tc.Requests
	}
	userStep := cfg.OnStep
	cfg.OnStep = func(si StepInfo) {
		steps++
		sumRun += float64(si.Running)
		peakRun = max(peakRun, si.Running)
		if si.Cache.BudgetBytes > 0 {
			u := float64(si.Cache.AllocBytes) / float64(si.Cache.BudgetBytes)
			sumUtil += u
			peakUtil = max(peakUtil, u)
		}
		if si.Cache.Tokens > 0 {
			sumBPT += float64(si.Cache.AllocBytes) / float64(si.Cache.Tokens)
			nBPT++
		}
		if ps != nil {
			p := ps.PoolStats()
			if p.BlocksUsed > 0 {
				sumWaste += float64(p.WasteTokens) / float64(p.BlocksUsed*p.BlockTokens)
				nWaste++
			}
			res.PeakGatherBytes = max(res.PeakGatherBytes, p.GatherBytes)
		}
		if userStep != nil {
			userStep(si)
		}
	}
	if pf, ok := c.(prefaulter); ok && cfg.Prefault > 0 {
		// All of it before the clock starts, as an idle server would have.
		for pf.Prefault(cfg.Prefault, time.Second) {
		}
		if ps != nil {
			res.PrefaultBytes = ps.PoolStats().PrefaultBytes
		}
	}
	e, err := New(m, c, cfg)
	if err != nil {
		return res, err
	}
	res.DecodeStepTokens, res.LongPrefillTokens = e.cfg.DecodeStepTokens, e.cfg.LongPrefillTokens
	// Token times per request, written on the scheduler goroutine (OnToken) and read
	// after the request's Wait.
	times := make([][]time.Time, len(prompts))
	reqs := make([]Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = Request{Prompt: p, MaxTokens: tc.GenLen, IgnoreEOS: true,
			OnToken: func(Event) { times[i] = append(times[i], time.Now()) }}
	}
	var (
		mu       sync.Mutex
		firstErr error
		lat      [2]struct{ ttft, itl []time.Duration } // short, long
	)
	record := func(i int, r Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("engine: throughput: request %d: %w", i, err)
			}
			return
		}
		l := &lat[0]
		if long[i] {
			l = &lat[1]
		}
		l.ttft = append(l.ttft, r.TimeToFirstToken)
		for k := 1; k < len(times[i]); k++ {
			l.itl = append(l.itl, times[i][k].Sub(times[i][k-1]))
		}
	}
	t0, cpu0 := time.Now(), procstat.CPU()
	if tc.Concurrency == 0 {
		streams, err := e.SubmitBatch(context.Background(), reqs)
		if err != nil {
			e.Close(context.Background())
			return res, fmt.Errorf("engine: throughput: %w", err)
		}
		for i, s := range streams {
			r, err := s.Wait()
			record(i, r, err)
		}
	} else {
		next := make(chan int, len(reqs))
		for i := range reqs {
			next <- i
		}
		close(next)
		var wg sync.WaitGroup
		for range min(tc.Concurrency, len(reqs)) {
			wg.Go(func() {
				for i := range next {
					s, err := e.Submit(context.Background(), reqs[i])
					if err != nil {
						record(i, Result{}, err)
						continue
					}
					r, err := s.Wait()
					record(i, r, err)
				}
			})
		}
		wg.Wait()
	}
	secs, cpu := time.Since(t0).Seconds(), procstat.CPU()-cpu0
	if err := e.Close(context.Background()); err != nil && firstErr == nil {
		firstErr = err
	}
	st := e.Stats()
	res.BudgetBytes = st.Cache.BudgetBytes
	res.Seconds = secs
	res.PromptTokens, res.GeneratedTokens, res.PrefillTokens = st.PromptTokens, st.GeneratedTokens, st.PrefillTokens
	res.ReusedTokens = st.ReusedTokens
	res.TokensPerS = float64(st.GeneratedTokens) / secs
	if st.GeneratedTokens > 0 {
		res.CPUMsPerToken = millis(cpu) / float64(st.GeneratedTokens)
	}
	res.TotalTokensPerS = float64(st.GeneratedTokens+st.PromptTokens) / secs
	res.RequestsPerS = float64(st.Completed) / secs
	res.Steps, res.Preemptions = st.Steps, st.Preemptions
	res.PeakConcurrency = peakRun
	res.PrefixHitRate = st.PrefixHitRate()
	if tc.SharedPrefix > 0 {
		res.SharedHitRate = float64(st.CachedPromptTokens) / float64(tc.Requests*tc.SharedPrefix)
	}
	if steps > 0 {
		res.MeanConcurrency = sumRun / float64(steps)
		res.MeanUtilization = sumUtil / float64(steps)
	}
	res.PeakUtilization = peakUtil
	if nWaste > 0 {
		res.WasteFrac = sumWaste / float64(nWaste)
	}
	if nBPT > 0 {
		res.BytesPerToken = sumBPT / float64(nBPT)
	}
	if st.TTFTCount > 0 {
		res.MeanTTFTms = millis(st.TTFTSum) / float64(st.TTFTCount)
	}
	if st.ITLCount > 0 {
		res.MeanITLms = millis(st.ITLSum) / float64(st.ITLCount)
	}
	res.Short = Latencies{LatencyOf(lat[0].ttft), LatencyOf(lat[0].itl)}
	if tc.LongRequests > 0 {
		res.Long = &Latencies{LatencyOf(lat[1].ttft), LatencyOf(lat[1].itl)}
	}
	return res, firstErr
}
