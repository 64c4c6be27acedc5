package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvq/model"
)

// TestBenchPrefill runs bench prefill in passes shorter than the prompt: every round
// is timed, the median lies within the rounds' range, the CPU time and the GMAC/s
// are measured, and the breakdown names every part of the forward pass, the
// products above 0 and the parts' sum no more than the rounds' wall time.
func TestBenchPrefill(t *testing.T) {
	js := filepath.Join(t.TempDir(), "prefill.json")
	code, out, errOut := run(t, "bench", "prefill", "--tokens", "40", "--pass", "16", "--rounds", "3", "--threads", "1",
		"--cache", "q8", "--breakdown", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "prefill 40 tokens") || !strings.Contains(out, "median of 3 rounds") {
		t.Errorf("stdout lacks the result line: %q", out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var r prefillResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Tokens != 40 || r.Cache != "q8" || len(r.Rounds) != 3 {
		t.Fatalf("result %+v: want 40 tokens, cache q8, 3 rounds", r)
	}
	lo, hi, wall := r.Rounds[0], r.Rounds[0], 0.0
	for _, v := range r.Rounds {
		lo, hi = min(lo, v), max(hi, v)
		wall += 1e3 * 40 / v // ms
	}
	if r.TokPerS < lo || r.TokPerS > hi || lo <= 0 {
		t.Errorf("median %.1f tok/s outside the rounds %v", r.TokPerS, r.Rounds)
	}
	if r.GMACs <= 0 || r.CPUMsPerToken <= 0 {
		t.Errorf("%.3f GMAC/s, %.3f CPU-ms per token: want both measured", r.GMACs, r.CPUMsPerToken)
	}
	var sum float64
	for p := range model.NumParts {
		v, ok := r.Breakdown[p.String()]
		if !ok {
			t.Errorf("breakdown lacks %s: %v", p, r.Breakdown)
		}
		sum += v
	}
	if r.Breakdown["qkv"] <= 0 || r.Breakdown["gate_up"] <= 0 {
		t.Errorf("breakdown %v: want the products above 0", r.Breakdown)
	}
	if perRound := wall / 3; sum > perRound*1.01 {
		t.Errorf("parts sum to %.3f ms per prefill, more than the %.3f ms a round took", sum, perRound)
	}
}
