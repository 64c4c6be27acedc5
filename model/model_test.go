package model

import (
	"bytes"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"kvq/internal/raceflag"
	"kvq/internal/reference"
	"kvq/kv"
)

func loadReference(t *testing.T) *reference.Stories260K {
	t.Helper()
	r, err := reference.Load()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func loadDefault(t *testing.T) *Model {
	t.Helper()
	m, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newCache returns a cache of spec for m, with its configuration changed by edit
// (when given), and a sequence in it.
func newCache(t *testing.T, m *Model, spec string, edit ...func(*kv.Config)) (kv.Cache, kv.SeqID) {
	t.Helper()
	cfg, err := m.CacheConfig(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := c.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	return c, seq
}

func TestConfigOfBuiltinModel(t *testing.T) {
	m := loadDefault(t)
	want := Config{Arch: "llama", Dim: 64, Layers: 5, Heads: 8, KVHeads: 4, HeadDim: 8, FFN: 172, Vocab: 512, Ctx: 512, RopeDims: 8, Tied: true,
		RopeScale: 1, EmbedScale: 1, AttnScale: float32(1 / math.Sqrt(8))}
	got := m.Config
	got.Name, got.RMSEps, got.RopeBase = "", 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("config = %+v, want %+v", got, want)
	}
}

func TestGreedyMatchesReference(t *testing.T) {
	m := loadDefault(t)
	ref := loadReference(t)
	for _, g := range ref.Greedy {
		t.Run(g.Prompt, func(t *testing.T) {
			toks := m.Tok.Encode(g.Prompt, true)
			if !slices.Equal(toks, g.PromptTokens) {
				t.Fatalf("prompt tokens %v, want %v", toks, g.PromptTokens)
			}
			c, seq := newCache(t, m, "f32")
			out, err := m.Generate(c, seq, toks, len(g.Tokens), NewSampler(SamplerConfig{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, g.Tokens) {
				t.Fatalf("greedy tokens\n got %v\nwant %v", out, g.Tokens)
			}
			if text := g.Prompt + m.Tok.Decode(out); text != g.Text {
				t.Fatalf("text %q, want %q", text, g.Text)
			}
		})
	}
}

// TestLoadFromFile loads the built-in model's file both ways a file is read (its own
// copy and a mapping) and checks greedy decoding against the reference.
func TestLoadFromFile(t *testing.T) {
	g := loadReference(t).Greedy[0]
	for _, c := range []struct {
		name string
		load func(string) (*Model, error)
	}{{"Load", Load}, {"LoadMapped", LoadMapped}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.load("../assets/stories260K.gguf")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			// The built-in model's output shares token_embd: Load copies every tensor.
			if want := map[string]int64{"Load": m.WeightBytes(), "LoadMapped": 0}[c.name]; m.PreloadedBytes() != want {
				t.Errorf("PreloadedBytes %d, want %d", m.PreloadedBytes(), want)
			}
			cache, seq := newCache(t, m, "f32")
			out, err := m.Generate(cache, seq, m.Tok.Encode(g.Prompt, true), len(g.Tokens), NewSampler(SamplerConfig{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, g.Tokens) {
				t.Fatalf("greedy tokens\n got %v\nwant %v", out, g.Tokens)
			}
		})
	}
	if _, err := Load("../assets/missing.gguf"); err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("missing file: %v", err)
	}
	// Too little memory available: Load leaves the weights mapped, says so, and works.
	defer func(f func() int64) { memAvailable = f }(memAvailable)
	memAvailable = func() int64 { return 100 << 10 }
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	m, err := Load("../assets/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.PreloadedBytes() != 0 {
		t.Errorf("PreloadedBytes %d with the weights left mapped", m.PreloadedBytes())
	}
	if !strings.Contains(logged.String(), "left mapped") {
		t.Errorf("no warning that the weights stay mapped; log: %q", logged.String())
	}
	cache, seq := newCache(t, m, "f32")
	out, err := m.Generate(cache, seq, m.Tok.Encode(g.Prompt, true), len(g.Tokens), NewSampler(SamplerConfig{}), nil)
	if err != nil || !slices.Equal(out, g.Tokens) {
		t.Fatalf("greedy tokens with the weights mapped: %v, %v", out, err)
	}
}

// TestLogitsMatchReference checks the top-5 logits at every position, both from one
// prefill of the whole prompt and from token-by-token decode.
func TestLogitsMatchReference(t *testing.T) {
	m := loadDefault(t)
	ref := loadReference(t).Logits
	check := func(t *testing.T, pos int, logits []float32) {
		t.Helper()
		want := ref.Top5[pos].Top5
		idx := make([]int, len(logits))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		for k, w := range want {
			id, val := int(w[0]), w[1]
			if idx[k] != id {
				t.Errorf("pos %d rank %d: token %d, want %d", pos, k, idx[k], id)
			}
			if got := float64(logits[id]); math.Abs(got-val) > 1e-3*math.Abs(val) {
				t.Errorf("pos %d token %d: logit %.6f, want %.6f (rel err %.2g)", pos, id, got, val, math.Abs(got-val)/math.Abs(val))
			}
		}
	}
	t.Run("prefill", func(t *testing.T) {
		c, seq := newCache(t, m, "f32")
		out, err := m.Forward(c, []Span{{Seq: seq, Tokens: ref.Tokens, AllLogits: true}})
		if err != nil {
			t.Fatal(err)
		}
		for pos := range ref.Top5 {
			check(t, pos, out[0][pos*m.Vocab:(pos+1)*m.Vocab])
		}
	})
	t.Run("decode", func(t *testing.T) {
		c, seq := newCache(t, m, "f32")
		for pos, tok := range ref.Tokens {
			out, err := m.Forward(c, []Span{{Seq: seq, Tokens: []int32{tok}}})
			if err != nil {
				t.Fatal(err)
			}
			check(t, pos, out[0])
		}
	})
}

// TestBatchedSpansMatchSeparateRuns runs two sequences of different lengths in one
// step and compares with running each alone.
func TestBatchedSpansMatchSeparateRuns(t *testing.T) {
	m := loadDefault(t)
	a := m.Tok.Encode("Once upon a time", true)
	b := m.Tok.Encode("Tom and Lily went to the park", true)
	alone := func(toks []int32) []float32 {
		c, seq := newCache(t, m, "f32")
		out, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks}})
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), out[0]...)
	}
	wa, wb := alone(a), alone(b)
	c, sa := newCache(t, m, "f32")
	sb, err := c.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(c, []Span{{Seq: sa, Tokens: a}, {Seq: sb, Tokens: b}})
	if err != nil {
		t.Fatal(err)
	}
	for i, pair := range [][2][]float32{{out[0], wa}, {out[1], wb}} {
		for j := range pair[0] {
			if d := math.Abs(float64(pair[0][j] - pair[1][j])); d > 1e-4 {
				t.Fatalf("span %d logit %d: batched %v, alone %v", i, j, pair[0][j], pair[1][j])
			}
		}
	}
}

