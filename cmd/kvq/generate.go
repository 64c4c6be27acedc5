package main

import (
	"fmt"
	"io"
	"time"

	"kvq/eval"
	"kvq/kv"
	"kvq/model"
)

func init() {
	register("generate", "generate text, streamed as it is produced", runGenerate)
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", "Streams the continuation of --prompt. --temp 0 (the default) is greedy.", stderr)
	mf := addModelFlags(fs)
	prompt := fs.String("prompt", "Once upon a time", "prompt `TEXT`")
	n := fs.Int("n", 64, "maximum tokens to generate")
	temp := fs.Float64("temp", 0, "sampling temperature; 0 is greedy")
	topK := fs.Int("top-k", 40, "keep the K most likely tokens (with --temp > 0); 0 keeps all")
	topP := fs.Float64("top-p", 0.95, "nucleus sampling threshold (with --temp > 0); 1 keeps all")
	rep := fs.Float64("repeat-penalty", 1, "penalty > 1 for tokens seen in the last 64")
	seed := fs.Uint64("seed", 0, "random seed")
	cacheSpec := fs.String("cache", "f32", "KV cache `SPEC`, e.g. q8, kivi4/kivi2, q4:g=64 (kvq inspect lists the types)")
	cacheLayers := fs.String("cache-layers", "", "per-layer cache `OVERRIDES`, e.g. 0,-1=f16")
	stats := fs.Bool("stats", false, "print timing and cache figures to stderr at the end")
	tf := addThreadsFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *n < 0:
		return usagef(fs, "-n must be ≥ 0, got %d", *n)
	case !(*temp >= 0):
		return usagef(fs, "--temp must be ≥ 0 (0 is greedy), got %v", *temp)
	case *topK < 0:
		return usagef(fs, "--top-k must be ≥ 0 (0 keeps all), got %d", *topK)
	case !(*topP > 0 && *topP <= 1):
		return usagef(fs, "--top-p must be in (0, 1], got %v", *topP)
	case !(*rep > 0):
		return usagef(fs, "--repeat-penalty must be > 0 (1 is none), got %v", *rep)
	}
	workers, err := tf.apply(fs)
	if err != nil {
		return err
	}
	m, err := mf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	cfg, err := m.CacheConfig(*cacheSpec, *cacheLayers)
	if err != nil {
		return err
	}
	cfg.AttnWorkers = workers
	c, err := kv.New(cfg)
	if err != nil {
		return err
	}
	seq, err := c.NewSeq()
	if err != nil {
		return err
	}
	toks := m.Tok.Encode(*prompt, true)
	if len(toks) > m.Ctx {
		return fmt.Errorf("prompt is %d tokens, longer than the model's context of %d", len(toks), m.Ctx)
	}
	fmt.Fprint(stdout, *prompt)
	dec := m.Tok.NewStreamDecoder()
	s := model.NewSampler(model.SamplerConfig{Temp: float32(*temp), TopK: *topK, TopP: float32(*topP), RepeatPenalty: float32(*rep), Seed: *seed})
	t0 := time.Now()
	var first time.Duration
	out, err := m.Generate(c, seq, toks, *n, s, func(t int32) bool {
		if first == 0 {
			first = time.Since(t0)
		}
		fmt.Fprint(stdout, dec.Write(t))
		return true
	})
	fmt.Fprintln(stdout, dec.Flush())
	if err != nil {
		return err
	}
	if *stats {
		total := time.Since(t0)
		u := c.Usage()
		fmt.Fprintf(stderr, "prompt %d tokens, generated %d; first token %v; decode %.1f tok/s; cache %s: %d bytes (%.1f bytes/token)\n",
			len(toks), len(out), first.Round(time.Microsecond), float64(len(out)-1)/(total-first).Seconds(), eval.CacheName(cfg), u.AllocBytes, u.BytesPerToken)
	}
	return nil
}
