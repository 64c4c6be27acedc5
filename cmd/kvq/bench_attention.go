package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"kvq/attn"
	"kvq/internal/membw"
	"kvq/internal/procstat"
	"kvq/internal/workpool"
	"kvq/kv"
	"kvq/quant"
	"kvq/synth"
)

func init() {
	registerBench("attention", "time decode attention over a filled cache: GB/s of cache bytes and fraction of read bandwidth", runBenchAttention)
}

// attentionReport is the JSON output of `kvq bench attention`.
type attentionReport struct {
	Cache        string  `json:"cache"`
	Ctx          int     `json:"ctx"`
	Heads        int     `json:"heads"`
	KVHeads      int     `json:"kv_heads"`
	HeadDim      int     `json:"head_dim"`
	Threads      int     `json:"threads"` // goroutines per step (the caller included)
	Kernels      string  `json:"kernels"` // attn.KernelName()
	Steps        int     `json:"steps"`
	Warm         bool    `json:"warm"`                      // the layer's bytes stayed in the CPU caches between steps
	StepMicros   float64 `json:"step_us"`                   // wall time of one decode step of one layer
	CPUMicros    float64 `json:"cpu_us_per_step,omitempty"` // process CPU time per step (all threads; warm only)
	TokPerS      float64 `json:"tok_per_s"`                 // steps per second (one layer)
	CacheBytes   int64   `json:"cache_bytes"`               // K and V bytes of the layer, read once per step
	GBPerS       float64 `json:"gb_per_s"`                  // cache bytes read per second, 1e9 bytes
	BandwidthGBs float64 `json:"bandwidth_gb_per_s"`
	FracOfBW     float64 `json:"frac_of_bandwidth"`
	// Cold runs only: the read bandwidth of the reads between the steps (all their
	// bytes over all their time), which share the steps' minutes: this machine's
	// bandwidth moved between about 45 and 78 GB/s from one minute to the next.
	BetweenGBs    float64 `json:"bandwidth_between_steps_gb_per_s,omitempty"`
	FracOfBetween float64 `json:"frac_of_bandwidth_between_steps,omitempty"`
	BlockTokens   int     `json:"block_tokens"` // in force
	// With --vs-block-tokens or --vs-cache: the same steps over a second cache (blocks
	// of VsBlockTokens, spec VsCache), timed in alternate turns of every round;
	// StepRatio is the median over the rounds of this round's step time over theirs
	// (min and max beside it).
	VsBlockTokens int     `json:"vs_block_tokens,omitempty"`
	VsCache       string  `json:"vs_cache,omitempty"`
	VsStepMicros  float64 `json:"vs_step_us,omitempty"`
	StepRatio     float64 `json:"step_ratio,omitempty"`
	StepRatioMin  float64 `json:"step_ratio_min,omitempty"`
	StepRatioMax  float64 `json:"step_ratio_max,omitempty"`
}

