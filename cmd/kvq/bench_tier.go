package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"kvq/kv"
	"kvq/kv/tier"
	"kvq/model"
)

func init() {
	registerBench("tier", "GB/s of cache blocks fetched from each KV tier against the prefill they replace", runBenchTier)
}

// tierReport is the JSON output of `kvq bench tier`.
type tierReport struct {
	Cache          string      `json:"cache"`
	Tokens         int         `json:"tokens"`       // prompt tokens fetched or computed per run
	BlockBytes     int         `json:"block_bytes"`  // one block as the cache stores it
	RecordBytes    int         `json:"record_bytes"` // one block as a tier stores it
	PrefillTokPerS []float64   `json:"prefill_tok_per_s"`
	Tiers          []tierPoint `json:"tiers"`
}

type tierPoint struct {
	Tier      string    `json:"tier"`
	GBPerS    []float64 `json:"gb_per_s"` // record bytes fetched per second, 1e9
	TokPerS   []float64 `json:"tok_per_s"`
	VsPrefill float64   `json:"vs_prefill"` // median tokens/s fetched ÷ median prefill tokens/s
}

// keepOpen is a tier that one measuring Cache after another uses: closing a Cache
// does not close it.
type keepOpen struct{ tier.Tier }

func (keepOpen) Close() error { return nil }

