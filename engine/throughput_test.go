package engine

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestSyntheticPrompts(t *testing.T) {
	m := loadModel(t)
	a, err := SyntheticPrompts(m, 5, 40, 16, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SyntheticPrompts(m, 5, 40, 16, 3)
	c, _ := SyntheticPrompts(m, 5, 40, 16, 4)
	for i := range a {
		if len(a[i]) != 40 {
			t.Fatalf("prompt %d has %d tokens", i, len(a[i]))
		}
		if !slices.Equal(a[i], b[i]) {
			t.Errorf("prompt %d differs between runs with the same seed", i)
		}
		if slices.Equal(a[i], c[i]) {
			t.Errorf("prompt %d equal under different seeds", i)
		}
		if !slices.Equal(a[i][:16], a[0][:16]) {
			t.Errorf("prompt %d does not share the 16-token prefix", i)
		}
		if i > 0 && slices.Equal(a[i][16:], a[0][16:]) {
			t.Errorf("prompt %d repeats prompt 0 after the prefix", i)
		}
		if a[i][0] != m.Tok.BOS() {
			t.Errorf("prompt %d starts with %d, want BOS", i, a[i][0])
		}
		for _, id := range a[i][1:] {
			if id < 0 || int(id) >= m.Vocab || m.Tok.IsControl(id) {
				t.Errorf("prompt %d holds token %d", i, id)
			}
		}
	}
	for _, bad := range [][3]int{{0, 4, 0}, {2, 0, 0}, {2, 4, 5}, {2, 4, -1}} {
		if _, err := SyntheticPrompts(m, bad[0], bad[1], bad[2], 1); err == nil {
			t.Errorf("SyntheticPrompts(n=%d, p=%d, s=%d) accepted", bad[0], bad[1], bad[2])
		}
	}
}

func TestThroughput(t *testing.T) {
	m := loadModel(t)
	for _, tc := range []struct {
		name    string
		budget  int64
		preempt bool
	}{
		{"unlimited", 0, false},
		{"tight", seqBytes(t, m, "f32", 200, testBlockTokens), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, m, "f32", tc.budget)
			const n, p, g = 12, 48, 40
			sampled := 0
			onStep := func(si StepInfo) { sampled += si.Sampled }
			res, err := Throughput(m, c, ThroughputConfig{Requests: n, PromptLen: p, GenLen: g, SharedPrefix: 16, Seed: 1, Engine: Config{MaxBatchTokens: 128, OnStep: onStep}})
			if err != nil {
				t.Fatal(err)
			}
			if int64(sampled) != res.GeneratedTokens {
				t.Errorf("steps report %d sampled tokens, stats %d", sampled, res.GeneratedTokens)
			}
			if res.GeneratedTokens != n*g || res.PromptTokens != n*p {
				t.Errorf("tokens: %d generated, %d prompt; want %d and %d", res.GeneratedTokens, res.PromptTokens, n*g, n*p)
			}
			if res.PeakConcurrency < 2 || res.TokensPerS <= 0 || res.Steps < g || runtime.GOOS == "linux" && res.CPUMsPerToken <= 0 {
				t.Errorf("peak concurrency %d, %.0f tok/s, %d steps, %.3f CPU ms per token", res.PeakConcurrency, res.TokensPerS, res.Steps, res.CPUMsPerToken)
			}
			if (res.Preemptions > 0) != tc.preempt {
				t.Errorf("%d preemptions (budget %d)", res.Preemptions, tc.budget)
			}
			// Every prompt token is computed or found in the prefix cache, and a
			// preempted request recomputes (or finds) its history again.
			if done := res.PrefillTokens + res.ReusedTokens; done < res.PromptTokens || res.Preemptions > 0 && done <= res.PromptTokens {
				t.Errorf("%d preemptions, %d prefill + %d reused tokens for %d prompt tokens", res.Preemptions, res.PrefillTokens, res.ReusedTokens, res.PromptTokens)
			}
			if res.WasteFrac <= 0 || res.WasteFrac >= 1 || res.BytesPerToken <= 0 {
				t.Errorf("waste %.3f, bytes/token %.1f", res.WasteFrac, res.BytesPerToken)
			}
			if tc.budget > 0 && (res.PeakUtilization <= 0 || res.PeakUtilization > 1) {
				t.Errorf("peak utilization %.3f", res.PeakUtilization)
			}
			if u := c.Usage(); u.Sequences != 0 {
				t.Errorf("%d sequences left", u.Sequences)
			}
			t.Logf("%+v", res)
		})
	}
}

