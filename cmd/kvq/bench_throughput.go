package main

import (
	"fmt"
	"io"

	"kvq/attn"
	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

func init() {
	registerBench("throughput", "replay synthetic requests through the batching engine (offline throughput)", runBenchThroughput)
}

// throughputReport is the JSON output of `kvq bench throughput`.
type throughputReport struct {
	Model               string  `json:"model"`
	Cache               string  `json:"cache"`
	CacheLayers         string  `json:"cache_layers,omitempty"`
	BlockTokens         int     `json:"block_tokens"`
	MaxBatchTokens      int     `json:"max_batch_tokens"`
	MaxRunning          int     `json:"max_running"`
	PrefillChunk        int     `json:"prefill_chunk"`
	LongPromptLen       int     `json:"long_prompt_len,omitempty"`
	Concurrency         int     `json:"concurrency,omitempty"`
	Window              int     `json:"window,omitempty"`
	Sinks               int     `json:"sinks,omitempty"`
	PrefixCaching       bool    `json:"prefix_caching"`
	SteadyBytesPerToken float64 `json:"steady_bytes_per_token"` // codes, scales and zeros of one token, all layers
	// SeqTail is what every sequence holds beyond its blocks (full-precision rows),
	// SeqBlockBytes the blocks of one sequence of prompt + generated tokens.
	SeqTail       kv.Tail `json:"seq_tail"`
	SeqBlockBytes int64   `json:"seq_block_bytes"`
	// Breakdown (--breakdown): wall µs per forward pass of each part (model.Part).
	Breakdown map[string]float64 `json:"breakdown_us_per_pass,omitempty"`
	// DecodeAttention counts the one-token queries of the replay and the key/value
	// rows they read, and how many were computed over blocks shared with others.
	DecodeAttention attn.BatchStats `json:"decode_attention"`
	engine.ThroughputResult
}

func runBenchThroughput(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench throughput", "Replays --requests synthetic requests through the continuous-batching engine under a KV byte budget and reports tokens/s, peak concurrency, preemptions, waste, prefix hit rate and bytes per token.", stderr)
	mf := addModelFlags(fs)
	cacheSpec := fs.String("cache", "f16", "KV cache `SPEC`, e.g. f16, q8, kivi4/kivi2")
	cacheLayers := fs.String("cache-layers", "", "per-layer cache `OVERRIDES`, e.g. 0,-1=f16")
	var budget byteSize
	fs.Var(&budget, "budget", "KV cache byte budget, e.g. 64MiB (0: unlimited)")
	blockTokens := fs.Int("block-tokens", 0, "tokens per cache block (0: the cache's default)")
	var prefault byteSize
	fs.Var(&prefault, "kv-prefault", "make `BYTES` of cache memory, its pages faulted in, before the run, as an idle kvq serve with --kv-prefault does (0: none, every block is fresh memory)")
	requests := fs.Int("requests", 32, "number of requests")
	promptLen := fs.Int("prompt-len", 128, "prompt tokens per request")
	genLen := fs.Int("gen-len", 128, "generated tokens per request (EOS ignored)")
	shared := fs.Int("shared-prefix", 0, "leading prompt tokens shared by every request")
	maxBatch := fs.Int("max-batch-tokens", engine.DefaultMaxBatchTokens, "most tokens per engine step (see --decode-step-tokens)")
	maxRunning := fs.Int("max-running", 256, "maximum concurrent sequences (≤ max-batch-tokens)")
	prefillChunk := fs.Int("prefill-chunk", 0, "most tokens of one sequence per step (0: max-batch-tokens)")
	decodeStep := fs.Int("decode-step-tokens", 0, fmt.Sprintf("most tokens of a step from which any request gets a token, bounding inter-token latency (0: max-batch-tokens when all requests are submitted at once, as offline; %d with --concurrency, as kvq serve)", engine.DefaultDecodeStepTokens))
	longPrefill := fs.Int("long-prefill-tokens", 0, "share of a step each pending prompt gets before any gets more (0: a quarter of --decode-step-tokens)")
	longRequests := fs.Int("long-requests", 0, "of the requests, this many have a prompt of --long-prompt-len tokens instead (spread evenly): a mixed workload")
	longPromptLen := fs.Int("long-prompt-len", 0, "prompt tokens of the --long-requests")
	concurrency := fs.Int("concurrency", 0, "submit requests from this many clients, each sending its next request when the previous one ends (0: all at once)")
	window := fs.Int("window", 0, "keep only the first --sinks and the last N tokens of every sequence (0: keep all)")
	sinks := fs.Int("sinks", 4, "attention-sink tokens kept with --window")
	noPrefix := fs.Bool("no-prefix-cache", false, "turn prefix caching off")
	seed := fs.Uint64("seed", 1, "seed of the synthetic prompts")
	jsonPath := fs.String("json", "", "also write the results as JSON to `FILE`")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the replay to `FILE`")
	breakdown := fs.Bool("breakdown", false, "also time each part of the forward passes (products, attention, logits, the rest) and print ms per pass")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *requests < 1:
		return usagef(fs, "--requests must be ≥ 1, got %d", *requests)
	case *promptLen < 1 || *genLen < 1:
		return usagef(fs, "--prompt-len and --gen-len must be ≥ 1, got %d and %d", *promptLen, *genLen)
	case *longRequests < 0 || *longRequests > *requests:
		return usagef(fs, "--long-requests must be in [0, requests = %d], got %d", *requests, *longRequests)
	case *longRequests > 0 && (*longPromptLen < 1 || *longPromptLen < *shared):
		return usagef(fs, "--long-prompt-len must be ≥ 1 and ≥ --shared-prefix with --long-requests, got %d", *longPromptLen)
	case *concurrency < 0:
		return usagef(fs, "--concurrency must be ≥ 0, got %d", *concurrency)
	case *decodeStep < 0 || *decodeStep > *maxBatch:
		return usagef(fs, "--decode-step-tokens must be in [0, max-batch-tokens = %d], got %d", *maxBatch, *decodeStep)
	case *longPrefill < 0:
		return usagef(fs, "--long-prefill-tokens must be ≥ 0, got %d", *longPrefill)
	case *shared < 0 || *shared > *promptLen:
		return usagef(fs, "--shared-prefix must be in [0, prompt-len = %d], got %d", *promptLen, *shared)
	case *blockTokens < 0:
		return usagef(fs, "--block-tokens must be ≥ 0, got %d", *blockTokens)
	}
	m, err := mf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	if *window == 0 && max(*promptLen, *longPromptLen)+*genLen > m.Ctx {
		return usagef(fs, "--prompt-len %d (--long-prompt-len %d) + --gen-len %d exceeds the model's context of %d tokens", *promptLen, *longPromptLen, *genLen, m.Ctx)
	}
	cfg, err := m.CacheConfig(*cacheSpec, *cacheLayers)
	if err != nil {
		return err
	}
	cfg.BudgetBytes = int64(budget)
	cfg.BlockTokens = *blockTokens
	cfg.NoPrefixCache = *noPrefix
	c, err := kv.New(cfg)
	if err != nil {
		return err
	}
	steady, err := kv.BytesPerToken(cfg)
	if err != nil {
		return err
	}
	tail, err := kv.SteadyTail(cfg)
	if err != nil {
		return err
	}
	seqBytes, err := kv.SteadyBytes(cfg, *promptLen+*genLen)
	if err != nil {
		return err
	}
	if *decodeStep == 0 && *concurrency == 0 {
		*decodeStep = *maxBatch // offline: throughput first
	}
	ecfg := engine.Config{MaxBatchTokens: *maxBatch, MaxRunning: min(*maxRunning, *maxBatch), PrefillChunk: *prefillChunk,
		DecodeStepTokens: *decodeStep, LongPrefillTokens: *longPrefill, Prefault: int64(prefault)}
	if *window > 0 {
		ecfg.Window, ecfg.Sinks = *window, *sinks
	}
	bar := newProgress(stderr, "bench throughput", "tokens", 1)
	total := *requests * *genLen
	var generated int
	ecfg.OnStep = func(si engine.StepInfo) {
		generated += si.Sampled
		bar.update(generated, total)
	}
	var timings model.Timings
	if *breakdown {
		m.Timings = &timings
		defer func() { m.Timings = nil }()
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	res, err := engine.Throughput(m, c, engine.ThroughputConfig{
		Requests: *requests, PromptLen: *promptLen, GenLen: *genLen, SharedPrefix: *shared, Seed: *seed, Engine: ecfg,
		LongRequests: *longRequests, LongPromptLen: *longPromptLen, Concurrency: *concurrency,
	})
	stopProfile()
	bar.done()
	if err != nil {
		return err
	}
	rep := throughputReport{
		Model: modelName(mf.path), Cache: cfg.Spec.String(), CacheLayers: *cacheLayers,
		BlockTokens: c.PoolStats().BlockTokens, MaxBatchTokens: ecfg.MaxBatchTokens, MaxRunning: ecfg.MaxRunning, PrefillChunk: *prefillChunk,
		LongPromptLen: *longPromptLen, Concurrency: *concurrency,
		Window: ecfg.Window, Sinks: ecfg.Sinks, PrefixCaching: c.PrefixCaching(),
		SteadyBytesPerToken: steady, SeqTail: tail, SeqBlockBytes: seqBytes - tail.Bytes, ThroughputResult: res,
		DecodeAttention: c.AttendStats(),
	}
	budgetText := "unlimited"
	if rep.BudgetBytes > 0 {
		budgetText = fmtBytes(rep.BudgetBytes)
	}
	fmt.Fprintf(stdout, "model %s, cache %s, budget %s, %d requests × (%d prompt [%d shared] + %d generated) tokens\n",
		rep.Model, rep.Cache, budgetText, res.Requests, res.PromptLen, res.SharedPrefix, res.GenLen)
	fmt.Fprintf(stdout, "throughput      %.1f generated tok/s, %.1f total tok/s, %.2f req/s (%.2f s, %d steps, %.2f CPU ms per generated token)\n",
		res.TokensPerS, res.TotalTokensPerS, res.RequestsPerS, res.Seconds, res.Steps, res.CPUMsPerToken)
	fmt.Fprintf(stdout, "steps           %d tokens, %d beside decodes, %d per prompt before any gets more\n", rep.MaxBatchTokens, res.DecodeStepTokens, res.LongPrefillTokens)
	fmt.Fprintf(stdout, "concurrency     peak %d, mean %.1f sequences; %d preemptions\n", res.PeakConcurrency, res.MeanConcurrency, res.Preemptions)
	fmt.Fprintf(stdout, "prefill         %d prompt tokens: %d computed (recomputation included), %d from the prefix cache\n",
		res.PromptTokens, res.PrefillTokens, res.ReusedTokens)
	fmt.Fprintf(stdout, "cache pool      utilization mean %.1f%% peak %.1f%%, waste %.2f%% of used block slots, span copies peak %s",
		100*res.MeanUtilization, 100*res.PeakUtilization, 100*res.WasteFrac, fmtBytes(res.PeakGatherBytes))
	if res.PrefaultBytes > 0 {
		fmt.Fprintf(stdout, ", %s prefaulted before the run", fmtBytes(res.PrefaultBytes))
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "memory          %.1f bytes/token held (steady state %.1f)\n", res.BytesPerToken, steady)
	fmt.Fprintf(stdout, "per sequence    %s of blocks at %d tokens (%d per block) + tail %s = %.2f of the blocks\n",
		fmtBytes(rep.SeqBlockBytes), *promptLen+*genLen, rep.BlockTokens, tailText(tail), float64(tail.Bytes)/float64(rep.SeqBlockBytes))
	fmt.Fprintf(stdout, "prefix cache    hit rate %.1f%% of prompt tokens, %.1f%% of shared-prefix tokens\n", 100*res.PrefixHitRate, 100*res.SharedHitRate)
	if da := rep.DecodeAttention; da.Queries > 0 {
		fmt.Fprintf(stdout, "decode attn     %.1f%% of queries over shared blocks; rows read %.1f%% of those attended over\n",
			100*float64(da.SharedQueries)/float64(da.Queries), 100*float64(da.Rows)/float64(max(1, da.AttendedRows)))
	}
	fmt.Fprintf(stdout, "latency         mean time to first token %.1f ms, inter-token %.2f ms\n", res.MeanTTFTms, res.MeanITLms)
	latencyLine := func(name string, l engine.Latencies) {
		fmt.Fprintf(stdout, "%-15s TTFT p50 %.1f p99 %.1f max %.1f ms; ITL p50 %.2f p99 %.2f max %.2f ms (%d requests)\n",
			name, l.TTFT.P50, l.TTFT.P99, l.TTFT.Max, l.ITL.P50, l.ITL.P99, l.ITL.Max, l.TTFT.Count)
	}
	if res.Long == nil {
		latencyLine("percentiles", res.Short)
	} else {
		latencyLine(fmt.Sprintf("short (%d tok)", res.PromptLen), res.Short)
		latencyLine(fmt.Sprintf("long (%d tok)", *longPromptLen), *res.Long)
	}
	if *breakdown {
		rep.Breakdown = breakdownMicros(&timings)
		fmt.Fprintf(stdout, "per pass (%d)   ", timings.Passes)
		for p := range model.NumParts {
			fmt.Fprintf(stdout, " %s %.2f ms", p, rep.Breakdown[p.String()]/1e3)
		}
		fmt.Fprintln(stdout)
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rep)
	}
	return nil
}
