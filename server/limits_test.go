package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/engine"
	"kvq/internal/procstat"
)

// hugeBody is a request whose prompt is 4 MiB without a space.
func hugeBody(chat bool) string {
	p := strings.Repeat("x", 4<<20-200)
	if chat {
		return `{"messages":[{"role":"user","content":"` + p + `"}]}`
	}
	return `{"prompt":"` + p + `"}`
}

// A prompt far longer than the context is refused before it is tokenized: 400
// naming the field, and the whole request allocates less than 50 MB (tokenizing it
// took 572 MiB).
func TestHugePromptRejectedCheaply(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, chat := range []bool{false, true} {
		path, param := "/v1/completions", "prompt"
		if chat {
			path, param = "/v1/chat/completions", "messages"
		}
		body := []byte(hugeBody(chat))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Host = "localhost"
		rec := httptest.NewRecorder()
		e.s.Handler().ServeHTTP(rec, req)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		var out struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.Body.Bytes())
		}
		if rec.Code != http.StatusBadRequest || out.Error.Param == nil || *out.Error.Param != param || !strings.Contains(out.Error.Message, "at least") {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body.Bytes())
		}
		if alloc > 50<<20 {
			t.Errorf("%s: a %d-byte request allocated %d bytes", path, len(body), alloc)
		}
		t.Logf("%s: %d-byte body: %d, %.1f MB allocated", path, len(body), rec.Code, float64(alloc)/1e6)
	}
}

// BenchmarkHugePrompt times the refusal of one 4 MiB prompt without spaces, in wall
// time (ns/op) and in the process's CPU time (cpu-ms/op, which a busy machine
// disturbs less).
func BenchmarkHugePrompt(b *testing.B) {
	e := newEnv(b, envConfig{})
	body := []byte(hugeBody(false))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu0 := procstat.CPU()
	defer func() { b.ReportMetric(float64((procstat.CPU()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op") }()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", bytes.NewReader(body))
		req.Host = "localhost"
		e.s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			b.Fatalf("%d %s", rec.Code, rec.Body.Bytes())
		}
	}
}

// BenchmarkFlood measures a normal request's latency (p50 and p99 over 300
// requests, one at a time) alone and while 50 clients post 4 MiB prompts at once
// over and over, on real sockets.
//
//	go test ./server -run XXX -bench Flood -benchtime 1x
func BenchmarkFlood(b *testing.B) {
	e := newEnv(b, envConfig{})
	normal := func() time.Duration {
		t0 := time.Now()
		resp := e.post(b, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":2,"temperature":0}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("normal request: %d", resp.StatusCode)
		}
		return time.Since(t0)
	}
	measure := func() (p50, p99 time.Duration) {
		var d []time.Duration
		for range 300 {
			d = append(d, normal())
		}
		slices.Sort(d)
		return d[len(d)/2], d[len(d)*99/100-1]
	}
	body := hugeBody(false)
	for b.Loop() {
		alone50, alone99 := measure()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		for range 50 {
			wg.Go(func() {
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL+"/v1/completions", strings.NewReader(body))
					resp, err := e.ts.Client().Do(req)
					if err != nil {
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					statuses[resp.StatusCode]++
					mu.Unlock()
				}
			})
		}
		time.Sleep(200 * time.Millisecond)
		flood50, flood99 := measure()
		cancel()
		wg.Wait()
		b.ReportMetric(float64(alone50.Microseconds())/1e3, "alone-p50-ms")
		b.ReportMetric(float64(alone99.Microseconds())/1e3, "alone-p99-ms")
		b.ReportMetric(float64(flood50.Microseconds())/1e3, "flood-p50-ms")
		b.ReportMetric(float64(flood99.Microseconds())/1e3, "flood-p99-ms")
		b.Logf("huge prompts answered: %v", statuses)
	}
}

