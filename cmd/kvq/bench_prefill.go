package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"kvq/attn"
	"kvq/eval"
	"kvq/internal/procstat"
	"kvq/kv"
	"kvq/linalg"
	"kvq/model"
)

func init() {
	registerBench("prefill", "time prompt processing of N tokens into an empty sequence, as llama-bench -p N does", runBenchPrefill)
}

// prefillResult is the JSON contract of `kvq bench prefill --json`.
type prefillResult struct {
	Model       string `json:"model"`
	Cache       string `json:"cache"`
	Tokens      int    `json:"tokens"`
	Threads     int    `json:"threads"`
	Kernels     string `json:"kernels"`      // the products' (linalg.KernelName)
	AttnKernels string `json:"attn_kernels"` // attention's (attn.KernelName)
	// TokPerS: the median over the rounds of tokens per second; Rounds: each round's.
	TokPerS float64   `json:"tok_per_s"`
	Rounds  []float64 `json:"tok_per_s_rounds"`
	// GMACs: the multiply-adds in weight products per second at the median, in 10⁹.
	GMACs float64 `json:"gmac_per_s"`
	// CPUMsPerToken: the process's CPU time over the timed rounds per token, in ms
	// (with 2 threads at most twice the wall time; less when threads wait).
	CPUMsPerToken float64 `json:"cpu_ms_per_token"`
	// Breakdown (--breakdown): wall time of each part of the forward pass per
	// prefill, in ms, keyed by model.Part names.
	Breakdown map[string]float64 `json:"breakdown_ms_per_prefill,omitempty"`
}

func runBenchPrefill(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench prefill", "Times the prompt processing of --tokens random tokens into an empty sequence, one forward call each, as llama-bench -p N -n 0 does: one untimed warm-up prefill, then --rounds timed ones, each into a fresh sequence of one cache (its blocks reused, as llama-bench reuses its context). Reports the median tok/s and the range.", stderr)
	mf := addModelFlags(fs)
	spec := fs.String("cache", "f16", "KV cache `SPEC`")
	tokens := fs.Int("tokens", 512, "prompt tokens per prefill")
	rounds := fs.Int("rounds", 5, "timed prefills")
	pass := fs.Int("pass", 0, "most tokens a forward step runs through the layers at once (model PassTokens; 0: the model's default)")
	tf := addThreadsFlag(fs)
	seed := fs.Uint64("seed", 1, "seed of the random prompt tokens")
	jsonPath := fs.String("json", "", "also write the result as JSON to `FILE`")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the timed prefills to `FILE`")
	breakdown := fs.Bool("breakdown", false, "also time each part of the forward pass (products, attention, the rest) and print ms per prefill")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *tokens < 1 || *rounds < 1 || *pass < 0 {
		return usagef(fs, "--tokens and --rounds must be ≥ 1, --pass ≥ 0")
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
	cfg, err := m.CacheConfig(*spec, "")
	if err != nil {
		return err
	}
	cfg.AttnWorkers = linalg.Threads()
	c, err := kv.New(cfg)
	if err != nil {
		return fmt.Errorf("cache %s: %w", *spec, err)
	}
	toks := randomPrompt(m, *tokens, *seed)
	// prefill runs the prompt into a new sequence and drops it after.
	prefill := func() (time.Duration, error) {
		seq, err := c.NewSeq()
		if err != nil {
			return 0, err
		}
		defer c.Drop(seq)
		t0 := time.Now()
		if _, err := m.Forward(c, []model.Span{{Seq: seq, Tokens: toks}}); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	if _, err := prefill(); err != nil { // warm-up: first-use tables, the cache's blocks
		return fmt.Errorf("cache %s: %w", *spec, err)
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var timings model.Timings
	if *breakdown {
		m.Timings = &timings
	}
	res := prefillResult{Model: modelName(mf.path), Cache: eval.CacheName(cfg), Tokens: *tokens, Threads: linalg.Threads(),
		Kernels: linalg.KernelName(), AttnKernels: attn.KernelName()}
	cpu0 := procstat.CPU()
	for range *rounds {
		d, err := prefill()
		if err != nil {
			return fmt.Errorf("cache %s: %w", *spec, err)
		}
		res.Rounds = append(res.Rounds, float64(*tokens)/d.Seconds())
	}
	res.CPUMsPerToken = float64(procstat.CPU()-cpu0) / 1e6 / float64(*tokens**rounds)
	m.Timings = nil
	stopProfile()
	res.TokPerS = median(res.Rounds)
	res.GMACs = prefillMACs(m, *tokens, *tokens) * res.TokPerS / float64(*tokens) / 1e9
	if *breakdown {
		res.Breakdown = make(map[string]float64, model.NumParts)
		for p := range model.NumParts {
			res.Breakdown[p.String()] = float64(timings.Parts[p].Nanoseconds()) / 1e6 / float64(*rounds)
		}
	}
	printPrefill(stdout, res)
	if *jsonPath != "" {
		return writeJSON(*jsonPath, res)
	}
	return nil
}

// printPrefill prints a prefill result: the median and range of the rounds, and
// the breakdown when there is one.
func printPrefill(w io.Writer, res prefillResult) {
	fmt.Fprintf(w, "model %s, cache %s, %d threads (%s kernels, attention %s)\n", res.Model, res.Cache, res.Threads, res.Kernels, res.AttnKernels)
	fmt.Fprintf(w, "prefill %d tokens: %.1f tok/s, median of %d rounds (%.1f to %.1f), %.1f GMAC/s in weight products, %.3f CPU-ms per token\n",
		res.Tokens, res.TokPerS, len(res.Rounds), slices.Min(res.Rounds), slices.Max(res.Rounds), res.GMACs, res.CPUMsPerToken)
	if res.Breakdown == nil {
		return
	}
	fmt.Fprint(w, "wall ms per prefill by part:")
	for p := range model.NumParts {
		fmt.Fprintf(w, " %s %.1f", p, res.Breakdown[p.String()])
	}
	fmt.Fprintln(w)
}