func runBenchAttention(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench attention", "Times decode attention alone (one layer, one query token) over a filled cache and reports GB/s of cache bytes read against the read bandwidth measured in the same run. --shape takes a model's heads instead of --heads, --kv-heads and --head-dim.", stderr)
	cacheSpec := fs.String("cache", "q8", "KV cache `SPEC`, e.g. f32, q8, kivi4/kivi2")
	ctx := fs.Int("ctx", 32768, "history length in tokens (the decode token included)")
	heads := fs.Int("heads", 32, "query heads")
	kvHeads := fs.Int("kv-heads", 8, "key/value heads")
	headDim := fs.Int("head-dim", 64, "values per head")
	shapeName := fs.String("shape", "", "`NAME`: take the heads, KV heads and head size of a model shape kvq synth knows ("+strings.Join(synth.ShapeNames(), ", ")+") instead")
	threads := fs.Int("threads", 0, "goroutines per step: 0 = automatic (all CPUs for long histories), 1 = one")
	blockTokens := fs.Int("block-tokens", 0, "tokens per cache block (0: the cache's default)")
	vsBlockTokens := fs.Int("vs-block-tokens", 0, "also time a cache of blocks of `N` tokens, the same history, in alternate turns of every round, and report the step time as a ratio to it (A/B in one run)")
	vsCache := fs.String("vs-cache", "", "also time a cache of `SPEC` (with --vs-block-tokens, of those blocks), the same history, in alternate turns of every round, and report the step time as a ratio to it (A/B in one run)")
	minTime := fs.Duration("time", 2*time.Second, "measuring time")
	warm := fs.Bool("warm", false, "repeat steps back to back, the layer's bytes left in the CPU caches; by default each step first reads a buffer of twice the last-level cache, as decode reads the other layers and the weights between two reads of a layer")
	rounds := fs.Int("rounds", 10, "rounds of steps (--time in all), each followed by a pass measuring the read bandwidth")
	noSIMD := fs.Bool("no-simd", false, "use the portable scalar kernels")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed steps to `FILE` (without --warm it also holds the reads between steps, in membw.Sum)")
	jsonPath := fs.String("json", "", "also write the results as JSON to `FILE`")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *shapeName != "" {
		sh, ok := synth.Lookup(*shapeName)
		if !ok {
			return usagef(fs, "--shape %q: unknown shape (known: %s)", *shapeName, strings.Join(synth.ShapeNames(), ", "))
		}
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "heads" || f.Name == "kv-heads" || f.Name == "head-dim" {
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return usagef(fs, "--shape %s sets the heads, KV heads and head size: drop %s", *shapeName, strings.Join(set, " and "))
		}
		*heads, *kvHeads, *headDim = sh.Heads, sh.KVHeads, sh.HeadDim()
	}
	switch {
	case *ctx < 1:
		return usagef(fs, "--ctx must be ≥ 1, got %d", *ctx)
	case *heads < 1 || *kvHeads < 1 || *headDim < 1 || *heads%*kvHeads != 0:
		return usagef(fs, "--heads %d must be a positive multiple of --kv-heads %d, and --head-dim %d positive", *heads, *kvHeads, *headDim)
	case *threads < 0:
		return usagef(fs, "--threads must be ≥ 0, got %d", *threads)
	case *blockTokens < 0 || *vsBlockTokens < 0:
		return usagef(fs, "--block-tokens and --vs-block-tokens must be ≥ 0")
	case *minTime <= 0 || *rounds < 1:
		return usagef(fs, "--time must be positive and --rounds ≥ 1")
	}
	spec, err := kv.ParseSpec(*cacheSpec)
	if err != nil {
		return err
	}
	vsSpec := spec
	if *vsCache != "" {
		if vsSpec, err = kv.ParseSpec(*vsCache); err != nil {
			return fmt.Errorf("--vs-cache: %w", err)
		}
	}
	if *noSIMD {
		attn.SetSIMD(false)
		defer attn.SetSIMD(true)
	}
	// A llama RoPE (base 10000 over the whole head) for specs that store keys before it.
	freqs := make([]float64, *headDim/2)
	for j := range freqs {
		freqs[j] = math.Pow(10000, -2*float64(j)/float64(*headDim))
	}
	rope, err := quant.NewRoPE(freqs, false)
	if err != nil {
		return fmt.Errorf("bench attention: head size %d: %w", *headDim, err)
	}
	// One filled cache, and a second one with --vs-block-tokens or --vs-cache.
	type target struct {
		st *kv.Store
		id kv.SeqID
	}
	var targets []target
	for i, B := range []int{*blockTokens, *vsBlockTokens} {
		sp := spec
		if i > 0 {
			if B == 0 && *vsCache == "" {
				break
			}
			sp = vsSpec
		}
		st, err := kv.New(kv.Config{Layers: 1, Heads: *heads, KVHeads: *kvHeads, HeadDim: *headDim, Spec: sp,
			BlockTokens: B, AttnWorkers: *threads, RoPE: rope})
		if err != nil {
			return err
		}
		id, err := st.NewSeq()
		if err != nil {
			return err
		}
		if err := fillRandom(st, id, *ctx, *kvHeads**headDim); err != nil {
			return err
		}
		targets = append(targets, target{st, id})
	}
	st := targets[0].st
	r := rand.New(rand.NewPCG(2, uint64(*ctx)))
	q := make([]float32, *heads**headDim)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	out := make([]float32, len(q))
	for range 3 { // warm up: the worker pool, caches, page tables
		for _, t := range targets {
			if err := t.st.Attend(0, t.id, q, out); err != nil {
				return err
			}
		}
	}
	nThreads := *threads
	if nThreads == 0 {
		nThreads = 1
		if *ctx >= attn.ParallelMinTokens {
			nThreads = attn.DefaultWorkers()
		}
	}
	var evict func()
	var evictBytes int64
	if !*warm {
		var release func()
		evict, evictBytes, release = cacheEvicter(nThreads)
		defer release()
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	// Rounds of steps, --time in all, every round followed by a pass reading a
	// buffer of four times the last-level cache on as many threads, so that the steps and the
	// bandwidth meet the same minutes of a shared machine; the figures are medians
	// over the rounds, the fraction the median of the rounds' own fractions. Only the
	// steps are timed (not the evictions); process CPU time is measured over the
	// warm loop only: its counters are too coarse to time single steps between
	// evictions.
	bwBytes := 4 * membw.LastLevelCache()
	if bwBytes <= 0 {
		bwBytes = defaultBandwidthBuffer
	}
	buf, free := membw.Buffer(bwBytes)
	defer free()
	cacheBytes := st.Usage().AllocBytes
	steps := 0
	var wall, between, cpu time.Duration
	var stepGBs, bwGBs, fracs []float64
	var vsSteps int
	var vsWall time.Duration
	var ratios []float64
	for round := range *rounds {
		// With two targets their steps alternate one by one (each after its own
		// eviction), so that both meet the same moments of a shared machine.
		var n [2]int
		var w [2]time.Duration
		cpu0 := procstat.CPU()
		for r0 := time.Now(); n[0] < 3 || time.Since(r0) < *minTime/time.Duration(*rounds); {
			first := round + n[0] // which target goes first alternates
			for turn := range targets {
				ti := (turn + first) % len(targets)
				t := targets[ti]
				if evict != nil {
					e0 := time.Now()
					evict()
					between += time.Since(e0)
				}
				w0 := time.Now()
				if err := t.st.Attend(0, t.id, q, out); err != nil {
					return err
				}
				w[ti] += time.Since(w0)
				n[ti]++
			}
		}
		cpu += procstat.CPU() - cpu0
		steps, wall = steps+n[0], wall+w[0]
		stepGBs = append(stepGBs, float64(cacheBytes)*float64(n[0])/w[0].Seconds()/1e9)
		if len(targets) > 1 {
			vsSteps, vsWall = vsSteps+n[1], vsWall+w[1]
			ratios = append(ratios, (w[0].Seconds()/float64(n[0]))/(w[1].Seconds()/float64(n[1])))
		}
		b := membw.Read(buf, nThreads, 0)
		bwGBs = append(bwGBs, b)
		if b > 0 {
			fracs = append(fracs, stepGBs[len(stepGBs)-1]/b)
		}
	}
	stopProfile()
	bw := median(bwGBs)
	rep := attentionReport{
		Cache: spec.String(), Ctx: *ctx, Heads: *heads, KVHeads: *kvHeads, HeadDim: *headDim,
		Threads: nThreads, Kernels: attn.KernelName(), Steps: steps, Warm: *warm,
		StepMicros: float64(wall.Microseconds()) / float64(steps),
		TokPerS:    float64(steps) / wall.Seconds(),
		CacheBytes: cacheBytes, BlockTokens: st.Config().BlockTokens,
	}
	if len(targets) > 1 {
		rep.VsBlockTokens = targets[1].st.Config().BlockTokens
		if *vsCache != "" {
			rep.VsCache = vsSpec.String()
		}
		rep.VsStepMicros = float64(vsWall.Microseconds()) / float64(vsSteps)
		rep.StepRatio, rep.StepRatioMin, rep.StepRatioMax = median(ratios), slices.Min(ratios), slices.Max(ratios)
	}
	if *warm {
		rep.CPUMicros = float64(cpu.Microseconds()) / float64(steps+vsSteps) // both targets' steps
	}
	rep.GBPerS = median(stepGBs)
	rep.BandwidthGBs = bw
	if len(fracs) > 0 {
		rep.FracOfBW = median(fracs)
	}
	if between > 0 {
		rep.BetweenGBs = float64(evictBytes) * float64(steps+vsSteps) / between.Seconds() / 1e9
		rep.FracOfBetween = rep.GBPerS / rep.BetweenGBs
	}
	state := "cold: each step reads the layer from memory, as decode does"
	if rep.Warm {
		state = "warm: steps back to back, the layer in the CPU caches where it fits"
	}
	fmt.Fprintf(stdout, "cache %s, ctx %d, %d heads / %d kv heads × %d, blocks of %d tokens, %d thread(s), kernels %s\n",
		rep.Cache, rep.Ctx, rep.Heads, rep.KVHeads, rep.HeadDim, rep.BlockTokens, rep.Threads, rep.Kernels)
	fmt.Fprintf(stdout, "caches          %s\n", state)
	cpuNote := ""
	if rep.CPUMicros > 0 {
		cpuNote = fmt.Sprintf(", %.1f µs CPU", rep.CPUMicros)
	}
	fmt.Fprintf(stdout, "step            %.1f µs wall%s (%d steps): %.1f tok/s per layer\n", rep.StepMicros, cpuNote, steps, rep.TokPerS)
	fmt.Fprintf(stdout, "cache read      %s per step at %.2f GB/s (median of %d rounds, %.2f–%.2f)\n", fmtBytes(rep.CacheBytes), rep.GBPerS, len(stepGBs), slices.Min(stepGBs), slices.Max(stepGBs))
	fmt.Fprintf(stdout, "read bandwidth  %.2f GB/s with %d thread(s), a pass after each round (%.2f–%.2f): the rounds' median fraction %.1f%%\n", bw, nThreads, slices.Min(bwGBs), slices.Max(bwGBs), 100*rep.FracOfBW)
	if rep.Warm {
		fmt.Fprintln(stdout, "                (warm: a layer that fits in the CPU caches is read from them, faster than from memory)")
	}
	if rep.VsBlockTokens > 0 {
		vs := fmt.Sprintf("vs blocks of %-3d", rep.VsBlockTokens)
		if rep.VsCache != "" {
			vs = fmt.Sprintf("vs %s, blocks of %d:", rep.VsCache, rep.VsBlockTokens)
		}
		fmt.Fprintf(stdout, "%s %.1f µs wall (%d steps, alternate turns): step time ratio %.3f (median of %d rounds, %.3f–%.3f)\n",
			vs, rep.VsStepMicros, vsSteps, rep.StepRatio, len(ratios), rep.StepRatioMin, rep.StepRatioMax)
	}
	if rep.BetweenGBs > 0 {
		fmt.Fprintf(stdout, "between steps   %.2f GB/s read by the same threads in the reads between the steps: %.1f%% of it\n", rep.BetweenGBs, 100*rep.FracOfBetween)
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rep)
	}
	return nil
}

