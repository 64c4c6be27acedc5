package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

// greedyRef is model.Generate's greedy text and token count (final EOS included, as
// usage counts it) for one prompt.
type greedyRef struct {
	text   string
	tokens int
}

func greedyRefs(t *testing.T, prompts []string, maxes []int) map[string]greedyRef {
	t.Helper()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := m.CacheConfig("f32", "")
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]greedyRef{}
	for _, p := range prompts {
		for _, mx := range maxes {
			c, err := kv.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			seq, err := c.NewSeq()
			if err != nil {
				t.Fatal(err)
			}
			out, err := m.Generate(c, seq, m.Tok.Encode(p, true), mx, model.NewSampler(model.SamplerConfig{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			toks := out
			if len(toks) > 0 && toks[len(toks)-1] == m.Tok.EOS() {
				toks = toks[:len(toks)-1]
			}
			refs[fmt.Sprint(p, "|", mx)] = greedyRef{text: m.Tok.Decode(toks), tokens: len(out)}
		}
	}
	return refs
}

// 64 concurrent streaming clients, several requests each, over a cache budget small
// enough to force preemptions and a queue small enough to refuse some requests:
// every request completes with exactly the greedy text (no token lost or repeated)
// or gets a clean 429, and every block is returned at the end.
func TestLoadConcurrentStreams(t *testing.T) {
	const (
		clients = 64
		perCli  = 3
	)
	prompts := []string{
		"Once upon a time", "The little dog", "Lily and Tom went to the park. They saw a big",
		"One day, a bird", "Sam had a red ball", "The sun was hot and the", "Mom said", "There was a cat",
	}
	maxes := []int{8, 17, 32}
	refs := greedyRefs(t, prompts, maxes)
	// f32: 1280 bytes per token; 1 MiB holds about 800 tokens, far less than 64
	// sequences of up to ~45 tokens.
	e := newEnv(t, envConfig{spec: "f32", budget: 1 << 20, engine: engine.Config{MaxQueue: 24}})

	var (
		mu       sync.Mutex
		outcomes = map[int]int{}
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for r := range perCli {
				k := c*perCli + r
				p, mx := prompts[k%len(prompts)], maxes[(k/len(prompts))%len(maxes)]
				ref := refs[fmt.Sprint(p, "|", mx)]
				body, _ := json.Marshal(map[string]any{"prompt": p, "max_tokens": mx, "temperature": 0, "stream": true,
					"stream_options": map[string]bool{"include_usage": true}})
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL+"/v1/completions", strings.NewReader(string(body)))
				resp, err := e.ts.Client().Do(req)
				if err != nil {
					fail("client %d request %d: %v", c, r, err)
					return
				}
				mu.Lock()
				outcomes[resp.StatusCode]++
				mu.Unlock()
				if resp.StatusCode == http.StatusTooManyRequests {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"rate_limit_error"`) {
						fail("unclean 429: %v %s", resp.Header, b)
					}
					continue
				}
				if resp.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					fail("client %d request %d: status %d: %s", c, r, resp.StatusCode, b)
					continue
				}
				var text strings.Builder
				var completion int
				done := false
				finishes := 0
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					line := sc.Text()
					if line == "" {
						continue
					}
					if line == "data: [DONE]" {
						done = true
						continue
					}
					var ch completionOut
					if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ch); err != nil {
						fail("client %d: chunk %q: %v", c, line, err)
						break
					}
					for _, x := range ch.Choices {
						text.WriteString(x.Text)
						if x.FinishReason != nil {
							finishes++
						}
					}
					if ch.Usage != nil {
						completion = ch.Usage.CompletionTokens
					}
				}
				resp.Body.Close()
				if err := sc.Err(); err != nil {
					fail("client %d request %d: reading the stream: %v", c, r, err)
				}
				if !done || finishes != 1 {
					fail("client %d request %d: [DONE] %v, %d finish chunks", c, r, done, finishes)
				}
				if text.String() != ref.text || completion != ref.tokens {
					fail("client %d request %d (%q, %d): streamed %q (%d tokens)\nwant %q (%d tokens)", c, r, p, mx, text.String(), completion, ref.text, ref.tokens)
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	total := clients * perCli
	if outcomes[200]+outcomes[429] != total || outcomes[200] < clients/2 {
		t.Errorf("outcomes %v of %d requests", outcomes, total)
	}
	e.waitMetric(t, "kvq_kv_blocks_used", 0)
	e.waitMetric(t, "kvq_running_sequences", 0)
	e.waitMetric(t, "kvq_waiting_sequences", 0)
	if got := e.metric(t, `kvq_requests_total{status="200"}`); got != float64(outcomes[200]) {
		t.Errorf("kvq_requests_total{status=\"200\"} = %v, want %d", got, outcomes[200])
	}
	if got := e.metric(t, "kvq_time_to_first_token_seconds_count"); got != float64(outcomes[200]) {
		t.Errorf("TTFT count %v, want %d", got, outcomes[200])
	}
	t.Logf("outcomes %v; preemptions %v; kv bytes at the end %v", outcomes, e.metric(t, "kvq_preemptions_total"), e.metric(t, "kvq_kv_bytes"))
}
