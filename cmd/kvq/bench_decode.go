package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"kvq/attn"
	"kvq/eval"
	"kvq/internal/procstat"
	"kvq/kv"
	"kvq/linalg"
	"kvq/model"
)

func init() {
	registerBench("decode", "fill the cache to N tokens, then time decode (tok/s) and report memory", runBenchDecode)
}

// decodeResult is the JSON contract of `kvq bench decode --json`: one object, or
// an array of them in cache order when several caches are compared.
type decodeResult struct {
	Model          string  `json:"model"`
	Cache          string  `json:"cache"`
	Ctx            int     `json:"ctx"`
	Threads        int     `json:"threads"`
	Kernels        string  `json:"kernels"`      // the products' (linalg.KernelName)
	AttnKernels    string  `json:"attn_kernels"` // attention's (attn.KernelName)
	DecodeTokens   int     `json:"decode_tokens"`
	DecodeTokPerS  float64 `json:"decode_tok_per_s"` // median of the rounds
	PrefillTokPerS float64 `json:"prefill_tok_per_s"`
	// PrefillGMACs: the prefill's multiply-adds in weight products per second (the
	// layers' for every token, the output projection's for the last), in 10⁹.
	PrefillGMACs float64 `json:"prefill_gmac_per_s"`
	// DecodeWeightGBs: the weight bytes one decode step reads, times steps per second,
	// in 10⁹ bytes per second (against the machine's read bandwidth: kvq bench bandwidth).
	DecodeWeightGBs float64 `json:"decode_weight_gb_per_s"`
	KVBytes         int64   `json:"kv_bytes"`
	// KVLayerTokens: per layer, the token slots of the blocks the sequence holds
	// at the end (a layer with an attention window keeps about its window's).
	KVLayerTokens []int `json:"kv_layer_tokens"`
	WeightBytes   int64 `json:"weight_bytes"`
	// PreloadedBytes: the weight bytes copied into memory at load (the rest mapped;
	// see --mmap).
	PreloadedBytes int64 `json:"weight_preloaded_bytes"`
	// RSSBytes is the process's peak; it holds every compared cache.
	RSSBytes int64 `json:"rss_bytes"`
	// Where resident memory is at the end of the run (KV at its largest): Go heap
	// objects (the cache's full-precision tails included, its blocks not: they are
	// mapped outside the heap), and the resident anonymous pages (blocks included)
	// and file-backed ones (the mapped weights and the binary). 0 where unknown.
	HeapBytes    int64 `json:"heap_bytes"`
	RSSAnonBytes int64 `json:"rss_anon_bytes"`
	RSSFileBytes int64 `json:"rss_file_bytes"`
	// Rounds: decode tok/s of each round (--gen steps each). VsFirst: the median
	// decode tok/s over the first cache's (the ratio of the medians the table shows);
	// VsFirstRange: the least and greatest ratio of this cache's tok/s to the first
	// cache's within one round, the spread a busy machine puts on VsFirst.
	Rounds       []float64  `json:"decode_tok_per_s_rounds"`
	VsFirst      float64    `json:"decode_vs_first"`
	VsFirstRange [2]float64 `json:"decode_vs_first_round_range"`
	// CPUMsPerToken: the process's CPU time (all threads) per decode token, the
	// median over the rounds (0 where unknown), which other processes on a busy
	// machine disturb less than wall time; VsFirstCPU: the first cache's over this
	// one's, a speed ratio as VsFirst.
	CPUMsPerToken float64 `json:"decode_cpu_ms_per_token"`
	VsFirstCPU    float64 `json:"decode_vs_first_cpu,omitempty"`
	// Breakdown (--breakdown): wall time per decode token of each part of the forward
	// pass, in µs, keyed by model.Part names.
	Breakdown map[string]float64 `json:"breakdown_us_per_token,omitempty"`
}

// decodeRun is one compared cache: its store, sequence and timings.
type decodeRun struct {
	spec    string
	cfg     kv.Config
	c       *kv.Store
	seq     kv.SeqID
	next    int32         // the token the next decode step feeds
	prefill time.Duration // total of its prefill chunks
	rounds  []float64     // decode tok/s per round
	cpu     []float64     // process CPU ms per decode token, per round
	timings model.Timings // its timed decode steps' parts (--breakdown)
}

