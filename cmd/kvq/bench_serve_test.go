package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
	"kvq/server"
)

// readServeReport reads the --json output of bench serve.
func readServeReport(t *testing.T, path string) serveReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep serveReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, b)
	}
	return rep
}

// builtinServer is a kvq server over the built-in model on a loopback socket that
// keeps the JSON bodies of the requests it gets.
type builtinServer struct {
	*httptest.Server
	m      *model.Model
	mu     sync.Mutex
	bodies []map[string]any
}

func newBuiltinServer(t *testing.T) *builtinServer {
	t.Helper()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := m.CacheConfig("f16", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(server.Options{})
	if err := s.Start(m, c, engine.Config{}); err != nil {
		t.Fatal(err)
	}
	bs := &builtinServer{m: m}
	bs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body %s: %v", b, err)
		}
		bs.mu.Lock()
		bs.bodies = append(bs.bodies, body)
		bs.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(bs.Close) // runs after Shutdown
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return bs
}

// noEOG is --extra's object banning every end-of-generation token of m.
func noEOG(t *testing.T, m *model.Model) map[string]any {
	t.Helper()
	bias := map[string]float64{}
	for id := range int32(m.Vocab) {
		if m.Tok.IsEOG(id) {
			bias[strconv.Itoa(int(id))] = -100
		}
	}
	if len(bias) == 0 {
		t.Fatal("the built-in model has no end-of-generation token")
	}
	return map[string]any{"logit_bias": bias}
}

