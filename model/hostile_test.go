package model

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"kvq/gguf"
)

// tinyGGUF is a small llama file (width 4, 2 heads, one layer, 8 tokens) with every tensor of
// its one layer, no tokenizer, and the metadata in set on top of its own (a nil
// value drops a key). It is the base of the hostile files below.
func tinyGGUF(t testing.TB, set map[string]any) []byte {
	t.Helper()
	meta := []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"llama.embedding_length", uint32(4)},
		{"llama.block_count", uint32(1)},
		{"llama.attention.head_count", uint32(2)},
		{"llama.feed_forward_length", uint32(4)},
		{"llama.context_length", uint32(64)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.freq_base", float32(10000)},
	}
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	for _, kv := range meta {
		v := kv.v
		if s, ok := set[kv.k]; ok {
			v = s
		}
		if v != nil {
			w.AddKV(kv.k, v)
		}
	}
	for k, v := range set {
		if !strings.HasPrefix(k, "llama.") && k != "general.architecture" || v == nil {
			continue
		}
		found := false
		for _, kv := range meta {
			found = found || kv.k == k
		}
		if !found {
			w.AddKV(k, v)
		}
	}
	tensors := []struct {
		name string
		dims []uint64
	}{
		{"token_embd.weight", []uint64{4, 8}},
		{"output_norm.weight", []uint64{4}},
		{"blk.0.attn_norm.weight", []uint64{4}},
		{"blk.0.attn_q.weight", []uint64{4, 4}},
		{"blk.0.attn_k.weight", []uint64{4, 4}},
		{"blk.0.attn_v.weight", []uint64{4, 4}},
		{"blk.0.attn_output.weight", []uint64{4, 4}},
		{"blk.0.ffn_norm.weight", []uint64{4}},
		{"blk.0.ffn_gate.weight", []uint64{4, 4}},
		{"blk.0.ffn_up.weight", []uint64{4, 4}},
		{"blk.0.ffn_down.weight", []uint64{4, 4}},
	}
	for _, tn := range tensors {
		w.AddTensor(tn.name, gguf.TypeF16, tn.dims...)
	}
	for _, ti := range w.Tensors() {
		w.WriteRaw(make([]byte, ti.Size))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hostileCases are metadata that must be refused before anything is sized by it.
var hostileCases = []struct {
	name string
	set  map[string]any
	want string
}{
	{"block_count 2^24", map[string]any{"llama.block_count": uint32(1 << 24)}, "block_count"},
	{"block_count 2", map[string]any{"llama.block_count": uint32(2)}, "block_count"},
	{"embedding_length not the embedding's", map[string]any{"llama.embedding_length": uint32(8)}, "embedding_length"},
	{"head_count 2^24", map[string]any{"llama.attention.head_count": uint32(1 << 24)}, "head_count"},
	{"NaN RMS epsilon", map[string]any{"llama.attention.layer_norm_rms_epsilon": float32(math.NaN())}, "epsilon"},
	{"negative RMS epsilon", map[string]any{"llama.attention.layer_norm_rms_epsilon": float32(-1e-5)}, "epsilon"},
	{"infinite RoPE base", map[string]any{"llama.rope.freq_base": float32(math.Inf(1))}, "freq_base"},
	{"negative RoPE base", map[string]any{"llama.rope.freq_base": float32(-10000)}, "freq_base"},
	{"NaN RoPE base", map[string]any{"llama.rope.freq_base": float32(math.NaN())}, "freq_base"},
	{"context 2^32-1", map[string]any{"llama.context_length": uint32(math.MaxUint32)}, "context_length"},
}

// Hostile metadata fails with an error naming the key, in well under a second and
// 100 MB (a 608-byte file claiming 2^24 layers used to take 12.2 GiB and 43 s).
func TestHostileMetadata(t *testing.T) {
	if _, err := ConfigFromGGUF(mustParse(t, tinyGGUF(t, nil))); err != nil {
		t.Fatalf("the base file: %v", err)
	}
	for _, tc := range hostileCases {
		data := tinyGGUF(t, tc.set)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		_, err := FromGGUF(mustParse(t, data))
		d := time.Since(t0)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
		if alloc > 100<<20 {
			t.Errorf("%s: %d bytes allocated", tc.name, alloc)
		}
		t.Logf("%s (%d bytes): %v, %d bytes allocated: %v", tc.name, len(data), d, alloc, err)
	}
}

func mustParse(t testing.TB, data []byte) *gguf.File {
	t.Helper()
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// FuzzFromGGUF builds models from arbitrary files: nothing panics, and a model built
// has the shape its tensors give. The corpus holds the hostile files above
// (KVQ_WRITE_CORPUS=1 go test ./model -run TestWriteHostileCorpus rewrites them).
func FuzzFromGGUF(f *testing.F) {
	f.Add(tinyGGUF(f, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		m, err := FromGGUF(file)
		if err != nil {
			return
		}
		if len(m.layers) != m.Layers || m.Dim*m.Vocab == 0 {
			t.Fatalf("model of %d layers holds %d; dim %d, vocab %d", m.Layers, len(m.layers), m.Dim, m.Vocab)
		}
	})
}

// TestWriteHostileCorpus writes hostileCases into FuzzFromGGUF's corpus when
// KVQ_WRITE_CORPUS is set.
func TestWriteHostileCorpus(t *testing.T) {
	if os.Getenv("KVQ_WRITE_CORPUS") == "" {
		t.Skip("set KVQ_WRITE_CORPUS=1 to rewrite testdata/fuzz/FuzzFromGGUF")
	}
	for _, tc := range hostileCases {
		name := strings.NewReplacer(" ", "-", "^", "", "'", "").Replace(tc.name)
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", tinyGGUF(t, tc.set))
		if err := os.WriteFile(filepath.Join("testdata", "fuzz", "FuzzFromGGUF", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