func runBenchDecode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench decode", "Fills the cache to --ctx tokens (prefill tok/s), then times single-token decode (tok/s) and reports KV bytes and peak RSS. Repeat --cache to compare caches in one run: they take turns, --rounds of --gen steps each, and the table gives each one's median tok/s, its range and the median of its per-round ratios to the first cache.", stderr)
	mf := addModelFlags(fs)
	var specs listFlag
	fs.Var(&specs, "cache", "KV cache `SPEC` (default f16); repeat it to compare caches in one run, interleaved")
	layers := fs.String("cache-layers", "", "per-layer cache `OVERRIDES`, e.g. 0,-1=f16")
	ctx := fs.Int("ctx", 512, "tokens in the cache before decode is timed (may exceed the trained context: speed only)")
	gen := fs.Int("gen", 32, "decode steps timed per round")
	rounds := fs.Int("rounds", 0, "rounds of --gen decode steps per cache, the caches taking turns (0: 1 with one cache, 5 with several)")
	chunk := fs.Int("chunk", 512, "prefill chunk, tokens per forward step while filling")
	pass := fs.Int("pass", 0, "most tokens a forward step runs through the layers at once (model PassTokens; 0: the model's default)")
	tf := addThreadsFlag(fs)
	seed := fs.Uint64("seed", 1, "seed of the random prompt tokens")
	jsonPath := fs.String("json", "", "also write the result as JSON to `FILE`")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the timed decode steps to `FILE` (one cache)")
	breakdown := fs.Bool("breakdown", false, "also time each part of the decode steps (products, attention, logits, the rest) and print µs per token")
	tracePath := fs.String("trace", "", "write a runtime execution trace of the timed decode steps to `FILE` (one cache; go tool trace: where threads wait between parallel loops)")
	memProfile := fs.String("memprofile", "", "write a pprof heap profile to `FILE` after the timed decode steps (the cache's blocks are outside the Go heap: not in it)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(specs) == 0 {
		specs = listFlag{"f16"}
	}
	if *rounds == 0 {
		*rounds = 1
		if len(specs) > 1 {
			*rounds = 5
		}
	}
	if *ctx < 1 || *gen < 1 || *chunk < 1 || *pass < 0 || *rounds < 1 {
		return usagef(fs, "--ctx, --gen, --chunk and --rounds must be ≥ 1, --pass ≥ 0")
	}
	if len(specs) > 1 && (*cpuProfile != "" || *tracePath != "") {
		return usagef(fs, "--cpuprofile and --trace record one cache: give one --cache (got %d)", len(specs))
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096 // sites of small per-step garbage too, not only of large buffers
	}
	if _, err := tf.apply(fs); err != nil {
		return err
	}
	m, err := mf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	m.PassTokens = *pass
	runs := make([]*decodeRun, len(specs))
	for i, spec := range specs {
		cfg, err := m.CacheConfig(spec, *layers)
		if err != nil {
			return err
		}
		cfg.AttnWorkers = linalg.Threads()
		c, err := kv.New(cfg)
		if err != nil {
			return fmt.Errorf("cache %s: %w", spec, err)
		}
		seq, err := c.NewSeq()
		if err != nil {
			return fmt.Errorf("cache %s: %w", spec, err)
		}
		runs[i] = &decodeRun{spec: spec, cfg: cfg, c: c, seq: seq}
	}
	toks := randomPrompt(m, *ctx, *seed)
	// Prefill chunk by chunk, the caches taking turns, so that they meet the same
	// machine (this VM's speed drifts by tens of percent within a minute).
	bar := newProgress(stderr, "prefill", "tokens", 1)
	for i := 0; i < len(toks); i += *chunk {
		for _, r := range runs {
			t0 := time.Now()
			logits, err := m.Forward(r.c, []model.Span{{Seq: r.seq, Tokens: toks[i:min(i+*chunk, len(toks))]}})
			if err != nil {
				return fmt.Errorf("cache %s: %w", r.spec, err)
			}
			r.prefill += time.Since(t0)
			r.next = model.Argmax(logits[0])
		}
		bar.update(min(i+*chunk, len(toks)), len(toks))
	}
	bar.done()
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	stopTrace, err := startTrace(*tracePath)
	if err != nil {
		return err
	}
	defer stopTrace()
	for round := range *rounds {
		// The caches take turns in one order, then in the reverse order, so that no
		// cache always follows the same one.
		order := slices.Clone(runs)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, r := range order {
			if *breakdown {
				m.Timings = &r.timings
			}
			t0, c0 := time.Now(), procstat.CPU()
			for range *gen {
				logits, err := m.Forward(r.c, []model.Span{{Seq: r.seq, Tokens: []int32{r.next}}})
				if err != nil {
					return fmt.Errorf("cache %s: %w", r.spec, err)
				}
				r.next = model.Argmax(logits[0])
			}
			r.rounds = append(r.rounds, float64(*gen)/time.Since(t0).Seconds())
			r.cpu = append(r.cpu, float64((procstat.CPU()-c0).Microseconds())/1e3/float64(*gen))
		}
	}
	m.Timings = nil
	stopProfile()
	stopTrace()
	peak, heap := procstat.PeakRSS(), heapObjectBytes()
	anon, file := procstat.RSS()
	res := make([]decodeResult, len(runs))
	for i, r := range runs {
		ratios := make([]float64, len(r.rounds))
		for k, v := range r.rounds {
			ratios[k] = v / runs[0].rounds[k]
		}
		res[i] = decodeResult{
			Model: modelName(mf.path), Cache: eval.CacheName(r.cfg), Ctx: *ctx, Threads: linalg.Threads(), Kernels: linalg.KernelName(), AttnKernels: attn.KernelName(),
			DecodeTokens: *gen * *rounds, DecodeTokPerS: median(r.rounds), PrefillTokPerS: float64(*ctx) / r.prefill.Seconds(),
			PrefillGMACs:    prefillMACs(m, *ctx, *chunk) / r.prefill.Seconds() / 1e9,
			DecodeWeightGBs: float64(m.DecodeWeightBytes()) * median(r.rounds) / 1e9,
			KVBytes:         r.c.Usage().AllocBytes, WeightBytes: m.WeightBytes(), PreloadedBytes: m.PreloadedBytes(), RSSBytes: peak,
			HeapBytes: heap, RSSAnonBytes: anon, RSSFileBytes: file,
			Rounds: r.rounds, VsFirst: median(r.rounds) / median(runs[0].rounds), VsFirstRange: [2]float64{slices.Min(ratios), slices.Max(ratios)},
			CPUMsPerToken: median(r.cpu),
		}
		if c := median(r.cpu); c > 0 {
			res[i].VsFirstCPU = median(runs[0].cpu) / c
		}
		if res[i].KVLayerTokens, err = r.c.LayerTokens(r.seq); err != nil {
			return err
		}
		if *breakdown {
			res[i].Breakdown = breakdownMicros(&r.timings)
		}
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			return err
		}
		runtime.KeepAlive(runs) // the profile must see the caches, which are not used after
	}
	var out any = res
	if len(res) == 1 {
		printDecode(stdout, res[0])
		out = res[0]
	} else {
		printDecodeTable(stdout, res, *rounds, *gen)
	}
	if *breakdown {
		printBreakdown(stdout, res)
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, out)
	}
	return nil
}

