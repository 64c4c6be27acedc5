package server

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

// TestServeFigures measures the server end to end on the model named by
// $KVQ_SERVE_BENCH (e.g. a synthetic llama-134m from `kvq synth`); it is skipped
// otherwise and is not part of CI. It reports aggregate generated tokens/s with 1
// and 16 concurrent streaming clients, and time to first token for a 1k-token
// prompt, cold and again with the same 1k-token prefix.
//
//	KVQ_SERVE_BENCH=/tmp/llama134m.gguf go test ./server -run ServeFigures -v -timeout 30m
func TestServeFigures(t *testing.T) {
	path := os.Getenv("KVQ_SERVE_BENCH")
	if path == "" {
		t.Skip("set KVQ_SERVE_BENCH to a GGUF model to measure")
	}
	m, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	spec := os.Getenv("KVQ_SERVE_BENCH_CACHE")
	if spec == "" {
		spec = "f16"
	}
	cfg, err := m.CacheConfig(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BudgetBytes = 1 << 30
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{})
	if err := s.Start(m, c, engine.Config{}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Shutdown(context.Background())

	rng := rand.New(rand.NewPCG(1, 2))
	randomPrompt := func(n int) []int32 {
		p := make([]int32, n)
		p[0] = m.Tok.BOS()
		for i := 1; i < n; i++ {
			p[i] = int32(3 + rng.IntN(m.Vocab-3))
		}
		return p
	}
	// stream sends one streaming request and returns its completion tokens, the
	// time to its first text chunk, its total time and its cached prompt tokens.
	stream := func(prompt []int32, maxTokens int) (tokens int, ttft, total time.Duration, cached int) {
		body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": maxTokens, "temperature": 0, "stream": true,
			"stream_options": map[string]bool{"include_usage": true}})
		t0 := time.Now()
		resp, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d", resp.StatusCode)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: {")
			if !ok {
				continue
			}
			var ch completionOut
			if err := json.Unmarshal([]byte("{"+line), &ch); err != nil {
				t.Error(err)
				return
			}
			if ttft == 0 && len(ch.Choices) > 0 {
				ttft = time.Since(t0)
			}
			if ch.Usage != nil {
				tokens, cached = ch.Usage.CompletionTokens, ch.Usage.PromptTokensDetails.CachedTokens
			}
		}
		return tokens, ttft, time.Since(t0), cached
	}

	const promptLen, genLen = 32, 64
	// Warm up (page in the weights).
	stream(randomPrompt(promptLen), 4)

	t0 := time.Now()
	tokens1, _, _, _ := stream(randomPrompt(promptLen), genLen)
	single := float64(tokens1) / time.Since(t0).Seconds()
	t.Logf("1 client: %d tokens in %v: %.1f tokens/s", tokens1, time.Since(t0).Round(time.Millisecond), single)

	const clients = 16
	prompts := make([][]int32, clients)
	for i := range prompts {
		prompts[i] = randomPrompt(promptLen)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	t0 = time.Now()
	for i := range clients {
		wg.Go(func() {
			n, _, _, _ := stream(prompts[i], genLen)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	agg := float64(total) / time.Since(t0).Seconds()
	t.Logf("%d clients: %d tokens in %v: %.1f tokens/s aggregate, %.2fx one client", clients, total, time.Since(t0).Round(time.Millisecond), agg, agg/single)

	// Time to first token on a 1k-token prompt, then on another prompt sharing its
	// first 1024 tokens
	// (shorter on a model with a shorter context).
	plen := min(1024, m.Ctx-32)
	prefix := randomPrompt(plen)
	a := append(append([]int32{}, prefix...), randomPrompt(17)[1:]...)
	b := append(append([]int32{}, prefix...), randomPrompt(17)[1:]...)
	_, coldTTFT, _, coldCached := stream(a, 4)
	_, warmTTFT, _, warmCached := stream(b, 4)
	t.Logf("%d-token prompt: TTFT %v cold (cached %d), %v with the shared %d-token prefix (cached %d): %.2fx",
		len(a), coldTTFT.Round(time.Millisecond), coldCached, warmTTFT.Round(time.Millisecond), plen, warmCached, coldTTFT.Seconds()/warmTTFT.Seconds())
}