// pipeListener serves connections made by dial over synchronous in-memory pipes: a
// write blocks until the other end reads, as a TCP write does once the buffers of
// a client that stopped reading are full.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
}

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// logBuffer is a slog destination safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A streaming client that stops reading is dropped once a write waits longer than
// WriteTimeout: its request is cancelled, its blocks freed, and it is counted and
// logged as 499.
func TestSlowReaderDropped(t *testing.T) {
	var logs logBuffer
	s := New(Options{WriteTimeout: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	startModel(t, s, slowSteps(time.Millisecond))
	ln := newPipeListener()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	c := ln.dial()
	defer c.Close()
	body := `{"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":true}`
	go fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Read the status line, then stop reading.
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, _, _ := s.engine()
		st := e.Stats()
		if st.Cancelled == 1 && st.Pool.BlocksUsed == 0 && strings.Contains(logs.String(), "status=499") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request was not dropped: %+v\nlog: %s", st, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var b strings.Builder
	s.metrics.write(&b, nil, true)
	if !strings.Contains(b.String(), `kvq_requests_total{status="499"} 1`) {
		t.Errorf("metrics:\n%s", b.String())
	}
}

// An upload that stalls is cut after ReadBodyTimeout with 408; headers that never
// end are cut after ReadHeaderTimeout.
func TestStalledUpload(t *testing.T) {
	s := New(Options{ReadBodyTimeout: 200 * time.Millisecond, ReadHeaderTimeout: 200 * time.Millisecond})
	startModel(t, s, engine.Config{})
	url := serveReal(t, s)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	addr := strings.TrimPrefix(url, "http://")

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{\"prompt\":")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "not received within") {
		t.Errorf("stalled upload: %d %s", resp.StatusCode, b)
	}

	h, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	fmt.Fprintf(h, "POST /v1/completions HTTP/1.1\r\nHost: local")
	h.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(h); err != nil {
		t.Errorf("stalled headers: the connection was not closed: %v", err)
	}
}

// Connections beyond MaxConns are answered 503 at once and closed; once one closes,
// a new connection is served.
func TestConnectionCap(t *testing.T) {
	s := New(Options{MaxConns: 2})
	startModel(t, s, engine.Config{})
	url := serveReal(t, s)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	addr := strings.TrimPrefix(url, "http://")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	get := func() *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		return resp
	}
	time.Sleep(50 * time.Millisecond) // let the server accept the held connections
	if resp := get(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("beyond the cap: %d %v", resp.StatusCode, resp.Header)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for get().StatusCode != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("no connection served after one closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Without an API key, a Host that is a name other than localhost or an allowed
// one gets 421 (DNS rebinding); addresses and allowed names pass.
func TestHostCheck(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		host string
		want int
	}{
		{Options{}, "evil.example:8080", http.StatusMisdirectedRequest},
		{Options{}, "localhost:8080", http.StatusOK},
		{Options{}, "app.localhost", http.StatusOK},
		{Options{}, "127.0.0.1:8080", http.StatusOK},
		{Options{}, "[::1]:8080", http.StatusOK},
		{Options{}, "10.1.2.3", http.StatusOK},
		{Options{AllowedHosts: []string{"evil.example"}}, "EVIL.example:8080", http.StatusOK},
		{Options{AllowedHosts: []string{"*"}}, "any.example", http.StatusOK},
		{Options{APIKey: "k"}, "evil.example", http.StatusOK},
		{Options{APIKey: "k", AllowedHosts: []string{"good.example"}}, "evil.example", http.StatusMisdirectedRequest},
	} {
		s := New(tc.opts)
		startModel(t, s, engine.Config{})
		req := httptest.NewRequest(http.MethodGet, "/health", nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%+v, Host %q: %d, want %d", tc.opts.AllowedHosts, tc.host, rec.Code, tc.want)
		}
		s.Shutdown(context.Background())
	}
}

// Admission tells the truth: more prompts than the queue can ever hold is 400, not
// 429; /health turns 503 "overloaded" while the queue is full and 200 again after;
// a request beyond RequestTimeout is cancelled and answered 504, its blocks freed.
func TestAdmissionTruth(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	e := newEnv(t, envConfig{opts: Options{RequestTimeout: 300 * time.Millisecond}, spec: "q8", budget: 4 << 20,
		engine: engine.Config{MaxRunning: 1, MaxQueue: 2, OnStep: func(engine.StepInfo) {
			<-release
		}}})
	defer once.Do(func() { close(release) })

	resp := e.post(t, "/v1/completions", `{"prompt":["a","b","c"],"max_tokens":2}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "could never be admitted") {
		t.Errorf("3 prompts with --max-queue 2: %d %s", resp.StatusCode, b)
	}

	health := func() (int, string) {
		resp, err := e.ts.Client().Get(e.ts.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := health(); code != 200 {
		t.Fatalf("/health idle: %d %s", code, body)
	}
	// One request runs (its step waits for release), two fill the queue.
	results := make(chan int, 3)
	for i := range 3 {
		go func() {
			resp := e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":"Tom %d","max_tokens":40}`, i))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- resp.StatusCode
		}()
		time.Sleep(30 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := health()
		if code == http.StatusServiceUnavailable && strings.Contains(body, `"overloaded"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health with a full queue: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond) // past every request's timeout
	once.Do(func() { close(release) })
	for range 3 {
		if code := <-results; code != http.StatusGatewayTimeout {
			t.Errorf("request past its timeout: %d, want 504", code)
		}
	}
	if code, body := health(); code != 200 {
		t.Errorf("/health after: %d %s", code, body)
	}
	e.waitMetric(t, "kvq_kv_blocks_used", 0)
}

// cache_salt keeps prefixes apart: a request sees another's cached prompt only when
// both give the same salt (or neither does), and the text does not change.
func TestCacheSalt(t *testing.T) {
	e := newEnv(t, envConfig{spec: "f16", budget: 8 << 20})
	prompt := strings.Repeat("Lily and Tom went to the park. ", 24)
	ask := func(salt string) (string, int) {
		t.Helper()
		field := ""
		if salt != "" {
			field = fmt.Sprintf(`,"cache_salt":%q`, salt)
		}
		var out completionOut
		decode(t, e.post(t, "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":8,"temperature":0`+field+`}`), &out)
		if len(out.Choices) != 1 || out.Usage == nil {
			t.Fatalf("response %+v", out)
		}
		return out.Choices[0].Text, out.Usage.PromptTokensDetails.CachedTokens
	}
	text, c := ask("alice")
	for _, tc := range []struct {
		salt   string
		cached bool
	}{{"bob", false}, {"", false}, {"alice", true}, {"bob", true}, {"", true}} {
		got, c2 := ask(tc.salt)
		if got != text {
			t.Errorf("salt %q: text %q, want %q", tc.salt, got, text)
		}
		if (c2 > 0) != tc.cached {
			t.Errorf("salt %q after alice%s: %d cached tokens, want cached=%v", tc.salt, map[bool]string{true: " and itself", false: ""}[tc.cached], c2, tc.cached)
		}
	}
	if c != 0 {
		t.Errorf("first request: %d cached tokens", c)
	}
	resp := e.post(t, "/v1/completions", `{"prompt":"x","cache_salt":""}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("empty cache_salt: %d", resp.StatusCode)
	}
}

// The byte gate grants in arrival order, and a waiter whose context ends leaves
// the queue without holding back those behind it.
func TestWeighted(t *testing.T) {
	w := newWeighted(10)
	ctx := context.Background()
	if err := w.acquire(ctx, 8); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	waiters := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			w.mu.Lock()
			k := len(w.waiters)
			w.mu.Unlock()
			if k == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiters, want %d", k, n)
			}
		}
	}
	go func() { gone <- w.acquire(cctx, 10) }() // waits: only 2 free
	waiters(1)
	go func() { w.acquire(ctx, 2); order <- 1 }() // 2 are free, but it queues behind the first
	waiters(2)
	select {
	case <-order:
		t.Fatal("a later waiter overtook an earlier one")
	default:
	}
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a cancelled waiter was granted")
	}
	select {
	case <-order: // the cancelled waiter left; the next one got its 2
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter behind a cancelled one was not granted")
	}
	w.release(8)
	w.release(2)
	if err := w.acquire(ctx, 10); err != nil {
		t.Fatalf("all released, acquire 10: %v", err)
	}
}