// printDecode prints the result of one cache.
func printDecode(w io.Writer, res decodeResult) {
	fmt.Fprintf(w, "model %s, cache %s, %d threads (%s kernels, attention %s)\n", res.Model, res.Cache, res.Threads, res.Kernels, res.AttnKernels)
	fmt.Fprintf(w, "prefill %d tokens: %.1f tok/s, %.1f GMAC/s in weight products\n", res.Ctx, res.PrefillTokPerS, res.PrefillGMACs)
	fmt.Fprintf(w, "decode %d tokens at context %d: %.1f tok/s (%.2f ms/token, weights read at %.1f GB/s)", res.DecodeTokens, res.Ctx, res.DecodeTokPerS, 1000/res.DecodeTokPerS, res.DecodeWeightGBs)
	if len(res.Rounds) > 1 {
		fmt.Fprintf(w, ", median of %d rounds (%.1f to %.1f)", len(res.Rounds), slices.Min(res.Rounds), slices.Max(res.Rounds))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "memory: weights %s (%s copied into memory), KV %s, peak RSS %s (%.2fx weights+KV)\n", fmtBytes(res.WeightBytes), fmtBytes(res.PreloadedBytes), fmtBytes(res.KVBytes), fmtBytes(res.RSSBytes), float64(res.RSSBytes)/float64(res.WeightBytes+res.KVBytes))
	fmt.Fprintf(w, "KV blocks held at the end, per layer: %s\n", layerTokensText(res.KVLayerTokens))
	if res.RSSAnonBytes+res.RSSFileBytes > 0 {
		fmt.Fprintf(w, "memory at end: RSS anonymous %s (the copied weights and KV blocks, outside the Go heap, and Go heap objects %s), file-backed %s (the binary; the weights' mapping)\n",
			fmtBytes(res.RSSAnonBytes), fmtBytes(res.HeapBytes), fmtBytes(res.RSSFileBytes))
	}
}

