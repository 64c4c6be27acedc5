package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kvq/engine"
)

func init() {
	registerBench("serve", "load any OpenAI-compatible server over HTTP: aggregate tok/s, TTFT and inter-token latency per concurrency", runBenchServe)
}

// serveBench is one `kvq bench serve` run: what is sent, and where.
type serveBench struct {
	urls        []string         // base URLs, without a trailing slash
	names       []string         // what the output calls each: its URL, with " #k" (its position) where a URL is given twice
	extras      []map[string]any // fields merged into the body of each url's requests (nil: none)
	model       string           // the body's "model" ("": left out)
	apiKey      string
	maxTokens   int
	promptWords int
	timeout     time.Duration // per request
	client      *http.Client
}

// serveResult is what one streamed request gave.
type serveResult struct {
	err    error
	ttft   time.Duration   // to the first chunk with text (0: none came)
	itl    []time.Duration // gaps between consecutive chunks with text
	gen    time.Duration   // from the first chunk with text to the last
	chunks int             // chunks with text
	usage  int             // the stream's usage.completion_tokens; -1: it sent none
}

// serveRecord is one level of a run: one (round, url, concurrency).
type serveRecord struct {
	Round       int     `json:"round"`  // from 1
	Server      int     `json:"server"` // the --url's position, from 0
	URL         string  `json:"url"`
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	OK          int     `json:"ok"`
	Failed      int     `json:"failed"`
	Tokens      int     `json:"tokens"` // generated tokens of the requests that succeeded
	TokensFrom  string  `json:"tokens_from"`
	Seconds     float64 `json:"seconds"`      // wall time of the level
	TokensPerS  float64 `json:"tokens_per_s"` // Tokens / Seconds
	// TTFT is the time from sending a request to its first chunk with text; ITL the
	// gaps between consecutive chunks with text of one request, over all requests;
	// TPOT each request's time per output token after the first (from its first chunk
	// with text to its last, over its tokens less one; requests of one token have none).
	TTFT       engine.Latency `json:"ttft"`
	ITL        engine.Latency `json:"itl"`
	TPOT       engine.Latency `json:"tpot"`
	FirstError string         `json:"first_error,omitempty"`
}

// serveSummary is one (url, concurrency) over the rounds.
type serveSummary struct {
	Server      int     `json:"server"`
	URL         string  `json:"url"`
	Concurrency int     `json:"concurrency"`
	TokensPerS  float64 `json:"tokens_per_s_median"`
	MinTokensS  float64 `json:"tokens_per_s_min"`
	MaxTokensS  float64 `json:"tokens_per_s_max"`
	// Ratio is the median over rounds of this pair's tok/s over the first pair's in
	// the same round (omitted when no round had both).
	Ratio    *float64 `json:"ratio_to_first,omitempty"`
	ITLP99ms float64  `json:"itl_p99_ms_median"`
	// TPOTms is the median over rounds of the level's median time per output token.
	TPOTms float64 `json:"tpot_p50_ms_median"`
	OK     int     `json:"ok"`
	Failed int     `json:"failed"`
}

// serveReport is the JSON output of `kvq bench serve`.
type serveReport struct {
	URLs        []string          `json:"urls"`
	Extra       []json.RawMessage `json:"extra,omitempty"`
	Concurrency []int             `json:"concurrency"`
	MaxTokens   int               `json:"max_tokens"`
	PromptWords int               `json:"prompt_words"`
	Rounds      int               `json:"rounds"`
	Records     []serveRecord     `json:"records"`
	Summary     []serveSummary    `json:"summary"`
}

func runBenchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench serve", "Loads OpenAI-compatible servers (kvq serve, or any other) through streaming POST URL/v1/completions requests with temperature 0 and reports, "+
		"per round, server and concurrency, the aggregate generated tok/s, the time to first token, the time per output token and the inter-token latency, then the median of each over the rounds "+
		"and its ratio to the first server's first concurrency.\n\n"+
		"At concurrency c, c clients each send their next request when the previous one ends, --requests in all. Each round runs every (url, concurrency) pair in turn, "+
		"every other round in reverse order (ABBA), so that pairs are compared in the same minutes and a drifting machine favours none. Prompts are short synthetic texts, the same on every run and every server, different for each request.", stderr)
	var urls, extras listFlag
	fs.Var(&urls, "url", "base `URL` of a server, e.g. http://127.0.0.1:8080 (requests go to URL/v1/completions); repeat to compare servers (a URL given twice, with different --extra, is called URL #k, k its position)")
	fs.Var(&extras, "extra", "JSON `OBJECT` whose fields are merged into every request's body, e.g. '{\"ignore_eos\":true}'; given once it applies to every --url, repeated it pairs with the --url of the same position")
	concList := fs.String("concurrency", "1,16", "comma-separated `LIST` of client counts")
	requests := fs.Int("requests", 0, "requests per level (0: twice the concurrency, at least 4)")
	maxTokens := fs.Int("max-tokens", 128, "max_tokens of each request")
	rounds := fs.Int("rounds", 3, "rounds of every (url, concurrency) pair")
	promptWords := fs.Int("prompt-words", 16, "words of each synthetic prompt")
	apiKey := fs.String("api-key", "", "bearer `KEY` sent to every server (default: $KVQ_API_KEY if set)")
	modelName := fs.String("model", "", "\"model\" `NAME` of the requests (default: none sent)")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long one request may take, its stream included, before it counts as failed")
	jsonPath := fs.String("json", "", "also write every level and the summary as JSON to `FILE`")
	requireFlags(fs, "url")
	if err := parse(fs, args); err != nil {
		return err
	}
	b := &serveBench{model: *modelName, apiKey: *apiKey, maxTokens: *maxTokens, promptWords: *promptWords, timeout: *timeout}
	conc, err := parseConcurrency(*concList)
	switch {
	case err != nil:
		return usagef(fs, "--concurrency: %w", err)
	case *requests < 0:
		return usagef(fs, "--requests must be ≥ 0, got %d", *requests)
	case *maxTokens < 1:
		return usagef(fs, "--max-tokens must be ≥ 1, got %d", *maxTokens)
	case *rounds < 1:
		return usagef(fs, "--rounds must be ≥ 1, got %d", *rounds)
	case *promptWords < 1:
		return usagef(fs, "--prompt-words must be ≥ 1, got %d", *promptWords)
	case *timeout <= 0:
		return usagef(fs, "--timeout must be > 0, got %v", *timeout)
	case len(extras) > 1 && len(extras) != len(urls):
		return usagef(fs, "--extra is given %d times for %d --url: give it once, or once per --url", len(extras), len(urls))
	}
	for _, u := range urls {
		base, err := baseURL(u)
		if err != nil {
			return usagef(fs, "--url: %w", err)
		}
		b.urls = append(b.urls, base)
	}
	for i, u := range b.urls {
		name := u
		if slices.Index(b.urls, u) != i || slices.Index(b.urls[i+1:], u) >= 0 {
			name += fmt.Sprintf(" #%d", i+1)
		}
		b.names = append(b.names, name)
	}
	var rawExtras []json.RawMessage
	for _, e := range extras {
		m, err := parseExtra(e)
		if err != nil {
			return usagef(fs, "--extra: %w", err)
		}
		b.extras = append(b.extras, m)
		rawExtras = append(rawExtras, json.RawMessage(e))
	}
	if len(b.extras) == 1 {
		for range len(b.urls) - 1 {
			b.extras = append(b.extras, b.extras[0])
		}
	}
	if b.apiKey == "" {
		b.apiKey = os.Getenv("KVQ_API_KEY")
	}
	b.client = newServeClient()
	levelRequests := func(c int) int {
		if *requests > 0 {
			return *requests
		}
		return max(4, 2*c)
	}

	// One request per server first, not counted, its prompt that of a round after the
	// last: a server that is down or refuses the body says so before the run, and the
	// first counted requests do not pay for paging in weights.
	for ui := range b.urls {
		if res := b.do(context.Background(), ui, b.prompt(*rounds, 0, 0)); res.err != nil {
			fmt.Fprintf(stderr, "bench serve: warm-up request to %s failed: %v\n", b.names[ui], res.err)
		}
	}
	rep := serveReport{URLs: b.urls, Extra: rawExtras, Concurrency: conc, MaxTokens: b.maxTokens, PromptWords: b.promptWords, Rounds: *rounds}
	reported := map[[2]int]bool{} // (url, concurrency index) pairs whose first error was printed
	// The levels of a round: concurrency by concurrency, every server at each, in this
	// order in odd rounds and the reverse in even ones, so that a machine whose speed
	// drifts during a round favours no pair over the rounds (ABBA).
	var levels [][2]int // (concurrency index, url index)
	for ci := range conc {
		for ui := range b.urls {
			levels = append(levels, [2]int{ci, ui})
		}
	}
	for r := range *rounds {
		for _, lv := range levels {
			ci, ui := lv[0], lv[1]
			c, u := conc[ci], b.names[ui]
			label := fmt.Sprintf("round %d/%d %s c=%d", r+1, *rounds, u, c)
			rec := b.level(r, ci, ui, c, levelRequests(c), newProgress(stderr, label, "requests", 1))
			rep.Records = append(rep.Records, rec)
			fmt.Fprintf(stdout, "round %d/%d  %s  c=%-3d %9.1f tok/s  TTFT p50 %.1f p99 %.1f ms  TPOT p50 %.2f ms  ITL p50 %.2f p99 %.2f ms  %d ok %d failed  (%d tokens from %s in %.2f s)\n",
				r+1, *rounds, u, c, rec.TokensPerS, rec.TTFT.P50, rec.TTFT.P99, rec.TPOT.P50, rec.ITL.P50, rec.ITL.P99, rec.OK, rec.Failed, rec.Tokens, rec.TokensFrom, rec.Seconds)
			if rec.FirstError != "" && !reported[[2]int{ui, ci}] {
				reported[[2]int{ui, ci}] = true
				fmt.Fprintf(stdout, "  first error (%s c=%d): %s\n", u, c, rec.FirstError)
			}
		}
		slices.Reverse(levels)
	}
	rep.Summary = summarizeServe(rep.Records, len(b.urls), conc)
	printServeSummary(stdout, rep.Summary, b.names, *rounds)
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rep)
	}
	return nil
}

