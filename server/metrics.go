package server

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"kvq/engine"
)

// histogram is a Prometheus histogram of durations in seconds, with fixed buckets.
type histogram struct {
	bounds []float64 // upper bounds, seconds, increasing
	counts []uint64  // per bucket (not cumulative); last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(h.bounds, s) // first bound ≥ s: le is inclusive
	h.counts[i]++
	h.sum += s
	h.n++
}

func (h *histogram) write(w io.Writer, name, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", name, cum, name, strconv.FormatFloat(h.sum, 'g', -1, 64), name, h.n)
}

// metrics holds the server's own counters; engine and cache figures are read from
// engine.Stats when /metrics is scraped.
type metrics struct {
	mu       sync.Mutex
	requests map[string]uint64 // completion requests by final HTTP status ("499": client gone)
	ttft     *histogram
	itl      *histogram
}

func newMetrics() *metrics {
	return &metrics{
		requests: map[string]uint64{},
		ttft:     newHistogram(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
		itl:      newHistogram(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
	}
}

func (m *metrics) request(status int) {
	m.mu.Lock()
	m.requests[strconv.Itoa(status)]++
	m.mu.Unlock()
}

func (m *metrics) observeTTFT(d time.Duration) {
	m.mu.Lock()
	m.ttft.observe(d)
	m.mu.Unlock()
}

func (m *metrics) observeITL(d time.Duration) {
	m.mu.Lock()
	m.itl.observe(d)
	m.mu.Unlock()
}

// write renders every metric in the Prometheus text exposition format (0.0.4).
// st is nil while no engine runs.
func (m *metrics) write(w io.Writer, st *engine.Stats, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP kvq_requests_total Completion requests by HTTP status (499: the client went away).\n# TYPE kvq_requests_total counter\n")
	codes := make([]string, 0, len(m.requests))
	for c := range m.requests {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "kvq_requests_total{status=%q} %d\n", c, m.requests[c])
	}
	var s engine.Stats
	if st != nil {
		s = *st
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, strconv.FormatFloat(v, 'f', -1, 64))
	}
	counter("kvq_tokens_generated_total", "Tokens sampled, all choices, final EOS included.", s.GeneratedTokens)
	counter("kvq_prompt_tokens_total", "Prompt tokens of admitted requests.", s.PromptTokens)
	counter("kvq_prompt_tokens_cached_total", "Prompt tokens of admitted requests taken from the prefix cache.", s.CachedPromptTokens)
	counter("kvq_prefill_tokens_total", "Tokens computed by prefill, recomputation after preemption included.", s.PrefillTokens)
	counter("kvq_preemptions_total", "Requests preempted for cache memory and recomputed later.", s.Preemptions)
	counter("kvq_kv_block_evictions_total", "Cached prefix blocks whose memory was taken for new blocks.", s.Pool.Evictions)
	counter("kvq_kv_prefault_bytes_total", "KV cache memory faulted in ahead of need while no request ran (kvq serve --kv-prefault).", s.Pool.PrefaultBytes)
	m.ttft.write(w, "kvq_time_to_first_token_seconds", "Time from the request's arrival to its first generated token.")
	m.itl.write(w, "kvq_inter_token_latency_seconds", "Time between consecutive tokens of one choice.")
	gauge("kvq_running_sequences", "Sequences (choices) in the running batch.", float64(s.Running))
	gauge("kvq_waiting_sequences", "Requests waiting to start or to resume after preemption.", float64(s.Waiting))
	free := s.Pool.BlocksFree
	if free < 0 {
		free = 0 // unlimited pool: no figure
	}
	gauge("kvq_kv_blocks_used", "KV cache blocks referenced by at least one sequence.", float64(s.Pool.BlocksUsed))
	gauge("kvq_kv_blocks_free", "KV cache blocks that could be allocated now (0 without a budget).", float64(free))
	gauge("kvq_kv_blocks_cached", "KV cache blocks held only by the prefix cache, reusable by a later request with the same prefix.", float64(s.Pool.BlocksCached))
	gauge("kvq_kv_blocks_ready", "KV cache blocks made and free (in no sequence, not cached): taken before new memory is made.", float64(s.Pool.BlocksReady))
	gauge("kvq_kv_bytes", "Bytes of KV cache storage allocated (blocks and full-precision tails).", float64(s.Cache.AllocBytes))
	gauge("kvq_kv_held_bytes", "Bytes of KV cache memory held: every block made (used, cached or ready) and the full-precision tails.", float64(s.Pool.HeldBytes))
	gauge("kvq_kv_budget_bytes", "KV cache byte budget (0: unlimited).", float64(s.Cache.BudgetBytes))
	gauge("kvq_prefix_hit_rate", "Fraction of admitted prompt tokens served from the prefix cache.", s.PrefixHitRate())
	r := 0.0
	if ready {
		r = 1
	}
	gauge("kvq_ready", "1 once the model is loaded and requests are accepted.", r)
}
