package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"

	"kvq/eval"
	"kvq/internal/procstat"
	"kvq/kv"
	"kvq/linalg"
	"kvq/model"
)

func init() {
	registerBench("decode", "fill the cache to N tokens, then time decode (tok/s) and report memory", runBenchDecode)
}

// decodeResult is the JSON contract of `kvq bench decode --json`.
type decodeResult struct {
	Model          string  `json:"model"`
	Cache          string  `json:"cache"`
	Ctx            int     `json:"ctx"`
	Threads        int     `json:"threads"`
	Kernels        string  `json:"kernels"`
	DecodeTokens   int     `json:"decode_tokens"`
	DecodeTokPerS  float64 `json:"decode_tok_per_s"`
	PrefillTokPerS float64 `json:"prefill_tok_per_s"`
	KVBytes        int64   `json:"kv_bytes"`
	WeightBytes    int64   `json:"weight_bytes"`
	RSSBytes       int64   `json:"rss_bytes"`
	// Where resident memory is at the end of the run (KV at its largest): Go heap
	// objects (the KV blocks included), and the resident anonymous and file-backed
	// pages (the mapped weights and the binary are file-backed). 0 where unknown.
	HeapBytes    int64 `json:"heap_bytes"`
	RSSAnonBytes int64 `json:"rss_anon_bytes"`
	RSSFileBytes int64 `json:"rss_file_bytes"`
}

func runBenchDecode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench decode", "[--model F] [--cache SPEC] [--ctx N] [--gen N] [--chunk N] [--pass N] [--threads T] [--json F]", stderr)
	modelPath := fs.String("model", "", "GGUF model file (default: built-in stories260K)")
	spec := fs.String("cache", "f16", "KV cache spec")
	layers := fs.String("cache-layers", "", "per-layer cache overrides, e.g. 0,-1=f16")
	ctx := fs.Int("ctx", 512, "tokens in the cache before decode is timed (may exceed the trained context: speed only)")
	gen := fs.Int("gen", 32, "decode steps timed")
	chunk := fs.Int("chunk", 512, "prefill chunk, tokens per forward step while filling")
	pass := fs.Int("pass", 0, "most tokens a forward step runs through the layers at once (model PassTokens; 0: the model's default)")
	threads := fs.Int("threads", 0, "threads for matrix products and attention (default: all CPUs)")
	seed := fs.Uint64("seed", 1, "seed of the random prompt tokens")
	jsonPath := fs.String("json", "", "also write the result as JSON to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the timed decode steps to this file")
	tracePath := fs.String("trace", "", "write a runtime execution trace of the timed decode steps to this file (go tool trace: where threads wait between parallel loops)")
	memProfile := fs.String("memprofile", "", "write a pprof heap profile to this file after the timed decode steps (the cache at its largest)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096 // sites of small per-step garbage too, not only of large buffers
	}
	if *ctx < 1 || *gen < 1 || *chunk < 1 || *pass < 0 {
		return fmt.Errorf("--ctx, --gen and --chunk must be ≥ 1, --pass ≥ 0")
	}
	if *threads > 0 {
		if err := linalg.SetThreads(*threads); err != nil {
			return err
		}
	}
	m, err := model.Open(*modelPath)
	if err != nil {
		return err
	}
	defer m.Close()
	m.PassTokens = *pass
	cfg, err := m.CacheConfig(*spec, *layers)
	if err != nil {
		return err
	}
	cfg.AttnWorkers = linalg.Threads()
	c, err := kv.New(cfg)
	if err != nil {
		return err
	}
	seq, err := c.NewSeq()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	toks := make([]int32, *ctx)
	toks[0] = m.Tok.BOS()
	for i := 1; i < len(toks); i++ {
		toks[i] = int32(rng.IntN(m.Vocab))
	}
	bar := newProgress(stderr, "prefill")
	t0 := time.Now()
	var logits [][]float32
	for i := 0; i < len(toks); i += *chunk {
		if logits, err = m.Forward(c, []model.Span{{Seq: seq, Tokens: toks[i:min(i+*chunk, len(toks))]}}); err != nil {
			return err
		}
		bar.update(min(i+*chunk, len(toks)), len(toks))
	}
	bar.done()
	prefill := time.Since(t0)
	next := model.Argmax(logits[0])
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
	t0 = time.Now()
	for range *gen {
		if logits, err = m.Forward(c, []model.Span{{Seq: seq, Tokens: []int32{next}}}); err != nil {
			return err
		}
		next = model.Argmax(logits[0])
	}
	decode := time.Since(t0)
	stopProfile()
	stopTrace()
	res := decodeResult{
		Model: modelName(*modelPath), Cache: eval.CacheName(cfg), Ctx: *ctx, Threads: linalg.Threads(), Kernels: linalg.KernelName(),
		DecodeTokens: *gen, DecodeTokPerS: float64(*gen) / decode.Seconds(), PrefillTokPerS: float64(*ctx) / prefill.Seconds(),
		KVBytes: c.Usage().AllocBytes, WeightBytes: m.WeightBytes(), RSSBytes: procstat.PeakRSS(),
		HeapBytes: heapObjectBytes(),
	}
	res.RSSAnonBytes, res.RSSFileBytes = procstat.RSS()
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			return err
		}
		runtime.KeepAlive(c) // the profile must see the cache, which is not used after
	}
	fmt.Fprintf(stdout, "model %s, cache %s, %d threads (%s kernels)\n", res.Model, res.Cache, res.Threads, res.Kernels)
	fmt.Fprintf(stdout, "prefill %d tokens: %.1f tok/s\n", res.Ctx, res.PrefillTokPerS)
	fmt.Fprintf(stdout, "decode %d tokens at context %d: %.1f tok/s (%.2f ms/token)\n", res.DecodeTokens, res.Ctx, res.DecodeTokPerS, 1000/res.DecodeTokPerS)
	fmt.Fprintf(stdout, "memory: weights %s, KV %s, peak RSS %s (%.2fx weights+KV)\n", fmtBytes(res.WeightBytes), fmtBytes(res.KVBytes), fmtBytes(res.RSSBytes), float64(res.RSSBytes)/float64(res.WeightBytes+res.KVBytes))
	if res.RSSAnonBytes+res.RSSFileBytes > 0 {
		fmt.Fprintf(stdout, "memory at end: Go heap objects %s (KV %s, other %s), RSS anonymous %s, file-backed %s\n",
			fmtBytes(res.HeapBytes), fmtBytes(res.KVBytes), fmtBytes(res.HeapBytes-res.KVBytes), fmtBytes(res.RSSAnonBytes), fmtBytes(res.RSSFileBytes))
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
	}
	return nil
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