func TestForwardRejectsBadTokens(t *testing.T) {
	m := loadDefault(t)
	c, seq := newCache(t, m, "f32")
	for _, toks := range [][]int32{{-1}, {512}, {}} {
		if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks}}); err == nil {
			t.Errorf("Forward(%v) succeeded, want error", toks)
		}
		if n := c.Len(seq); n != 0 {
			t.Fatalf("failed Forward left %d tokens in the cache", n)
		}
	}
}

func TestRotateComposes(t *testing.T) {
	m := loadDefault(t)
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	y := append([]float32(nil), x...)
	m.Rotate(x, 7)
	m.Rotate(x, 5)
	m.Rotate(y, 12)
	for i := range x {
		if math.Abs(float64(x[i]-y[i])) > 1e-5 {
			t.Fatalf("R(5)R(7)x = %v, R(12)x = %v", x, y)
		}
	}
	m.Rotate(y, -12)
	for i, v := range []float32{1, 2, 3, 4, 5, 6, 7, 8} {
		if math.Abs(float64(y[i]-v)) > 1e-5 {
			t.Fatalf("R(-12)R(12)x = %v", y)
		}
	}
}

func TestFingerprintDistinguishesModels(t *testing.T) {
	a := loadDefault(t)
	b := loadDefault(t)
	if a.fingerprint == "" || a.fingerprint != b.fingerprint {
		t.Fatalf("same model, fingerprints %q and %q", a.fingerprint, b.fingerprint)
	}
	l, _ := tinyModel(t, "llama", 8)
	q, _ := tinyModel(t, "qwen2", 8)
	if l.fingerprint == a.fingerprint || l.fingerprint == q.fingerprint {
		t.Fatalf("different models share a fingerprint: %q %q %q", a.fingerprint, l.fingerprint, q.fingerprint)
	}
	cfg, err := a.CacheConfig("q8", "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelFingerprint != a.fingerprint {
		t.Fatalf("cache config fingerprint %q, model %q", cfg.ModelFingerprint, a.fingerprint)
	}
}