func runBenchTier(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench tier", "Fills the KV tiers with a prompt's blocks, then measures, in turn, computing the prompt (prefill) and fetching its blocks from each tier into an empty cache: GB/s of records and tokens/s against the prefill rate.", stderr)
	mf := addModelFlags(fs)
	tf := addThreadsFlag(fs)
	cacheSpec := fs.String("cache", "q8", "KV cache `SPEC`")
	blockTokens := fs.Int("block-tokens", 0, "tokens per cache block (0: the cache's default)")
	tokens := fs.Int("tokens", 1536, "prompt tokens per run")
	reps := fs.Int("reps", 3, "runs of each measurement, interleaved")
	var specs listFlag
	fs.Var(&specs, "kv-tier", "tier `SPEC` to measure (disk:DIR, redis://HOST:PORT, redis-cluster://HOST:PORT[,HOST:PORT...]); repeatable (default: a temporary directory)")
	jsonPath := fs.String("json", "", "also write the results as JSON to `FILE`")
	if err := parse(fs, args); err != nil {
		return err
	}
	workers, err := tf.apply(fs)
	if err != nil {
		return err
	}
	if *reps < 1 {
		return usagef(fs, "--reps must be ≥ 1, got %d", *reps)
	}
	if len(specs) == 0 {
		dir, err := os.MkdirTemp("", "kvq-bench-tier-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		specs = append(specs, "disk:"+dir)
	}
	m, err := mf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	if *tokens < 2 || *tokens > m.Ctx {
		return usagef(fs, "--tokens must be in [2, %d] (the model's context), got %d", m.Ctx, *tokens)
	}
	cfg, err := m.CacheConfig(*cacheSpec, "")
	if err != nil {
		return err
	}
	cfg.AttnWorkers, cfg.BlockTokens = workers, *blockTokens
	newStore := func() (*kv.Store, error) { return kv.New(cfg) }
	probe, err := newStore()
	if err != nil {
		return err
	}
	if !probe.PrefixCaching() {
		return usagef(fs, "--cache %s: prefix caching is off, so no block can be shared", *cacheSpec)
	}
	var tiers []tier.Tier
	for _, s := range specs {
		t, err := tier.Open(s)
		if err != nil {
			return err
		}
		defer t.Close()
		tiers = append(tiers, t)
	}
	B := probe.Config().BlockTokens
	rep := tierReport{Cache: *cacheSpec, Tokens: (*tokens - 1) / B * B, BlockBytes: probe.Layout().BlockBytes}
	for _, t := range tiers {
		rep.Tiers = append(rep.Tiers, tierPoint{Tier: t.Name()})
	}
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for range *reps {
		prompt := make([]int32, *tokens)
		for i := range prompt {
			prompt[i] = int32(1 + r.IntN(m.Vocab-1))
		}
		// Prefill of the tokens a tier would bring, writing them behind to every tier.
		st, err := newStore()
		if err != nil {
			return err
		}
		w := tier.New(st, wrapOpen(tiers), tier.Options{Logger: quiet})
		t0 := time.Now()
		if err := prefill(m, w, prompt[:rep.Tokens]); err != nil {
			return err
		}
		rep.PrefillTokPerS = append(rep.PrefillTokPerS, float64(rep.Tokens)/time.Since(t0).Seconds())
		if err := w.Close(ctx); err != nil {
			return err
		}
		// Fetch from each tier alone into an empty cache.
		for i, t := range tiers {
			st, err := newStore()
			if err != nil {
				return err
			}
			c := tier.New(st, []tier.Tier{keepOpen{t}}, tier.Options{Timeout: time.Minute, Logger: quiet})
			t0 := time.Now()
			got := c.Prefetch(ctx, prompt)
			d := time.Since(t0).Seconds()
			s, _ := c.Stats()
			c.Close(ctx)
			if got != rep.Tokens {
				return fmt.Errorf("%s: fetched %d tokens of %d (errors: get %d, corrupt %d)", t.Name(), got, rep.Tokens, s[0].GetErrors, s[0].Corrupt)
			}
			rep.RecordBytes = int(s[0].BytesRead / s[0].Hits)
			p := &rep.Tiers[i]
			p.GBPerS = append(p.GBPerS, float64(s[0].BytesRead)/d/1e9)
			p.TokPerS = append(p.TokPerS, float64(got)/d)
		}
	}
	pre := median(rep.PrefillTokPerS)
	fmt.Fprintf(stdout, "%s, %d-token prompts: %d tokens fetched per run, %d blocks of %d bytes, records of %d (%.2f bytes per token beyond the block's own)\n",
		*cacheSpec, *tokens, rep.Tokens, rep.Tokens/B, rep.BlockBytes, rep.RecordBytes, float64(rep.RecordBytes-rep.BlockBytes)/float64(B))
	fmt.Fprintf(stdout, "  %-32s %10s %12s %10s\n", "", "GB/s", "tokens/s", "vs prefill")
	fmt.Fprintf(stdout, "  %-32s %10s %12.0f %10s   runs %s tok/s\n", "prefill (computing them)", "", pre, "1×", fmtRuns(rep.PrefillTokPerS, "%.0f"))
	for i := range rep.Tiers {
		p := &rep.Tiers[i]
		p.VsPrefill = median(p.TokPerS) / pre
		fmt.Fprintf(stdout, "  %-32s %10.2f %12.0f %9.1f×   runs %s GB/s\n", p.Tier, median(p.GBPerS), median(p.TokPerS), p.VsPrefill, fmtRuns(p.GBPerS, "%.2f"))
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rep)
	}
	return nil
}

func wrapOpen(ts []tier.Tier) []tier.Tier {
	out := make([]tier.Tier, len(ts))
	for i, t := range ts {
		out[i] = keepOpen{t}
	}
	return out
}

// prefill computes tokens in one sequence of c in chunks of 512 tokens and drops
// it, leaving its full blocks registered.
func prefill(m *model.Model, c kv.Cache, tokens []int32) error {
	id, err := c.NewSeq()
	if err != nil {
		return err
	}
	for p := 0; p < len(tokens); p += 512 {
		if _, err := m.Forward(c, []model.Span{{Seq: id, Tokens: tokens[p:min(p+512, len(tokens))]}}); err != nil {
			return err
		}
	}
	return c.Drop(id)
}

func fmtRuns(x []float64, f string) string {
	out := ""
	for i, v := range x {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf(f, v)
	}
	return out
}