// TestBenchServe runs bench serve against a kvq server over the built-in model on a
// loopback socket, with every end-of-generation token banned through --extra's
// logit_bias: every request generates exactly --max-tokens tokens, and the report
// counts them from the streams' usage.
func TestBenchServe(t *testing.T) {
	ts := newBuiltinServer(t)
	extra, _ := json.Marshal(noEOG(t, ts.m))
	jsonPath := filepath.Join(t.TempDir(), "serve.json")
	const maxTokens = 8
	code, out, errOut := run(t, "bench", "serve", "--url", ts.URL+"/", "--concurrency", "1,2", "--rounds", "1",
		"--max-tokens", strconv.Itoa(maxTokens), "--extra", string(extra), "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, c := range []int{1, 2} {
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^round 1/1  %s  c=%d +[0-9.]+ tok/s .* 4 ok 0 failed  \(32 tokens from usage in `, regexp.QuoteMeta(ts.URL), c))
		if !line.MatchString(out) {
			t.Errorf("no line for c=%d with 4 ok requests and 32 tokens from usage:\n%s", c, out)
		}
	}
	if !strings.Contains(out, "summary of 1 rounds") || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(ts.URL)+` +1 +\S+ \[\S+\] +1\.00 `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(ts.URL)+` +2 +\S+ \[\S+\] +[0-9]+\.[0-9]{2} +[0-9.]+ +[0-9.]+ +4/0$`).MatchString(out) {
		t.Errorf("summary table missing or without ratios:\n%s", out)
	}
	if !strings.Contains(errOut, "c=2: 4/4 requests (100%)") {
		t.Errorf("stderr has no progress: %s", errOut)
	}

	rep := readServeReport(t, jsonPath)
	if len(rep.Records) != 2 || len(rep.Summary) != 2 {
		t.Fatalf("%d records and %d summaries, want 2 and 2", len(rep.Records), len(rep.Summary))
	}
	for _, rec := range rep.Records {
		if rec.Requests != 4 || rec.OK != 4 || rec.Failed != 0 || rec.Tokens != 4*maxTokens || rec.TokensFrom != "usage" ||
			rec.TokensPerS <= 0 || rec.TTFT.Count != 4 || rec.ITL.Count == 0 || rec.TPOT.Count != 4 || rec.TPOT.Max > 1000*rec.Seconds {
			t.Errorf("record %+v: want 4 requests ok with %d tokens from usage", rec, 4*maxTokens)
		}
	}
	if r := rep.Summary[0].Ratio; r == nil || *r != 1 {
		t.Errorf("first pair's ratio %v, want 1", r)
	}
	if r := rep.Summary[1].Ratio; r == nil || *r <= 0 {
		t.Errorf("second pair's ratio %v, want > 0", r)
	}
	want := rep.Records[1].TokensPerS / rep.Records[0].TokensPerS
	if r := rep.Summary[1].Ratio; r != nil && *r != want {
		t.Errorf("second pair's ratio %v, want its tok/s over the first's, %v", *r, want)
	}

	// The bodies: a warm-up request, then 4 per level, each streaming at temperature 0
	// with usage asked for, --extra merged in, and no two prompts of the levels alike.
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.bodies) != 9 {
		t.Fatalf("server got %d requests, want 9", len(ts.bodies))
	}
	prompts := map[any]bool{}
	for _, b := range ts.bodies[1:] {
		so, _ := b["stream_options"].(map[string]any)
		if b["stream"] != true || so["include_usage"] != true || b["temperature"] != 0.0 || b["max_tokens"] != float64(maxTokens) || b["logit_bias"] == nil {
			t.Errorf("request body %v", b)
		}
		prompts[b["prompt"]] = true
	}
	if len(prompts) != 8 {
		t.Errorf("%d different prompts in 8 requests: %v", len(prompts), prompts)
	}
}

// TestBenchServeRounds runs two rounds over one server given twice, the second time
// with --extra setting max_tokens to 4: the second round runs the first's levels in
// reverse, each server keeps its own rows under its position, and the summary's medians and ratios are those of the
// rounds' records.
func TestBenchServeRounds(t *testing.T) {
	ts := newBuiltinServer(t)
	extra0, _ := json.Marshal(noEOG(t, ts.m))
	short := noEOG(t, ts.m)
	short["max_tokens"] = 4
	extra1, _ := json.Marshal(short)
	jsonPath := filepath.Join(t.TempDir(), "serve.json")
	code, out, errOut := run(t, "bench", "serve", "--url", ts.URL, "--extra", string(extra0), "--url", ts.URL, "--extra", string(extra1),
		"--concurrency", "1,2", "--rounds", "2", "--max-tokens", "8", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := readServeReport(t, jsonPath)
	if len(rep.Records) != 8 || len(rep.Summary) != 4 {
		t.Fatalf("%d records and %d summaries, want 8 and 4", len(rep.Records), len(rep.Summary))
	}
	var order [][2]int // (server, concurrency) of each level in turn
	for _, rec := range rep.Records {
		order = append(order, [2]int{rec.Server, rec.Concurrency})
		if want := 4 * []int{8, 4}[rec.Server]; rec.OK != 4 || rec.Tokens != want || rec.URL != ts.URL {
			t.Errorf("record %+v: want 4 requests ok with %d tokens", rec, want)
		}
	}
	// Round 2 runs round 1's levels in reverse (ABBA).
	if want := [][2]int{{0, 1}, {1, 1}, {0, 2}, {1, 2}, {1, 2}, {0, 2}, {1, 1}, {0, 1}}; !slices.Equal(order, want) {
		t.Errorf("levels (server, concurrency) ran in the order %v, want %v", order, want)
	}
	for _, name := range []string{ts.URL + " #1", ts.URL + " #2"} {
		if !strings.Contains(out, "round 2/2  "+name+"  c=2 ") || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+` +2 `).MatchString(out) {
			t.Errorf("output does not name %q in its lines and summary:\n%s", name, out)
		}
	}
	first := map[int]float64{}
	for _, rec := range rep.Records {
		if rec.Server == 0 && rec.Concurrency == 1 {
			first[rec.Round] = rec.TokensPerS
		}
	}
	for _, s := range rep.Summary {
		var tps, itl, ratio []float64
		for _, rec := range rep.Records {
			if rec.Server == s.Server && rec.Concurrency == s.Concurrency {
				tps, itl, ratio = append(tps, rec.TokensPerS), append(itl, rec.ITL.P99), append(ratio, rec.TokensPerS/first[rec.Round])
			}
		}
		mid := func(x []float64) float64 { return (min(x[0], x[1]) + max(x[0], x[1])) / 2 }
		if len(tps) != 2 || s.TokensPerS != mid(tps) || s.MinTokensS != min(tps[0], tps[1]) || s.MaxTokensS != max(tps[0], tps[1]) ||
			s.ITLP99ms != mid(itl) || s.Ratio == nil || *s.Ratio != mid(ratio) || s.OK != 8 {
			t.Errorf("summary %+v of tok/s %v, ITL p99 %v, ratios %v", s, tps, itl, ratio)
		}
	}
}

// TestBenchServeFailures runs bench serve against a server that misbehaves on some
// requests: failures are counted and the first one printed, tokens come from the
// number of text chunks when a stream has no usage, a stalled stream ends at
// --timeout, a closed port fails each request at once, and each --extra goes to the
// --url of its position.
func TestBenchServeFailures(t *testing.T) {
	var mu sync.Mutex
	extras := map[string][]string{} // path → the extra fields its requests carried
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		mu.Lock()
		for _, k := range []string{"a", "b"} {
			if body[k] != nil {
				extras[r.URL.Path] = append(extras[r.URL.Path], k)
			}
		}
		mu.Unlock()
		var i int // the request's index in its level, from its prompt "Story R.C.I: ..."
		prompt, _ := body["prompt"].(string)
		if _, err := fmt.Sscanf(prompt, "Story 1.1.%d:", &i); err != nil {
			i = 1 // the warm-up request
		}
		i--
		chunk := func(text string) { fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":%q}]}\n\n", text) }
		switch {
		case r.URL.Path == "/stall/v1/completions":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case r.URL.Path == "/nousage/v1/completions":
			for k := range 3 {
				if k > 0 {
					time.Sleep(20 * time.Millisecond) // a token every 20 ms: TPOT ≥ 20 ms
				}
				chunk("x")
				chunk("") // no text: not a token
				w.(http.Flusher).Flush()
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		case i%4 == 0:
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
		case i%4 == 1:
			chunk("cut")
		case i%4 == 2:
			for range 5 {
				chunk("y")
			}
			fmt.Fprint(w, ": keep-alive comment\n\ndata: [DONE]\r\n\r\n")
		default:
			chunk("z")
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":7,\"total_tokens\":10}}\n\ndata: [DONE]\n\n")
		}
	}))
	defer ts.Close()

	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	jsonPath := filepath.Join(t.TempDir(), "serve.json")
	code, out, errOut := run(t, "bench", "serve", "--url", ts.URL+"/mix", "--url", ts.URL+"/nousage", "--url", ts.URL+"/stall", "--url", closed,
		"--extra", `{"a":1}`, "--extra", `{"b":2}`, "--extra", `{}`, "--extra", `{}`,
		"--concurrency", "2", "--requests", "8", "--rounds", "1", "--timeout", "300ms", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := readServeReport(t, jsonPath)
	if len(rep.Records) != 4 {
		t.Fatalf("%d records, want 4:\n%s", len(rep.Records), out)
	}
	for _, tc := range []struct {
		rec            serveRecord
		ok, tokens     int
		from, firstErr string
	}{
		// Requests 0 and 4 get 500, 1 and 5 a cut stream; 2 and 6 five text chunks
		// without usage, 3 and 7 one chunk and a usage of 7 tokens.
		{rep.Records[0], 4, 2*5 + 2*7, "usage (2 requests) and text chunks (2)", "status 500"},
		{rep.Records[1], 8, 8 * 3, "text chunks", ""},
		{rep.Records[2], 0, 0, "none", "deadline exceeded"},
		{rep.Records[3], 0, 0, "none", "connection refused"},
	} {
		if tc.rec.OK != tc.ok || tc.rec.Failed != 8-tc.ok || tc.rec.Tokens != tc.tokens || tc.rec.TokensFrom != tc.from || !strings.Contains(tc.rec.FirstError, tc.firstErr) {
			t.Errorf("%s: %d ok, %d failed, %d tokens from %q, first error %q; want %d ok, %d tokens from %q, first error %q",
				tc.rec.URL, tc.rec.OK, tc.rec.Failed, tc.rec.Tokens, tc.rec.TokensFrom, tc.rec.FirstError, tc.ok, tc.tokens, tc.from, tc.firstErr)
		}
	}
	// TPOT: /mix's requests of 5 chunks and of one chunk with a usage of 7 (all its
	// tokens at once: 0); /nousage's 3 tokens 20 ms apart.
	if tp := rep.Records[0].TPOT; tp.Count != 4 || tp.P50 != 0 {
		t.Errorf("/mix TPOT %+v: want 4 requests, half of them 0", tp)
	}
	if tp := rep.Records[1].TPOT; tp.Count != 8 || tp.P50 < 20 || tp.Max > 300 {
		t.Errorf("/nousage TPOT %+v: want 8 requests of 20 ms or more each", tp)
	}
	if n := strings.Count(out, "first error"); n != 3 || !strings.Contains(out, "first error ("+ts.URL+"/mix c=2): status 500: ") {
		t.Errorf("want the first error of /mix, /stall and the closed port printed once each:\n%s", out)
	}
	if !strings.Contains(errOut, "warm-up request to "+ts.URL+"/stall failed") {
		t.Errorf("stderr does not report the failed warm-up: %s", errOut)
	}
	if r := rep.Summary[2].Ratio; r == nil || *r != 0 {
		t.Errorf("ratio of a server that answered nothing: %v, want 0", r)
	}
	mu.Lock()
	defer mu.Unlock()
	for path, want := range map[string]string{"/mix/v1/completions": "a", "/nousage/v1/completions": "b", "/stall/v1/completions": ""} {
		for _, k := range extras[path] {
			if k != want {
				t.Errorf("%s got extra field %q, want only %q", path, k, want)
			}
		}
		if want != "" && len(extras[path]) != 9 {
			t.Errorf("%s got --extra in %d requests of 9", path, len(extras[path]))
		}
	}
}

// TestBenchServeFlagErrors: bad flags are usage errors naming the flag, found before
// any request.
func TestBenchServeFlagErrors(t *testing.T) {
	u := "http://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--url is required"},
		{[]string{"--url", "localhost:8080"}, "--url"},
		{[]string{"--url", "ftp://host/x"}, "--url"},
		{[]string{"--url", "http://"}, "--url"},
		{[]string{"--url", u, "--concurrency", "0"}, "--concurrency"},
		{[]string{"--url", u, "--concurrency", "x"}, "--concurrency"},
		{[]string{"--url", u, "--concurrency", "1,,16"}, "--concurrency"},
		{[]string{"--url", u, "--max-tokens", "-1"}, "--max-tokens"},
		{[]string{"--url", u, "--rounds", "0"}, "--rounds"},
		{[]string{"--url", u, "--requests", "-2"}, "--requests"},
		{[]string{"--url", u, "--prompt-words", "0"}, "--prompt-words"},
		{[]string{"--url", u, "--timeout", "0s"}, "--timeout"},
		{[]string{"--url", u, "--extra", "[1]"}, "--extra"},
		{[]string{"--url", u, "--extra", "null"}, "--extra"},
		{[]string{"--url", u, "--extra", "{bad"}, "--extra"},
		{[]string{"--url", u, "--extra", `"s"`}, "--extra"},
		{[]string{"--url", u, "--url", u, "--url", u, "--extra", "{}", "--extra", "{}"}, "--extra is given 2 times for 3 --url"},
	} {
		code, out, errOut := run(t, append([]string{"bench", "serve"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "kvq bench serve -h") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and a usage error mentioning %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestParseSSELine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want sseEvent
		err  string
	}{
		{"", sseEvent{usage: -1}, ""},
		{": comment", sseEvent{usage: -1}, ""},
		{"event: message", sseEvent{usage: -1}, ""},
		{"data: [DONE]", sseEvent{done: true, usage: -1}, ""},
		{"data:[DONE]\r", sseEvent{done: true, usage: -1}, ""},
		{`data: {"choices":[{"text":"hi"}],"usage":null}`, sseEvent{text: true, usage: -1}, ""},
		{`data: {"choices":[{"text":""},{"text":"b"}]}`, sseEvent{text: true, usage: -1}, ""},
		{`data: {"choices":[{"text":""}]}`, sseEvent{usage: -1}, ""},
		{`data: {"choices":[],"usage":{"completion_tokens":12}}`, sseEvent{usage: 12}, ""},
		{`data: {"choices":[{"text":"x"}],"usage":{"completion_tokens":0}}`, sseEvent{text: true, usage: 0}, ""},
		{`data: {"error":{"message":"boom"}}`, sseEvent{usage: -1}, "boom"},
		{`data: {"error":null,"choices":[{"text":"x"}]}`, sseEvent{text: true, usage: -1}, ""},
		{`data: {"usage":{"completion_tokens":-3}}`, sseEvent{usage: -1}, "-3 completion tokens"},
		{`data: {"choices":[{"text":"x"}]`, sseEvent{usage: -1}, "stream chunk"},
		{`data: [1]`, sseEvent{usage: -1}, "stream chunk"},
	} {
		got, err := parseSSELine([]byte(tc.line))
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseSSELine(%q) = %+v, %v; want %+v, error %q", tc.line, got, err, tc.want, tc.err)
		}
	}
}

// FuzzParseSSELine: any line parses without panicking into a consistent event, and a
// chunk written by encoding/json reads back as written.
func FuzzParseSSELine(f *testing.F) {
	f.Add([]byte(`data: {"choices":[{"text":"a"}],"usage":{"completion_tokens":3}}`), "a b", uint16(3))
	f.Add([]byte("data: [DONE]\r"), "", uint16(0))
	f.Add([]byte(": ping"), "\n", uint16(65535))
	f.Add([]byte(`data:{"error":"x"}`), "\x00é", uint16(1))
	f.Fuzz(func(t *testing.T, line []byte, text string, tokens uint16) {
		ev, err := parseSSELine(line)
		if ev.usage < -1 {
			t.Errorf("%q: usage %d", line, ev.usage)
		}
		if !bytes.HasPrefix(line, []byte("data:")) && (ev != sseEvent{usage: -1} || err != nil) {
			t.Errorf("%q is no data line but gave %+v, %v", line, ev, err)
		}
		if ev.done && (ev.text || ev.usage != -1 || err != nil) {
			t.Errorf("%q: [DONE] with %+v, %v", line, ev, err)
		}

		chunk, err := json.Marshal(map[string]any{"choices": []map[string]string{{"text": text}}, "usage": map[string]int{"completion_tokens": int(tokens)}})
		if err != nil {
			t.Fatal(err)
		}
		ev, err = parseSSELine(append([]byte("data: "), chunk...))
		if want := (sseEvent{text: text != "", usage: int(tokens)}); ev != want || err != nil {
			t.Errorf("%s: got %+v, %v; want %+v", chunk, ev, err, want)
		}
	})
}