// parseConcurrency reads a comma-separated list of client counts, each ≥ 1.
func parseConcurrency(s string) ([]int, error) {
	var cs []int
	for f := range strings.SplitSeq(s, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return nil, fmt.Errorf("%q is not a client count ≥ 1 (want a list such as 1,16,64)", f)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// baseURL checks u is an absolute http(s) URL and returns it without a trailing slash.
func baseURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL with a host", u)
	}
	return strings.TrimRight(u, "/"), nil
}

// parseExtra reads --extra: a JSON object.
func parseExtra(s string) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, fmt.Errorf("%q is not a JSON object", s)
	}
	return m, nil
}

// newServeClient is the HTTP client of the benchmark. Keep-alives are off: a server
// may close a kept-alive connection while it sits idle between two requests, and
// net/http does not retry a POST that meets such a connection (it is not
// idempotent), so a request would fail for the client's reuse, not for the server's
// work. Each request opens its own connection instead, a fraction of a millisecond
// on a local network beside a generation. Dialling and the TLS handshake are
// bounded; the rest is bounded by each request's timeout.
func newServeClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   true,
	}}
}

// promptWordList is what synthetic prompts are made of.
var promptWordList = strings.Fields(`the a little girl boy dog cat bird tree house park ball sun moon river garden
friend mother father big small red blue green happy sad ran played saw found wanted
said jumped looked went came gave took made loved helped car boat box toy cake flower
day night rain snow star hill road door window book apple fish bear frog duck hat`)

// prompt is the synthetic prompt of request i of the level (round r, concurrency
// index ci): words picked by a generator seeded from the three, so that every run and
// every server gets the same prompts, and no two requests of a run the same.
func (b *serveBench) prompt(r, ci, i int) string {
	x := uint64(r)<<42 ^ uint64(ci)<<32 ^ uint64(i)
	words := make([]string, b.promptWords)
	for w := range words {
		x += 0x9e3779b97f4a7c15 // splitmix64
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		words[w] = promptWordList[z%uint64(len(promptWordList))]
	}
	return fmt.Sprintf("Story %d.%d.%d: %s", r+1, ci+1, i+1, strings.Join(words, " "))
}