// Rotate runs per query head during attention with eviction: it must not allocate.
func TestRotateDoesNotAllocate(t *testing.T) {
	m := loadDefault(t)
	x := make([]float32, m.HeadDim)
	if a := testing.AllocsPerRun(100, func() { m.Rotate(x, 17) }); a != 0 {
		t.Fatalf("Rotate allocates %v times per call", a)
	}
}

// TestDecodeStepAllocations: a decode step of the built-in model (one token through
// every layer and its cache, attention run by two workers) allocates next to nothing
// once warm: a step of a 134M-parameter model made 47 KB of garbage before its loops,
// closures and views were made reusable. 5 allocations per step now (7 before the
// cache's plan of each step reused its buffer); the bound leaves room for the block
// table growing every 64 tokens.
func TestDecodeStepAllocations(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("the race detector makes sync.Pool drop pooled items at random")
	}
	m := loadDefault(t)
	c, seq := newCache(t, m, "q8", func(cfg *kv.Config) { cfg.AttnWorkers = 2 })
	prompt := make([]int32, 100)
	for i := range prompt {
		prompt[i] = int32(1 + i%300)
	}
	logits, err := m.Forward(c, []Span{{Seq: seq, Tokens: prompt}})
	if err != nil {
		t.Fatal(err)
	}
	tok := []int32{Argmax(logits[0])}
	step := func() {
		logits, err := m.Forward(c, []Span{{Seq: seq, Tokens: tok}})
		if err != nil {
			t.Fatal(err)
		}
		tok[0] = Argmax(logits[0])
	}
	step()
	a := testing.AllocsPerRun(100, step)
	if a > 6 {
		t.Errorf("a decode step allocates %.1f times", a)
	}
	t.Logf("%.1f allocations per decode step", a)
}

// TestTimings runs a prefill and decode steps with Model.Timings set: one pass per
// step (the prefill in passes of PassTokens), every part but "other" measured above 0,
// and the parts' sum within the calls' wall time; with Timings nil again nothing more
// is counted.
func TestTimings(t *testing.T) {
	m := loadDefault(t)
	c, seq := newCache(t, m, "q8")
	var tm Timings
	m.Timings = &tm
	m.PassTokens = 16
	defer func() { m.Timings, m.PassTokens = nil, 0 }()
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(1 + i%300)
	}
	t0 := time.Now()
	logits, err := m.Forward(c, []Span{{Seq: seq, Tokens: prompt}})
	if err != nil {
		t.Fatal(err)
	}
	tok := []int32{Argmax(logits[0])}
	for range 3 {
		logits, err := m.Forward(c, []Span{{Seq: seq, Tokens: tok}})
		if err != nil {
			t.Fatal(err)
		}
		tok[0] = Argmax(logits[0])
	}
	wall := time.Since(t0)
	if tm.Passes != 3+3 {
		t.Errorf("%d passes, want 3 for 40 prompt tokens in passes of 16, then 3", tm.Passes)
	}
	var sum time.Duration
	for p := range NumParts {
		if d := tm.Parts[p]; d < 0 || (p != PartOther && d == 0) {
			t.Errorf("part %s: %v", p, d)
		}
		sum += tm.Parts[p]
	}
	if sum > wall {
		t.Errorf("parts sum to %v, more than the %v the calls took", sum, wall)
	}
	m.Timings = nil
	if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: tok}}); err != nil {
		t.Fatal(err)
	}
	if tm.Passes != 6 {
		t.Errorf("Timings counted a pass after it was unset: %d", tm.Passes)
	}
	names := map[string]bool{}
	for p := range NumParts {
		names[p.String()] = true
	}
	if len(names) != int(NumParts) || Part(-1).String() != "unknown" || NumParts.String() != "unknown" {
		t.Errorf("part names %v", names)
	}
}