// printDecodeTable prints the comparison of several caches: decode speed as the
// median over rounds and its range, and against the first cache as the ratio of the
// medians with the range of the per-round ratios (the rounds alternate caches, so
// each of those compares runs a few seconds apart).
func printDecodeTable(w io.Writer, res []decodeResult, rounds, gen int) {
	r0 := res[0]
	fmt.Fprintf(w, "model %s, context %d, %d threads (%s kernels, attention %s): %d rounds of %d decode steps per cache, the caches taking turns\n\n",
		r0.Model, r0.Ctx, r0.Threads, r0.Kernels, r0.AttnKernels, rounds, gen)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cache\tKV\tprefill tok/s\tdecode tok/s\tmin\tmax\tvs %s\tround ratios\tCPU ms/tok\tvs by CPU\t\n", r0.Cache)
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.3fx\t%.2f–%.2f\t%.2f\t%.3fx\t\n", r.Cache, fmtBytes(r.KVBytes), r.PrefillTokPerS, r.DecodeTokPerS, slices.Min(r.Rounds), slices.Max(r.Rounds), r.VsFirst, r.VsFirstRange[0], r.VsFirstRange[1], r.CPUMsPerToken, r.VsFirstCPU)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nvs %s: median decode tok/s over %s's; round ratios: the least and greatest ratio within one round\n", r0.Cache, r0.Cache)
	fmt.Fprintf(w, "CPU ms/tok: the process's CPU time per decode token, all threads (KVQ_SPIN=0 keeps idle workers from polling), median of the rounds; vs by CPU: %s's over this one's\n", r0.Cache)
	fmt.Fprintf(w, "memory: weights %s, every cache above held at once, peak RSS %s\n", fmtBytes(r0.WeightBytes), fmtBytes(r0.RSSBytes))
}

// breakdownMicros returns t's parts in µs per pass (one pass per decode token).
func breakdownMicros(t *model.Timings) map[string]float64 {
	out := make(map[string]float64, model.NumParts)
	for p := range model.NumParts {
		out[p.String()] = float64(t.Parts[p].Nanoseconds()) / 1e3 / float64(max(1, t.Passes))
	}
	return out
}

// printBreakdown prints each cache's decode time per token by part of the forward
// pass: µs, and the share of the parts' total.
func printBreakdown(w io.Writer, res []decodeResult) {
	fmt.Fprintln(w, "\ndecode time per token by part (wall µs; the parts' share of their total):")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "cache\t")
	for p := range model.NumParts {
		fmt.Fprintf(tw, "%s\t", p)
	}
	fmt.Fprintln(tw, "total\t")
	for _, r := range res {
		var total float64
		for p := range model.NumParts {
			total += r.Breakdown[p.String()]
		}
		fmt.Fprintf(tw, "%s\t", r.Cache)
		for p := range model.NumParts {
			us := r.Breakdown[p.String()]
			fmt.Fprintf(tw, "%.0f (%.0f%%)\t", us, 100*us/max(total, 1e-9))
		}
		fmt.Fprintf(tw, "%.0f\t\n", total)
	}
	tw.Flush()
}

// randomPrompt is n prompt tokens for a benchmark: BOS, then tokens drawn uniformly
// from the vocabulary by a PCG seeded with seed.
func randomPrompt(m *model.Model, n int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 0))
	toks := make([]int32, n)
	toks[0] = m.Tok.BOS()
	for i := 1; i < n; i++ {
		toks[i] = int32(rng.IntN(m.Vocab))
	}
	return toks
}

// prefillMACs is the multiply-adds in weight products of a prefill of n tokens in
// chunks of chunk tokens: the layers' for every token, the output projection's for
// each chunk's last token.
func prefillMACs(m *model.Model, n, chunk int) float64 {
	layers, output := m.MACs()
	chunks := (n + max(1, chunk) - 1) / max(1, chunk)
	return float64(layers)*float64(n) + float64(output)*float64(chunks)
}

// median is the middle value of xs (the mean of the two middle ones for an even
// count); xs is not modified and must not be empty.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// startCPUProfile starts a pprof CPU profile written to path (see record).
func startCPUProfile(path string) (stop func(), err error) {
	return record(path, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace starts a runtime execution trace written to path (see record).
func startTrace(path string) (stop func(), err error) {
	return record(path, "trace", trace.Start, trace.Stop)
}

// record starts a recording into a new file at path through start; stop ends it
// through end and closes the file, once (later calls do nothing). An empty path
// records nothing and stop does nothing.
func record(path, what string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var once sync.Once
	return func() { once.Do(func() { end(); f.Close() }) }, nil
}

// heapObjectBytes is the size of the Go heap's objects, live or not yet swept
// (runtime/metrics /memory/classes/heap/objects:bytes).
func heapObjectBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// writeHeapProfile writes a pprof heap profile of the live objects after a
// garbage collection (so that it is current, not as of the last cycle).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}

// layerTokensText summarizes per-layer token counts: "22 layers 528 tokens, 4
// layers 8224 tokens", values in order of first appearance.
func layerTokensText(toks []int) string {
	var vals []int
	n := map[int]int{}
	for _, t := range toks {
		if n[t] == 0 {
			vals = append(vals, t)
		}
		n[t]++
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprintf("%d layers %d tokens", n[v], v)
	}
	return strings.Join(parts, ", ")
}
