package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"kvq/model"
)

// TestBenchDecodeMemory checks the memory figures and the heap profile of bench
// decode, with prefill chunks longer than a pass: the Go heap is measured, the
// profile (a gzipped protocol buffer) is a heap profile that names the forward
// pass's allocations among its strings, and on Linux the resident pages split into
// anonymous and file-backed ones. (The cache's blocks are outside the Go heap:
// kv's TestBlocksOutsideHeap.)
func TestBenchDecodeMemory(t *testing.T) {
	dir := t.TempDir()
	js, prof, tr := filepath.Join(dir, "decode.json"), filepath.Join(dir, "heap.pprof"), filepath.Join(dir, "decode.trace")
	code, out, errOut := run(t, "bench", "decode", "--cache", "q8", "--ctx", "100", "--chunk", "40", "--pass", "16", "--gen", "2",
		"--threads", "1", "--json", js, "--memprofile", prof, "--trace", tr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "RSS anonymous") || !strings.Contains(out, "Go heap objects") {
		t.Errorf("stdout lacks the memory breakdown: %q", out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var r decodeResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.KVBytes <= 0 || r.HeapBytes <= 0 {
		t.Errorf("heap %d bytes, KV %d bytes: want both measured", r.HeapBytes, r.KVBytes)
	}
	if runtime.GOOS == "linux" && (r.RSSAnonBytes <= 0 || r.RSSFileBytes <= 0 || r.RSSAnonBytes+r.RSSFileBytes > r.RSSBytes) {
		t.Errorf("RSS anonymous %d + file-backed %d bytes, peak %d", r.RSSAnonBytes, r.RSSFileBytes, r.RSSBytes)
	}
	// The execution trace of the decode steps is a Go trace file.
	if b, err := os.ReadFile(tr); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("trace file: %d bytes starting %q, %v; want a Go execution trace", len(b), b[:min(len(b), 8)], err)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inuse_space", "kvq/model.(*Model).Forward"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("heap profile does not name %s", want)
		}
	}
}

// runDecodeCompare runs bench decode with args (several caches) and returns its
// stdout and its JSON results.
func runDecodeCompare(t *testing.T, args ...string) (string, []decodeResult) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "decode.json")
	code, out, errOut := run(t, append(append([]string{"bench", "decode"}, args...), "--json", js)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rs []decodeResult
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	return out, rs
}

// TestBenchDecodeCompare runs two caches in one run: the JSON is an array in flag
// order, each cache timed for every round, the first cache's ratio to itself 1, and
// q8 holding fewer KV bytes than f16 at the same length.
func TestBenchDecodeCompare(t *testing.T) {
	out, rs := runDecodeCompare(t, "--cache", "f16", "--cache", "q8", "--ctx", "40", "--gen", "2", "--rounds", "3", "--threads", "1")
	if !strings.Contains(out, "vs f16") || !strings.Contains(out, "3 rounds of 2 decode steps") {
		t.Errorf("stdout lacks the comparison table: %q", out)
	}
	if len(rs) != 2 || rs[0].Cache != "f16" || rs[1].Cache != "q8" {
		t.Fatalf("results %+v, want f16 then q8", rs)
	}
	for _, r := range rs {
		if len(r.Rounds) != 3 || r.DecodeTokens != 6 || r.DecodeTokPerS <= 0 || r.PrefillTokPerS <= 0 {
			t.Errorf("%s: %d rounds, %d tokens, %.1f decode and %.1f prefill tok/s; want 3 rounds of 2 tokens, speeds > 0",
				r.Cache, len(r.Rounds), r.DecodeTokens, r.DecodeTokPerS, r.PrefillTokPerS)
		}
	}
	if rs[0].VsFirst != 1 || rs[1].VsFirst <= 0 {
		t.Errorf("ratios to the first cache %v, %v; want 1 and > 0", rs[0].VsFirst, rs[1].VsFirst)
	}
	if runtime.GOOS == "linux" && (rs[0].VsFirstCPU != 1 || rs[1].VsFirstCPU <= 0 || rs[1].CPUMsPerToken <= 0) {
		t.Errorf("CPU ratios to the first cache %v, %v (%v ms per token); want 1 and > 0", rs[0].VsFirstCPU, rs[1].VsFirstCPU, rs[1].CPUMsPerToken)
	}
	if rs[1].KVBytes >= rs[0].KVBytes {
		t.Errorf("KV bytes q8 %d, f16 %d: q8 should be smaller", rs[1].KVBytes, rs[0].KVBytes)
	}
}

// TestBenchDecodeBreakdown checks --breakdown: a table of the parts for each cache, and
// in the JSON every part of the forward pass with a time per token, the products and
// the attention above 0, their sum below the decode step's time (the parts are timed
// inside the step).
func TestBenchDecodeBreakdown(t *testing.T) {
	out, rs := runDecodeCompare(t, "--cache", "f16", "--cache", "q4", "--ctx", "40", "--gen", "3", "--rounds", "2", "--breakdown")
	if !strings.Contains(out, "decode time per token by part") || !strings.Contains(out, "gate_up") {
		t.Errorf("stdout lacks the breakdown table: %q", out)
	}
	for _, r := range rs {
		var sum float64
		for p := range model.NumParts {
			us, ok := r.Breakdown[p.String()]
			if !ok || us < 0 || (p != model.PartOther && us == 0) {
				t.Errorf("%s: part %s = %v (present %v)", r.Cache, p, us, ok)
			}
			sum += us
		}
		// The medians of the rounds are per token too; the parts' mean can exceed the
		// median round only by the rounds' spread, so compare with the slowest one.
		if slowest := 1e6 / slices.Min(r.Rounds); sum > slowest*1.01 {
			t.Errorf("%s: parts sum to %.0f µs per token, the slowest round took %.0f", r.Cache, sum, slowest)
		}
	}
	// Without the flag, no breakdown.
	js := filepath.Join(t.TempDir(), "decode.json")
	code, out, _ := run(t, "bench", "decode", "--ctx", "8", "--gen", "1", "--json", js)
	if b, _ := os.ReadFile(js); code != 0 || strings.Contains(out, "by part") || strings.Contains(string(b), "breakdown") {
		t.Errorf("breakdown without --breakdown: exit %d, %q, %s", code, out, b)
	}
}

func TestBenchDecodeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pass", "-1"}, "--pass"},
		{[]string{"--rounds", "-2"}, "--rounds"},
		{[]string{"--threads", "-1"}, "--threads"},
		{[]string{"--cache", "f16", "--cache", "q8", "--cpuprofile", "x.prof"}, "one --cache"},
		{[]string{"--cache", "f16", "--cache", "q9"}, "q9"},
	} {
		args := append([]string{"bench", "decode", "--ctx", "8", "--gen", "1"}, tc.args...)
		if code, _, errOut := run(t, args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(tc.xs)
		if got := median(tc.xs); got != tc.want || !slices.Equal(in, tc.xs) {
			t.Errorf("median(%v) = %v (input now %v), want %v, input unchanged", in, got, tc.xs, tc.want)
		}
	}
}
