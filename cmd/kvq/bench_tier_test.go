package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchTier: the built-in model's blocks go through a disk tier; the report names
// the tier, its rate, and records as long as the blocks plus the stated overhead.
func TestBenchTier(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tier.json")
	code, out, errOut := run(t, "bench", "tier", "--cache", "q8", "--block-tokens", "16", "--tokens", "100", "--reps", "1",
		"--threads", "1", "--kv-tier", "disk:"+filepath.Join(dir, "blocks"), "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "disk:") || !strings.Contains(out, "prefill") {
		t.Fatalf("stdout %q", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r tierReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Tokens != 96 || len(r.Tiers) != 1 || len(r.Tiers[0].GBPerS) != 1 || r.Tiers[0].GBPerS[0] <= 0 || r.PrefillTokPerS[0] <= 0 {
		t.Errorf("report %+v", r)
	}
	if r.RecordBytes != r.BlockBytes+52+4*16 {
		t.Errorf("records of %d bytes for blocks of %d: want 52 + 4·16 more", r.RecordBytes, r.BlockBytes)
	}
}
