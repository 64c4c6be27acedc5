//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the server's log writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServe runs `kvq serve` on a free loopback port with 16-token blocks, completes a
// prompt over HTTP, and stops it with a real SIGINT: the exit is clean and the logs
// report the block size and the shutdown. By default the idle server prefaults cache
// memory up to the budget (--kv-prefault's 1 GiB is more), logs it once and reports it
// in /metrics; with --kv-prefault 0 it makes none.
func TestServe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		prefault bool
	}{
		{"default", nil, true},
		{"no prefault", []string{"--kv-prefault", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testServe(t, tc.args, tc.prefault) })
	}
}

func testServe(t *testing.T, args []string, prefault bool) {
	outR, outW := io.Pipe()
	var logs lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- runMain(append([]string{"serve", "--kv-budget", "4MiB", "--port", "0", "--block-tokens", "16", "--cache", "q8"}, args...), outW, &logs)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatalf("serve printed nothing; logs: %s", logs.String())
	}
	_, addr, ok := strings.Cut(lines.Text(), "listening on ")
	if !ok {
		t.Fatalf("first line %q names no address", lines.Text())
	}
	addr, _, _ = strings.Cut(addr, " ")
	go io.Copy(io.Discard, outR) // the rest of stdout, if any

	if prefault {
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "kv cache memory prefaulted"); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no prefault log 30 s after start: %s", logs.String())
			}
		}
	}
	resp, err := http.Post(addr+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once upon a time","max_tokens":8,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var res struct {
		Choices []struct{ Text string }
		Usage   struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || strings.TrimSpace(res.Choices[0].Text) == "" || res.Usage.CompletionTokens < 1 {
		t.Fatalf("completion %s", body)
	}
	if strings.Contains(logs.String(), "without an API key") {
		t.Errorf("warned about the API key on loopback: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "block_tokens=16") {
		t.Errorf("start log does not report block_tokens=16: %s", logs.String())
	}
	time.Sleep(50 * time.Millisecond) // idle again: a server that prefaults has begun
	metrics := get(t, addr+"/metrics")
	faulted, ready := metricValue(t, metrics, "kvq_kv_prefault_bytes_total"), metricValue(t, metrics, "kvq_kv_blocks_ready")
	wantLog := "kv_prefault=off"
	if prefault {
		wantLog = `kv_prefault="4.00 MiB"`
		if faulted <= 0 || ready <= 0 || metricValue(t, metrics, "kvq_kv_held_bytes") < faulted {
			t.Errorf("after prefaulting: %v bytes faulted, %v blocks ready, %v bytes held", faulted, ready, metricValue(t, metrics, "kvq_kv_held_bytes"))
		}
	} else if faulted != 0 || strings.Contains(logs.String(), "prefaulted") {
		t.Errorf("--kv-prefault 0: %v bytes faulted; logs: %s", faulted, logs.String())
	}
	if !strings.Contains(logs.String(), wantLog) {
		t.Errorf("start log does not say %s: %s", wantLog, logs.String())
	}

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d after SIGINT; logs: %s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop 30 s after SIGINT")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no shutdown log: %s", logs.String())
	}
}

// get returns the body of a GET of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue is the value of the unlabelled metric name in a Prometheus text page.
func metricValue(t *testing.T, page, name string) float64 {
	t.Helper()
	for line := range strings.Lines(page) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s in %s", name, page)
	return 0
}

// TestServeFlagErrors: bad flags are refused before anything listens, naming the flag.
func TestServeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--threads", "-1"}, "--threads"},
		{[]string{"serve", "--kv-budget", "0", "--port", "70000"}, "--port"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--block-tokens", "-3"}, "--block-tokens"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--cache", "q5"}, "--cache"},
		{[]string{"serve", "--kv-budget", "lots"}, "lots"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--max-conns", "0"}, "--max-conns"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--write-timeout", "-1s"}, "--write-timeout"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--calibrate-tokens", "-1"}, "--calibrate-tokens"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--kv-prefault", "-1"}, "kv-prefault"},
		{[]string{"serve", "--kv-budget", "0", "--port", "0", "--cache", "q8", "--calibrate-tokens", "64"}, "FP8"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure mentioning %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestDefaultKVBudget: without --kv-budget, serve takes half the memory available,
// or 1 GiB where that is unknown, and says which.
func TestDefaultKVBudget(t *testing.T) {
	for _, tc := range []struct {
		avail int64
		want  byteSize
		note  string
	}{
		{8 << 30, 4 << 30, "half of the 8.00 GiB available"},
		{0, 1 << 30, "unknown"},
	} {
		got, note := defaultKVBudget(tc.avail)
		if got != tc.want || !strings.Contains(note, tc.note) {
			t.Errorf("defaultKVBudget(%d) = %d, %q; want %d, a note with %q", tc.avail, got, note, tc.want, tc.note)
		}
	}
}

// The warning about a missing API key is for addresses beyond loopback.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{{"127.0.0.1", true}, {"::1", true}, {"0.0.0.0", false}, {"::", false}, {"192.168.1.5", false}} {
		if got := loopback(&net.TCPAddr{IP: net.ParseIP(tc.ip)}); got != tc.want {
			t.Errorf("loopback(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}