// body is the JSON body of a request to url ui with prompt.
func (b *serveBench) body(ui int, prompt string) ([]byte, error) {
	m := map[string]any{"prompt": prompt, "max_tokens": b.maxTokens, "temperature": 0, "stream": true,
		"stream_options": map[string]bool{"include_usage": true}}
	if b.model != "" {
		m["model"] = b.model
	}
	if ui < len(b.extras) {
		for k, v := range b.extras[ui] {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// level runs n requests at concurrency c on url ui and summarizes them.
func (b *serveBench) level(r, ci, ui, c, n int, bar *progress) serveRecord {
	results := make([]serveResult, n)
	var next atomic.Int64
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	for range min(c, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				results[i] = b.do(context.Background(), ui, b.prompt(r, ci, i))
				mu.Lock()
				done++
				bar.update(done, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rec := serveRecord{Round: r + 1, Server: ui, URL: b.urls[ui], Concurrency: c, Requests: n, Seconds: time.Since(t0).Seconds()}
	bar.done()
	var ttft, itl, tpot []time.Duration
	fromUsage, fromChunks := 0, 0
	for _, res := range results {
		if res.err != nil {
			rec.Failed++
			if rec.FirstError == "" {
				rec.FirstError = res.err.Error()
			}
			continue
		}
		rec.OK++
		tokens := res.chunks
		if res.usage >= 0 {
			tokens = res.usage
			fromUsage++
		} else {
			fromChunks++
		}
		rec.Tokens += tokens
		if tokens > 1 && res.chunks > 0 {
			tpot = append(tpot, res.gen/time.Duration(tokens-1))
		}
		if res.chunks > 0 {
			ttft = append(ttft, res.ttft)
		}
		itl = append(itl, res.itl...)
	}
	switch {
	case rec.OK == 0:
		rec.TokensFrom = "none"
	case fromChunks == 0:
		rec.TokensFrom = "usage"
	case fromUsage == 0:
		rec.TokensFrom = "text chunks"
	default:
		rec.TokensFrom = fmt.Sprintf("usage (%d requests) and text chunks (%d)", fromUsage, fromChunks)
	}
	if rec.Seconds > 0 {
		rec.TokensPerS = float64(rec.Tokens) / rec.Seconds
	}
	rec.TTFT, rec.ITL, rec.TPOT = engine.LatencyOf(ttft), engine.LatencyOf(itl), engine.LatencyOf(tpot)
	return rec
}

// do sends one streaming completion request to url ui and reads its stream to the
// end: an answer other than 200, a broken or unreadable stream, an error chunk or a
// stream that ends without [DONE] is an error.
func (b *serveBench) do(ctx context.Context, ui int, prompt string) serveResult {
	res := serveResult{usage: -1}
	body, err := b.body(ui, prompt)
	if err != nil {
		res.err = err
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.urls[ui]+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		res.err = err
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if b.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	t0 := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		res.err = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var first, last time.Time
	for sc.Scan() {
		ev, err := parseSSELine(sc.Bytes())
		if err != nil {
			res.err = err
			return res
		}
		if ev.done {
			res.gen = last.Sub(first)
			return res
		}
		if ev.usage >= 0 {
			res.usage = ev.usage
		}
		if ev.text {
			now := time.Now()
			if res.chunks == 0 {
				first = now
				res.ttft = now.Sub(t0)
			} else {
				res.itl = append(res.itl, now.Sub(last))
			}
			last = now
			res.chunks++
		}
	}
	res.err = errors.New("stream ended before [DONE]")
	if err := sc.Err(); err != nil {
		res.err = fmt.Errorf("stream ended before [DONE]: %w", err)
	}
	return res
}

// sseEvent is what one line of a completion stream says.
type sseEvent struct {
	done  bool // the data line [DONE] that ends the stream
	text  bool // a chunk whose choices carry text
	usage int  // the chunk's usage.completion_tokens; -1: no usage
}

// parseSSELine reads one line of the server-sent event stream of /v1/completions,
// without its line ending (a trailing \r is dropped). Every data line is one JSON
// chunk or [DONE]; blank lines, comments and other fields say nothing. An error is a
// data line that is not a JSON object, a chunk holding an error, or a negative token
// count.
func parseSSELine(line []byte) (sseEvent, error) {
	ev := sseEvent{usage: -1}
	payload, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\r")), []byte("data:"))
	if !ok {
		return ev, nil
	}
	payload = bytes.TrimPrefix(payload, []byte(" "))
	if string(payload) == "[DONE]" {
		ev.done = true
		return ev, nil
	}
	var ch struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(payload, &ch); err != nil {
		return ev, fmt.Errorf("stream chunk %.100q: %w", payload, err)
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return ev, fmt.Errorf("stream error: %.300s", ch.Error)
	}
	for _, c := range ch.Choices {
		ev.text = ev.text || c.Text != ""
	}
	if ch.Usage != nil {
		if ch.Usage.CompletionTokens < 0 {
			return ev, fmt.Errorf("stream chunk reports %d completion tokens", ch.Usage.CompletionTokens)
		}
		ev.usage = ch.Usage.CompletionTokens
	}
	return ev, nil
}

// summarizeServe gives each (server, concurrency) pair's medians over the rounds of
// recs, and the median of its per-round tok/s ratio to the first pair's (server 0 at
// conc[0]), for servers 0 to n−1.
func summarizeServe(recs []serveRecord, n int, conc []int) []serveSummary {
	type key struct{ server, c int }
	byPair := map[key][]serveRecord{}
	first := map[int]float64{} // round → the first pair's tok/s
	for _, rec := range recs {
		k := key{rec.Server, rec.Concurrency}
		byPair[k] = append(byPair[k], rec)
		if k == (key{0, conc[0]}) {
			first[rec.Round] = rec.TokensPerS
		}
	}
	var out []serveSummary
	for server := range n {
		for _, c := range conc {
			rs := byPair[key{server, c}]
			if len(rs) == 0 {
				continue
			}
			s := serveSummary{Server: server, URL: rs[0].URL, Concurrency: c, MinTokensS: math.Inf(1)}
			var tps, itl, tpot, ratios []float64
			for _, r := range rs {
				tps = append(tps, r.TokensPerS)
				itl = append(itl, r.ITL.P99)
				tpot = append(tpot, r.TPOT.P50)
				s.MinTokensS, s.MaxTokensS = min(s.MinTokensS, r.TokensPerS), max(s.MaxTokensS, r.TokensPerS)
				s.OK += r.OK
				s.Failed += r.Failed
				if f := first[r.Round]; f > 0 {
					ratios = append(ratios, r.TokensPerS/f)
				}
			}
			s.TokensPerS, s.ITLP99ms, s.TPOTms = median(tps), median(itl), median(tpot)
			if len(ratios) > 0 {
				m := median(ratios)
				s.Ratio = &m
			}
			out = append(out, s)
		}
	}
	return out
}

// printServeSummary writes the summary table, calling server i names[i].
func printServeSummary(w io.Writer, sum []serveSummary, names []string, rounds int) {
	if len(sum) == 0 {
		return
	}
	width := len("url")
	for _, n := range names {
		width = max(width, len(n))
	}
	fmt.Fprintf(w, "\nsummary of %d rounds: median tok/s [range]; ratio: median of the rounds' tok/s over %s c=%d's in the same round; "+
		"TPOT: time per output token after a request's first, the median of the rounds' medians\n", rounds, names[sum[0].Server], sum[0].Concurrency)
	fmt.Fprintf(w, "%-*s  %4s  %24s  %6s  %11s  %10s  %s\n", width, "url", "c", "tok/s [range]", "ratio", "TPOT p50 ms", "ITL p99 ms", "ok/failed")
	for _, s := range sum {
		ratio := "-"
		if s.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *s.Ratio)
		}
		fmt.Fprintf(w, "%-*s  %4d  %24s  %6s  %11.2f  %10.2f  %d/%d\n", width, names[s.Server], s.Concurrency,
			fmt.Sprintf("%.1f [%.1f–%.1f]", s.TokensPerS, s.MinTokensS, s.MaxTokensS), ratio, s.TPOTms, s.ITLP99ms, s.OK, s.Failed)
	}
}