// cacheEvicter returns evict, which reads a buffer of twice the last-level cache (64
// MiB where its size is unknown) on threads goroutines of the worker pool, so that
// the next step finds none of the layer's bytes in the CPU caches and the pool's
// helpers are as awake as after a matrix product; the bytes it reads; and release,
// which frees the buffer.
func cacheEvicter(threads int) (evict func(), bytes int64, release func()) {
	size := 2 * membw.LastLevelCache()
	if size <= 0 {
		size = 64 << 20
	}
	buf, free := membw.Buffer(size)
	const run = 1 << 15 // words per item: 256 KiB
	items := max(1, len(buf)/run)
	var sink atomic.Uint64
	return func() {
		workpool.ForRuns(threads, items, func(i0, i1 int) {
			hi := i1 * run
			if i1 == items {
				hi = len(buf) // the last item takes the rest
			}
			sink.Add(membw.Sum(buf[i0*run : hi]))
		})
	}, 8 * int64(len(buf)), free
}

// fillRandom appends ctx tokens of random keys and values (rowLen = kvHeads·headDim
// values each) to layer 0 of sequence id: ctx−1 tokens of history in chunks, then
// the decode token in a step of its own (the step Attend then computes).
func fillRandom(st *kv.Store, id kv.SeqID, ctx, rowLen int) error {
	const chunk = 512
	r := rand.New(rand.NewPCG(1, uint64(ctx)))
	k := make([]float32, chunk*rowLen)
	v := make([]float32, chunk*rowLen)
	for i := range k {
		k[i] = float32(r.NormFloat64())
		v[i] = float32(r.NormFloat64())
	}
	tok := make([]int32, chunk)
	for n := 0; n < ctx; {
		m := min(chunk, ctx-1-n)
		if n == ctx-1 {
			m = 1
		}
		if err := st.Grow(id, tok[:m]); err != nil {
			return fmt.Errorf("filling the cache at token %d: %w", n, err)
		}
		if err := st.Append(0, id, k[:m*rowLen], v[:m*rowLen]); err != nil {
			return fmt.Errorf("filling the cache at token %d: %w", n, err)
		}
		n += m
	}
	return nil
}