// TestSharedPrefixWaits: requests submitted together whose prompts share whole
// blocks are not all admitted into the step that computes those blocks: the later
// ones wait for it and adopt the prefix, so a step budget that could take them all
// at once computes the shared tokens once (every request but the first hits the
// whole shared prefix), for a cache with KIVI windows and sinks as for f32.
func TestSharedPrefixWaits(t *testing.T) {
	m := loadModel(t)
	for _, spec := range []string{"f32", "kivi4/kivi2:sinks=4"} {
		t.Run(spec, func(t *testing.T) {
			const n, shared, p = 6, 4 * 32, 4*32 + 20
			res, err := Throughput(m, newCache(t, m, spec, 0), ThroughputConfig{Requests: n, PromptLen: p, GenLen: 2,
				SharedPrefix: shared, Seed: 1, Engine: Config{MaxBatchTokens: n * p}})
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(n-1) / n; res.SharedHitRate != want {
				t.Errorf("shared-prefix hit rate %.3f, want %.3f (%d prefill tokens)", res.SharedHitRate, want, res.PrefillTokens)
			}
		})
	}
}

// TestThroughputMixed: a mixed workload from closed-loop clients reports the
// latencies of short and long requests apart, one time to first token per request
// and one inter-token latency per further token.
func TestThroughputMixed(t *testing.T) {
	m := loadModel(t)
	const n, long, p, lp, g = 10, 2, 12, 150, 6
	res, err := Throughput(m, newCache(t, m, "f32", 0), ThroughputConfig{Requests: n, PromptLen: p, GenLen: g,
		LongRequests: long, LongPromptLen: lp, Concurrency: 4, Seed: 1, Engine: Config{MaxBatchTokens: 64, DecodeStepTokens: 16}})
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != (n-long)*p+long*lp || res.GeneratedTokens != n*g {
		t.Errorf("%d prompt and %d generated tokens, want %d and %d", res.PromptTokens, res.GeneratedTokens, (n-long)*p+long*lp, n*g)
	}
	if res.DecodeStepTokens != 16 || res.LongPrefillTokens != 4 {
		t.Errorf("steps of %d tokens beside decodes, %d per prompt first; want 16 and the default 4", res.DecodeStepTokens, res.LongPrefillTokens)
	}
	if res.Long == nil {
		t.Fatal("no latencies of long requests")
	}
	for _, c := range []struct {
		name string
		l    Latencies
		reqs int
	}{{"short", res.Short, n - long}, {"long", *res.Long, long}} {
		if c.l.TTFT.Count != c.reqs || c.l.ITL.Count != c.reqs*(g-1) {
			t.Errorf("%s: %d times to first token, %d inter-token latencies; want %d and %d", c.name, c.l.TTFT.Count, c.l.ITL.Count, c.reqs, c.reqs*(g-1))
		}
		for _, l := range []Latency{c.l.TTFT, c.l.ITL} {
			if !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max && l.Mean <= l.Max) {
				t.Errorf("%s: %+v", c.name, l)
			}
		}
	}
	for _, bad := range []ThroughputConfig{
		{Requests: 2, PromptLen: 4, GenLen: 1, LongRequests: 3, LongPromptLen: 8},
		{Requests: 2, PromptLen: 4, GenLen: 1, LongRequests: 1, LongPromptLen: 2, SharedPrefix: 3},
		{Requests: 2, PromptLen: 4, GenLen: 1, Concurrency: -1},
	} {
		if _, err := Throughput(m, newCache(t, m, "f32", 0), bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestLatencyOf(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range v {
			ds = append(ds, time.Duration(x)*time.Millisecond)
		}
		return ds
	}
	desc := make([]int, 200) // 200 ms down to 1 ms
	for i := range desc {
		desc[i] = 200 - i
	}
	for _, tc := range []struct {
		in   []time.Duration
		want Latency
	}{
		{nil, Latency{}},
		{ms(7), Latency{Count: 1, Mean: 7, P50: 7, P99: 7, Max: 7}},
		{ms(4, 1, 3, 2), Latency{Count: 4, Mean: 2.5, P50: 2, P99: 4, Max: 4}},
		// Nearest rank: p99 of 200 values is the 198th.
		{ms(desc...), Latency{Count: 200, Mean: 100.5, P50: 100, P99: 198, Max: 200}},
	} {
		if got := LatencyOf(tc.in); got != tc.want {
			t.Errorf("LatencyOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
