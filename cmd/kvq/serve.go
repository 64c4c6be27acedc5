package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kvq/assets"
	"kvq/engine"
	"kvq/eval"
	"kvq/internal/procstat"
	"kvq/kv"
	"kvq/kv/tier"
	"kvq/server"
)

func init() {
	register("serve", "serve the model over an OpenAI-compatible HTTP API", runServe)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "Serves the model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, /v1/models, /health, /metrics) with continuous batching over a paged KV cache.", stderr)
	mf := addModelFlags(fs)
	cacheSpec := fs.String("cache", "f16", "KV cache `SPEC`, e.g. f16, q8, kivi4/kivi2")
	cacheLayers := fs.String("cache-layers", "", "per-layer cache `OVERRIDES`, e.g. 0,-1=f16")
	calibTokens := fs.Int("calibrate-tokens", 0, "with an FP8 --cache without s=, give every layer fixed FP8 scales calibrated on this many `TOKENS` of --calibrate-text (vLLM's calculated k/v scales); 0: off")
	calibText := fs.String("calibrate-text", "", "UTF-8 `FILE` to calibrate on (default: the built-in TinyStories text)")
	blockTokens := fs.Int("block-tokens", 0, fmt.Sprintf("tokens per cache block (0: the cache's default, %d); smaller blocks waste less per sequence and share shorter prefixes (attention reads 128 positions at a time whatever the block size)", kv.DefaultBlockTokens))
	var budget byteSize
	fs.Var(&budget, "kv-budget", "KV cache byte budget, e.g. 512MiB; 0 means unlimited (default: half the memory available once the model is loaded)")
	prefault := byteSize(defaultKVPrefault)
	fs.Var(&prefault, "kv-prefault", "`BYTES` of KV cache memory kept made and faulted in ahead of need while no request runs, up to --kv-budget (as large as the budget: the whole cache, made at start); steps then take blocks the kernel has already zeroed; 0: off")
	host := fs.String("host", "127.0.0.1", "`ADDRESS` to listen on (loopback by default; 0.0.0.0 for every interface)")
	port := fs.Int("port", 8080, "TCP port (0 picks a free one)")
	maxRunning := fs.Int("max-running", engine.DefaultMaxRunning, "maximum sequences decoded together (≤ --max-batch-tokens)")
	maxQueue := fs.Int("max-queue", 256, "maximum requests waiting to start; more get 429")
	maxBatch := fs.Int("max-batch-tokens", engine.DefaultMaxBatchTokens, "most tokens per engine step (decode + prefill); steps from which a request gets a token keep to --decode-step-tokens")
	decodeStep := fs.Int("decode-step-tokens", 0, fmt.Sprintf("most tokens of an engine step from which any request gets a token: long prompts prefill in chunks beside decoding requests, and inter-token latency stays within the time of such a step (0: %d or --max-batch-tokens if fewer; --max-batch-tokens: throughput first)", engine.DefaultDecodeStepTokens))
	longPrefill := fs.Int("long-prefill-tokens", 0, "share of a step each pending prompt gets before any gets more, so short prompts start beside long ones (0: a quarter of --decode-step-tokens)")
	apiKey := fs.String("api-key", "", "require this bearer `KEY` on /v1/ routes (default: $KVQ_API_KEY if set)")
	name := fs.String("model-name", "", "model `ID` reported to clients (default: the model's name)")
	origins := fs.String("allowed-origins", "", "comma-separated browser `ORIGINS` allowed to call the API (CORS), or * for any; default none")
	shutdownTimeout := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long requests in flight may run before they are cancelled")
	logJSON := fs.Bool("log-json", false, "write request logs as JSON instead of text")
	tf := addThreadsFlag(fs)
	readHeaderTimeout := fs.Duration("read-header-timeout", server.DefaultReadHeaderTimeout, "how long a client may take to send a request's headers (0: no limit)")
	readTimeout := fs.Duration("read-timeout", server.DefaultReadBodyTimeout, "how long a client may take to send a request's body; a stalled upload gets 408 (0: no limit)")
	writeTimeout := fs.Duration("write-timeout", server.DefaultWriteTimeout, "how long one write of a response may wait for the client to read; a client that stops reading is dropped and its request cancelled (0: no limit)")
	idleTimeout := fs.Duration("idle-timeout", server.DefaultIdleTimeout, "how long a kept-alive connection may sit idle between requests (0: no limit)")
	maxConns := fs.Int("max-conns", server.DefaultMaxConns, "maximum open connections; more are answered 503 and closed")
	requestTimeout := fs.Duration("request-timeout", 0, "cancel a completion request still queued or generating after this long, answering 504 (0: no limit)")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated host names accepted in the Host header besides addresses, localhost and this machine's name (\"*\": any); without an API key other names get 421, against DNS rebinding")
	var tierSpecs listFlag
	fs.Var(&tierSpecs, "kv-tier", "keep full prefix blocks beyond memory, shared across restarts and replicas: disk:DIR[,size=BYTES], redis://HOST:PORT[/DB] or redis-cluster://HOST:PORT[,HOST:PORT...] (seed nodes of a Redis Cluster); repeatable, searched in order")
	tierTimeout := fs.Duration("kv-tier-timeout", tier.DefaultTimeout, "how long a request's lookup in the KV tiers may take before its blocks are computed instead")
	if err := parse(fs, args); err != nil {
		return err
	}
	budgetSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "kv-budget" {
			budgetSet = true
		}
	})
	switch {
	case *calibTokens < 0:
		return usagef(fs, "--calibrate-tokens must be ≥ 0, got %d", *calibTokens)
	case *port < 0 || *port > 65535:
		return usagef(fs, "--port must be in [0, 65535], got %d", *port)
	case *maxRunning < 1 || *maxRunning > *maxBatch:
		return usagef(fs, "--max-running must be in [1, --max-batch-tokens = %d], got %d", *maxBatch, *maxRunning)
	case *decodeStep < 0 || *decodeStep > *maxBatch:
		return usagef(fs, "--decode-step-tokens must be in [0, --max-batch-tokens = %d], got %d", *maxBatch, *decodeStep)
	case *longPrefill < 0:
		return usagef(fs, "--long-prefill-tokens must be ≥ 0, got %d", *longPrefill)
	case *maxQueue < 1:
		return usagef(fs, "--max-queue must be ≥ 1, got %d", *maxQueue)
	case *readHeaderTimeout < 0 || *readTimeout < 0 || *writeTimeout < 0 || *idleTimeout < 0 || *requestTimeout < 0:
		return usagef(fs, "--read-header-timeout, --read-timeout, --write-timeout, --idle-timeout and --request-timeout must be ≥ 0")
	case *maxConns < 1:
		return usagef(fs, "--max-conns must be ≥ 1, got %d", *maxConns)
	case *shutdownTimeout < 0:
		return usagef(fs, "--shutdown-timeout must be ≥ 0, got %v", *shutdownTimeout)
	case *tierTimeout <= 0:
		return usagef(fs, "--kv-tier-timeout must be > 0, got %v", *tierTimeout)
	case *blockTokens < 0 || *blockTokens > kv.MaxBlockTokens:
		return usagef(fs, "--block-tokens must be in [0, %d] (0: the default), got %d", kv.MaxBlockTokens, *blockTokens)
	}
	if _, err := kv.ParseSpec(*cacheSpec); err != nil {
		return usagef(fs, "--cache: %w", err)
	}
	workers, err := tf.apply(fs)
	if err != nil {
		return err
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("KVQ_API_KEY")
	}
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if *logJSON {
		h = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(h)
	// Warnings of the packages below (the model's, say) in the same format.
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(log)

	template, err := server.ReadChatTemplate(mf.path)
	if err != nil {
		return err
	}
	modelName := *name
	if modelName == "" && mf.path != "" {
		modelName = strings.TrimSuffix(filepath.Base(mf.path), filepath.Ext(mf.path))
	}
	noLimit := func(d time.Duration) time.Duration { // the flags' 0 is Options' < 0
		if d == 0 {
			return -1
		}
		return d
	}
	var hosts []string
	for h := range strings.SplitSeq(*allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	var allowed []string
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			allowed = append(allowed, o)
		}
	}
	srv := server.New(server.Options{ModelName: modelName, APIKey: *apiKey, ChatTemplate: template, Logger: log, AllowedOrigins: allowed,
		ReadHeaderTimeout: noLimit(*readHeaderTimeout), ReadBodyTimeout: noLimit(*readTimeout), WriteTimeout: noLimit(*writeTimeout),
		IdleTimeout: noLimit(*idleTimeout), MaxConns: *maxConns, RequestTimeout: *requestTimeout, AllowedHosts: hosts})

	// Listen first, so that /health answers 503 while the model loads.
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	if *apiKey == "" && !loopback(ln.Addr()) {
		log.Warn("listening beyond loopback without an API key: anyone who can reach this address can use the model; set --api-key or $KVQ_API_KEY", "addr", ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)

	t0 := time.Now()
	if mf.path != "" {
		log.Info("loading model", "path", mf.path, "mmap", mf.mmap)
	}
	m, err := mf.open()
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	defer m.Close()
	var cfg kv.Config
	if *calibTokens > 0 {
		text := assets.Text
		if *calibText != "" {
			b, err := os.ReadFile(*calibText)
			if err != nil {
				srv.Shutdown(context.Background())
				return err
			}
			text = string(b)
		}
		toks := m.Tok.Encode(text, false)
		cfg, err = eval.CalibrateFP8(m, *cacheSpec, *cacheLayers, toks[:min(len(toks), *calibTokens)])
		if err == nil {
			log.Info("calibrated FP8 scales", "tokens", min(len(toks), *calibTokens, m.Ctx-1), "cache_layers", kv.FormatLayerOverrides(cfg.LayerSpecs))
		}
	} else {
		cfg, err = m.CacheConfig(*cacheSpec, *cacheLayers)
	}
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	budgetNote := "--kv-budget"
	if !budgetSet {
		budget, budgetNote = defaultKVBudget(procstat.MemAvailable())
	}
	cfg.BudgetBytes = int64(budget)
	cfg.AttnWorkers = workers
	cfg.BlockTokens = *blockTokens
	c, err := kv.New(cfg)
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	var cache kv.Cache = c
	if len(tierSpecs) > 0 {
		tc, err := openTiers(c, tierSpecs, *tierTimeout, log)
		if err != nil {
			srv.Shutdown(context.Background())
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tc.Close(ctx); err != nil {
				log.Warn("kv tiers: closing", "err", err)
			}
		}()
		cache = tc
		log.Info("kv tiers", "search_order", strings.Join(tc.Tiers(), " "), "timeout", *tierTimeout)
	}
	ecfg := engine.Config{MaxBatchTokens: *maxBatch, MaxRunning: *maxRunning, MaxQueue: *maxQueue,
		DecodeStepTokens: *decodeStep, LongPrefillTokens: *longPrefill, Prefault: int64(prefault)}
	reported := false
	ecfg.OnPrefault = func(n int64, spent time.Duration) { // on the engine's goroutine
		level := slog.LevelDebug // refills after each burst of requests
		if !reported {
			level, reported = slog.LevelInfo, true
		}
		ps := c.PoolStats()
		log.Log(context.Background(), level, "kv cache memory prefaulted", "bytes", fmtBytes(n), "spent", spent.Round(time.Microsecond),
			"ready", fmtBytes(int64(ps.BlocksReady)*int64(ps.BlockBytes)), "held", fmtBytes(ps.HeldBytes))
	}
	if err := srv.Start(m, cache, ecfg); err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	addr := ln.Addr().String()
	log.Info("serving", "addr", "http://"+addr, "model", srv.ModelName(), "cache", *cacheSpec, "kv_budget", budgetText(int64(budget)), "kv_budget_from", budgetNote,
		"kv_prefault", prefaultText(int64(prefault), int64(budget)), "block_tokens", c.Config().BlockTokens,
		"chat_format", srv.ChatFormat().String(), "auth", *apiKey != "", "load_time", time.Since(t0).Round(time.Millisecond))
	fmt.Fprintf(stdout, "kvq serve: listening on http://%s (model %s)\n", addr, srv.ModelName())

	select {
	case err := <-served:
		srv.Shutdown(context.Background())
		return fmt.Errorf("serving: %w", err)
	case s := <-sig:
		log.Info("shutting down", "signal", s.String(), "timeout", *shutdownTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(ctx)
	if serr := <-served; serr != nil {
		return fmt.Errorf("serving: %w", serr)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// fallbackKVBudget is the KV budget where the memory available is unknown.
const fallbackKVBudget = 1 << 30

// defaultKVBudget is the KV budget serve takes without --kv-budget: half of avail,
// the memory available once the model is loaded (the other half stays for the page
// cache and other processes), or fallbackKVBudget where avail is unknown (0); and
// how it was chosen, for the log.
func defaultKVBudget(avail int64) (byteSize, string) {
	if avail <= 0 {
		return fallbackKVBudget, "default: memory available unknown"
	}
	return byteSize(avail / 2), "default: half of the " + fmtBytes(avail) + " available"
}

// defaultKVPrefault is --kv-prefault's default: 1 GiB of cache memory made ahead of
// need while idle (or the budget, if smaller). That is room for three rounds of 64
// requests of 128 tokens on llama-134m with an f16 cache (about 330 MiB each), or
// 8k tokens of a 7B model with grouped-query attention (128 KiB per token at f16),
// about what llama.cpp allocates at start for a context of 8192. A server takes
// that much resident memory beyond what its requests have needed so far; the
// budget (half the memory available, by default) is a ceiling the pool grows
// toward as prefix caching keeps finished requests' blocks, not memory to take
// from the machine at start. With --kv-prefault as large as the budget the whole
// cache is made at start, as vLLM does.
const defaultKVPrefault = 1 << 30

// prefaultText is --kv-prefault for the log: off, or the memory it keeps ready
// (capped by a budget b > 0).
func prefaultText(p, b int64) string {
	if p == 0 {
		return "off"
	}
	if b > 0 {
		p = min(p, b)
	}
	return fmtBytes(p)
}

// budgetText is a KV budget for the log: its size, or "unlimited" for 0.
func budgetText(b int64) string {
	if b == 0 {
		return "unlimited"
	}
	return fmtBytes(b)
}

// loopback reports whether a listener's address is a loopback address (not every
// interface, nor an outside one).
func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// openTiers opens the --kv-tier specs over c, in search order.
func openTiers(c *kv.Store, specs []string, timeout time.Duration, log *slog.Logger) (*tier.Cache, error) {
	if !c.PrefixCaching() {
		return nil, fmt.Errorf("--kv-tier: prefix caching is off, so no block can be shared")
	}
	var ts []tier.Tier
	for _, spec := range specs {
		t, err := tier.Open(spec)
		if err != nil {
			for _, o := range ts {
				o.Close()
			}
			return nil, fmt.Errorf("--kv-tier: %w", err)
		}
		ts = append(ts, t)
	}
	return tier.New(c, ts, tier.Options{Timeout: timeout, Logger: log}), nil
}
