//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
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
// report the block size and the shutdown.
func TestServe(t *testing.T) {
	outR, outW := io.Pipe()
	var logs lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- runMain([]string{"serve", "--kv-budget", "4MiB", "--port", "0", "--block-tokens", "16", "--cache", "q8"}, outW, &logs)
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
