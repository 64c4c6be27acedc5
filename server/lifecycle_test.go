package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

// slowSteps makes every engine step last at least d, so that a request of a few
// hundred tokens is still running when a test acts on it.
func slowSteps(d time.Duration) engine.Config {
	return engine.Config{OnStep: func(engine.StepInfo) { time.Sleep(d) }}
}

// A client that goes away (closes a stream, or cancels a whole request) cancels its
// request: the engine stops generating for it and its blocks are freed at once.
func TestClientGoneFreesBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		{"stream closed after a few chunks", true},
		{"whole request cancelled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{spec: "q8", budget: 4 << 20, engine: slowSteps(3 * time.Millisecond)})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":%v}`, tc.stream)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL+"/v1/completions", strings.NewReader(body))
			done := make(chan error, 1)
			go func() {
				resp, err := e.ts.Client().Do(req)
				if err != nil {
					done <- err
					return
				}
				defer resp.Body.Close()
				if tc.stream {
					// Read three token chunks, then hang up.
					sc := bufio.NewScanner(resp.Body)
					n := 0
					for n < 3 && sc.Scan() {
						if strings.HasPrefix(sc.Text(), "data: {") {
							n++
						}
					}
					cancel()
				}
				_, err = io.Copy(io.Discard, resp.Body)
				done <- err
			}()
			if !tc.stream {
				// Cancel once the request holds cache blocks.
				deadline := time.Now().Add(5 * time.Second)
				for e.metric(t, "kvq_kv_blocks_used") <= 0 {
					if time.Now().After(deadline) {
						t.Fatal("the request never held cache blocks")
					}
					time.Sleep(time.Millisecond)
				}
				cancel()
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("client error %v, want context.Canceled", err)
			}
			e.waitMetric(t, "kvq_kv_blocks_used", 0)
			e.waitMetric(t, "kvq_running_sequences", 0)
			e.waitMetric(t, `kvq_requests_total{status="499"}`, 1)
			if n := e.metric(t, "kvq_tokens_generated_total"); n <= 0 || n >= 400 {
				t.Errorf("%v tokens generated; the request was not cut short", n)
			}
			// Nothing runs any more: the token count stays put.
			n := e.metric(t, "kvq_tokens_generated_total")
			time.Sleep(30 * time.Millisecond)
			if m := e.metric(t, "kvq_tokens_generated_total"); m != n {
				t.Errorf("tokens still generated after the client left: %v then %v", n, m)
			}
		})
	}
}

// serveReal runs s on a real listener and returns its base URL.
func serveReal(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Shutdown")
		}
	})
	return "http://" + ln.Addr().String()
}

func startModel(t *testing.T, s *Server, cfg engine.Config) {
	t.Helper()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := m.CacheConfig("f16", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kv.New(kc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(m, c, cfg); err != nil {
		t.Fatal(err)
	}
}

// streamResult is what a streaming client saw.
type streamResult struct {
	status  int
	chunks  int  // token chunks
	errored bool // an error event came
	done    bool // [DONE] came
	err     error
}

func streamOnce(ctx context.Context, url, body string, started chan<- struct{}) streamResult {
	var r streamResult
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if started != nil {
		started <- struct{}{}
	}
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			r.done = true
		case strings.HasPrefix(line, `data: {"error"`):
			r.errored = true
		case strings.HasPrefix(line, `data: {`):
			r.chunks++
		}
	}
	r.err = sc.Err()
	return r
}

// Shutdown lets requests in flight finish within its deadline, cancels them past
// it with an error event, refuses new connections, and returns once every handler
// has.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deadline  time.Duration
		maxTokens int
		finished  bool // requests in flight complete normally
	}{
		{"in-flight requests finish", 10 * time.Second, 60, true},
		{"past the deadline requests are cancelled", 100 * time.Millisecond, 450, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			url := serveReal(t, s)
			startModel(t, s, slowSteps(4*time.Millisecond))
			const clients = 3
			results := make(chan streamResult, clients)
			started := make(chan struct{}, clients)
			for i := range clients {
				body := fmt.Sprintf(`{"prompt":"Once upon a time %d","max_tokens":%d,"temperature":0,"stream":true}`, i, tc.maxTokens)
				go func() { results <- streamOnce(context.Background(), url, body, started) }()
			}
			for range clients {
				<-started // response headers received: the requests are in the engine
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			t0 := time.Now()
			err := s.Shutdown(ctx)
			took := time.Since(t0)
			if tc.finished && err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if !tc.finished && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown: %v, want DeadlineExceeded", err)
			}
			if took > tc.deadline+6*time.Second {
				t.Errorf("Shutdown took %v", took)
			}
			for range clients {
				r := <-results
				if r.err != nil || r.status != 200 || !r.done {
					t.Fatalf("client: %+v", r)
				}
				if tc.finished && (r.errored || r.chunks < 10) {
					t.Errorf("client did not finish normally: %+v", r)
				}
				if !tc.finished && !r.errored {
					t.Errorf("cancelled client got no error event: %+v", r)
				}
			}
			// The listener is closed: new requests cannot connect.
			r := streamOnce(context.Background(), url, `{"prompt":"a"}`, nil)
			if r.err == nil {
				t.Errorf("a request after Shutdown got status %d", r.status)
			}
		})
	}
}

// Requests beyond the queue bound get 429 with Retry-After, never an unbounded wait.
func TestQueueFull(t *testing.T) {
	e := newEnv(t, envConfig{engine: engine.Config{MaxRunning: 1, MaxQueue: 1, OnStep: func(engine.StepInfo) { time.Sleep(2 * time.Millisecond) }}})
	const clients = 12
	var wg sync.WaitGroup
	statuses := make(chan int, clients)
	for i := range clients {
		wg.Go(func() {
			resp := e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":"Tom %d","max_tokens":40,"temperature":0}`, i))
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 429 {
				if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"error"`) {
					t.Errorf("429 without Retry-After or error body: %v %s", resp.Header, b)
				}
			}
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	// The request running and, if the scheduler admitted it in time, the one queued
	// behind it complete; the others are refused.
	if count[200] < 1 || count[429] < 1 || count[200]+count[429] != clients {
		t.Fatalf("statuses %v", count)
	}
	if got := e.metric(t, `kvq_requests_total{status="429"}`); got != float64(count[429]) {
		t.Errorf("kvq_requests_total{status=\"429\"} = %v, want %d", got, count[429])
	}
	e.waitMetric(t, "kvq_kv_blocks_used", 0)
}
