package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBenchDecodeMemory checks the memory figures and the heap profile of bench
// decode, with prefill chunks longer than a pass: the heap holds at least the
// cache, the profile (a gzipped protocol buffer) is a heap profile that names the
// cache's block allocation among its strings, and on Linux the resident pages split
// into anonymous and file-backed ones.
func TestBenchDecodeMemory(t *testing.T) {
	dir := t.TempDir()
	js, prof, tr := filepath.Join(dir, "decode.json"), filepath.Join(dir, "heap.pprof"), filepath.Join(dir, "decode.trace")
	code, out, errOut := run(t, "bench", "decode", "--cache", "q8", "--ctx", "100", "--chunk", "40", "--pass", "16", "--gen", "2",
		"--threads", "1", "--json", js, "--memprofile", prof, "--trace", tr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Go heap objects") {
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
	if r.KVBytes <= 0 || r.HeapBytes < r.KVBytes {
		t.Errorf("heap %d bytes, KV %d bytes: the heap holds the cache", r.HeapBytes, r.KVBytes)
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
	for _, want := range []string{"inuse_space", "kv.(*pool).alloc"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("heap profile does not name %s", want)
		}
	}
}

func TestBenchDecodeRejectsNegativePass(t *testing.T) {
	if code, _, errOut := run(t, "bench", "decode", "--pass", "-1"); code == 0 || !strings.Contains(errOut, "--pass") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
