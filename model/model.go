package model

import (
	"crypto/sha256"
	"fmt"
	"log/slog"

	"kvq/assets"
	"kvq/gguf"
	"kvq/internal/procstat"
	"kvq/kv"
	"kvq/linalg"
	"kvq/quant"
	"kvq/tokenizer"
)

// Model is a loaded Llama-family model. Its weights are read-only after Load; Forward
// uses per-model scratch space and must not run concurrently with itself.
type Model struct {
	Config
	Tok *tokenizer.Tokenizer

	// PassTokens is the most tokens Forward runs through the layers at once (0:
	// DefaultPassTokens). Forward's scratch memory is proportional to it; a longer
	// batch runs in several passes (see Forward).
	PassTokens int
	// Timings, when set, accumulates the wall time of each part of every forward pass
	// (kvq bench decode --breakdown); nil measures nothing.
	Timings *Timings

	file    *gguf.File
	embd    linalg.Matrix // vocab × dim
	layers  []layer
	outNorm []float32
	output  linalg.Matrix // vocab × dim (token_embd when tied)

	ropeFreq    []float64   // RopeDims/2 angular frequencies, radians per position
	localFreq   []float64   // those of sliding-window layers when they differ (nil: ropeFreq)
	cacheRoPE   *quant.RoPE // ropeFreq for caches that store keys before RoPE (nil without rotated dims)
	fingerprint string      // identifies the weights in prefix-cache block hashes
	ws          workspace
}

type layer struct {
	attnNorm, ffnNorm []float32
	wq, wk, wv, wo    linalg.Matrix
	bq, bk, bv        []float32 // nil without biases
	qNorm, kNorm      []float32 // per-head q/k RMSNorm weights (HeadDim), nil without
	postAttn, postFFN []float32 // RMSNorm weights of the attention and FFN outputs, nil without
	wGate, wUp, wDown linalg.Matrix
	window            int // attention window in tokens, 0 for the whole history
}

// Load opens a GGUF model file and copies the weights a decode step reads whole into
// memory of the process's own, in huge pages where the kernel offers them
// (gguf.File.Preload): decode reads every weight matrix once per token, faster from
// there than through the file's mapping (llama-134m, Q8_0, two threads, ctx 128:
// 154–162 tok/s against 126–141, alternating runs). The token embedding table, read
// a row per token, stays mapped unless the output projection shares it; so do all the
// weights when the copy would take more than half the memory available (with a
// warning through log/slog). Close releases the model. The file's metadata is dropped
// once read (the model keeps what it needs; see gguf.File.DropMetadata).
func Load(path string) (*Model, error) { return load(path, true) }

// LoadMapped is Load without the copy: every weight is read through a read-only
// mapping of the file, shared through the page cache with other processes that map
// it, and read from disk as first used, at the cost of decode speed.
func LoadMapped(path string) (*Model, error) { return load(path, false) }

func load(path string, preload bool) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := preloaded(f, preload)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.DropMetadata()
	return m, nil
}

// memAvailable reports the memory available for the copy (a variable for tests).
var memAvailable = procstat.MemAvailable

// preloaded builds the model over f after copying its streamed weights (when preload
// and they take at most half the memory the kernel reports available: the rest stays
// for the KV cache and the page cache, and weights too large for that stay mapped,
// where the kernel can drop their pages under pressure instead of swapping).
func preloaded(f *gguf.File, preload bool) (*Model, error) {
	if preload {
		_, untied := f.Tensor("output.weight")
		keep := func(ti *gguf.TensorInfo) bool { return !untied || ti.Name != "token_embd.weight" }
		var size int64
		for i := range f.Tensors {
			if keep(&f.Tensors[i]) {
				size += int64(f.Tensors[i].Size)
			}
		}
		if avail := memAvailable(); avail > 0 && size > avail/2 {
			slog.Warn("model weights left mapped, not copied into memory: they would take more than half of what is available (decode reads them more slowly)",
				"weight_bytes", size, "available_bytes", avail)
		} else if err := f.Preload(keep); err != nil {
			return nil, err
		}
	}
	return FromGGUF(f)
}

// LoadDefault loads the built-in model (stories260K) embedded in the binary.
func LoadDefault() (*Model, error) {
	f, err := gguf.Parse(assets.Model)
	if err != nil {
		return nil, fmt.Errorf("built-in model: %w", err)
	}
	m, err := FromGGUF(f)
	if err != nil {
		return nil, err
	}
	f.DropMetadata()
	return m, nil
}

// Open loads the model at path, or the built-in model when path is empty.
func Open(path string) (*Model, error) {
	if path == "" {
		return LoadDefault()
	}
	return Load(path)
}

// Close releases the model's weights (the file's mapping or memory).
func (m *Model) Close() error { return m.file.Close() }

// FromGGUF builds a model over a parsed GGUF file; the model keeps references to the
// file's tensor data (no copy of the weights).
func FromGGUF(f *gguf.File) (*Model, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("model: tokenizer: %w", err)
	}
	if tok.VocabSize() != cfg.Vocab {
		return nil, fmt.Errorf("model: tokenizer has %d tokens but token_embd has %d rows", tok.VocabSize(), cfg.Vocab)
	}
	m := &Model{Config: cfg, Tok: tok, file: f}
	l := loader{f: f}
	m.embd = l.matrix("token_embd.weight", cfg.Vocab, cfg.Dim)
	m.outNorm = l.vector("output_norm.weight", cfg.Dim)
	if cfg.Tied {
		m.output = m.embd
	} else {
		m.output = l.matrix("output.weight", cfg.Vocab, cfg.Dim)
	}
	q, kvd := cfg.QDim(), cfg.KVDim()
	if _, ok := f.Tensor("rope_factors_long.weight"); ok {
		return nil, fmt.Errorf("model: %s: per-frequency RoPE factors (rope_factors_long/short, LongRoPE) are not supported", cfg.Arch)
	}
	m.layers = make([]layer, cfg.Layers)
	for i := range m.layers {
		p := fmt.Sprintf("blk.%d.", i)
		ly := &m.layers[i]
		ly.window = cfg.LayerWindow(i)
		ly.attnNorm = l.vector(p+"attn_norm.weight", cfg.Dim)
		if cfg.FusedQKV {
			qkv := l.matrix(p+"attn_qkv.weight", q+2*kvd, cfg.Dim)
			ly.wq, ly.wk, ly.wv = l.rows(qkv, 0, q), l.rows(qkv, q, q+kvd), l.rows(qkv, q+kvd, q+2*kvd)
		} else {
			ly.wq = l.matrix(p+"attn_q.weight", q, cfg.Dim)
			ly.wk = l.matrix(p+"attn_k.weight", kvd, cfg.Dim)
			ly.wv = l.matrix(p+"attn_v.weight", kvd, cfg.Dim)
		}
		ly.wo = l.matrix(p+"attn_output.weight", cfg.Dim, q)
		if cfg.QKVBias {
			ly.bq = l.vector(p+"attn_q.bias", q)
			ly.bk = l.vector(p+"attn_k.bias", kvd)
			ly.bv = l.vector(p+"attn_v.bias", kvd)
		}
		if cfg.QKNorm {
			ly.qNorm = l.vector(p+"attn_q_norm.weight", cfg.HeadDim)
			ly.kNorm = l.vector(p+"attn_k_norm.weight", cfg.HeadDim)
		}
		if cfg.PostNorms {
			ly.postAttn = l.vector(p+"post_attention_norm.weight", cfg.Dim)
			ly.postFFN = l.vector(p+"post_ffw_norm.weight", cfg.Dim)
		}
		ly.ffnNorm = l.vector(p+"ffn_norm.weight", cfg.Dim)
		if cfg.FusedGateUp {
			gu := l.matrix(p+"ffn_up.weight", 2*cfg.FFN, cfg.Dim)
			ly.wGate, ly.wUp = l.rows(gu, 0, cfg.FFN), l.rows(gu, cfg.FFN, 2*cfg.FFN)
		} else {
			ly.wGate = l.matrix(p+"ffn_gate.weight", cfg.FFN, cfg.Dim)
			ly.wUp = l.matrix(p+"ffn_up.weight", cfg.FFN, cfg.Dim)
		}
		ly.wDown = l.matrix(p+"ffn_down.weight", cfg.Dim, cfg.FFN)
	}
	if l.err != nil {
		return nil, l.err
	}
	m.ropeFreq = ropeFrequencies(cfg.RopeBase, cfg.RopeDims)
	for j := range m.ropeFreq {
		m.ropeFreq[j] /= cfg.RopeScale
	}
	if cfg.LocalRopeBase != 0 {
		m.localFreq = ropeFrequencies(cfg.LocalRopeBase, cfg.RopeDims)
	}
	if len(m.ropeFreq) > 0 {
		var err error
		if m.cacheRoPE, err = quant.NewRoPE(m.ropeFreq, cfg.RopeNeoX); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	m.fingerprint = fingerprint(f, cfg)
	return m, nil
}

// loader reads tensors, remembering the first error so that FromGGUF stays linear.
type loader struct {
	f   *gguf.File
	err error
}

func (l *loader) data(name string, rows, cols int) (*gguf.TensorInfo, []byte) {
	if l.err != nil {
		return nil, nil
	}
	ti, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("model: tensor %s missing", name)
		return nil, nil
	}
	want := []uint64{uint64(cols)}
	if rows > 1 {
		want = append(want, uint64(rows))
	}
	if !sameDims(ti.Dims, want) {
		l.err = fmt.Errorf("model: tensor %s has shape %v, want %v", name, ti.Dims, want)
		return nil, nil
	}
	b, err := l.f.TensorData(ti)
	if err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
		return nil, nil
	}
	return ti, b
}

// sameDims compares GGUF dims, ignoring trailing 1s.
func sameDims(got, want []uint64) bool {
	for len(got) > len(want) && got[len(got)-1] == 1 {
		got = got[:len(got)-1]
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func (l *loader) matrix(name string, rows, cols int) linalg.Matrix {
	ti, b := l.data(name, rows, cols)
	if ti == nil {
		return linalg.Matrix{}
	}
	m, err := linalg.NewMatrix(ti.Type, rows, cols, b)
	if err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
	}
	return m
}

// rows returns rows [r0, r1) of m, sharing its data (the parts of a fused matrix).
func (l *loader) rows(m linalg.Matrix, r0, r1 int) linalg.Matrix {
	if l.err != nil {
		return linalg.Matrix{}
	}
	rb, err := m.RowBytes()
	if err == nil {
		m, err = linalg.NewMatrix(m.Type, r1-r0, m.Cols, m.Data[r0*rb:r1*rb])
	}
	if err != nil {
		l.err = fmt.Errorf("model: rows %d–%d of a fused matrix: %w", r0, r1, err)
	}
	return m
}

// vector returns a 1-D tensor as float32 (norm weights and biases are small; copying
// them to f32 once keeps the hot loops simple).
func (l *loader) vector(name string, n int) []float32 {
	ti, b := l.data(name, 1, n)
	if ti == nil {
		return nil
	}
	v := make([]float32, n)
	if err := gguf.Dequantize(ti.Type, v, b); err != nil {
		l.err = fmt.Errorf("model: tensor %s: %w", name, err)
	}
	return v
}

// WeightBytes is the size of all the model's tensor data in bytes.
func (m *Model) WeightBytes() int64 {
	var n int64
	for _, t := range m.file.Tensors {
		n += int64(t.Size)
	}
	return n
}

// PreloadedBytes is the number of weight bytes held in memory of the process's own
// (Load's copy); the rest are read through the file's mapping or, for the built-in
// model, from the binary.
func (m *Model) PreloadedBytes() int64 { return m.file.PreloadedBytes() }

// DecodeWeightBytes is the number of bytes of weights one decode step reads: every
// matrix once, plus one embedding row (not counted: negligible).
func (m *Model) DecodeWeightBytes() int64 {
	var n int64
	add := func(ms ...linalg.Matrix) {
		for _, x := range ms {
			n += int64(len(x.Data))
		}
	}
	for _, ly := range m.layers {
		add(ly.wq, ly.wk, ly.wv, ly.wo, ly.wGate, ly.wUp, ly.wDown) // parts of a fused matrix add up to it
	}
	add(m.output)
	return n
}

// MACs returns the multiply-adds of the weight products for one token: those of the
// layers' matrices, which every token runs, and those of the output projection, which
// only tokens that need logits run (a prefill's last token, every decode token).
func (m *Model) MACs() (layers, output int64) {
	for _, ly := range m.layers {
		for _, x := range []linalg.Matrix{ly.wq, ly.wk, ly.wv, ly.wo, ly.wGate, ly.wUp, ly.wDown} {
			layers += int64(x.Rows) * int64(x.Cols)
		}
	}
	return layers, int64(m.output.Rows) * int64(m.output.Cols)
}

// TensorTypes counts the model's tensors by GGUF type, for reports.
func (m *Model) TensorTypes() map[gguf.TensorType]int {
	c := map[gguf.TensorType]int{}
	for _, t := range m.file.Tensors {
		c[t.Type]++
	}
	return c
}

// CacheConfig returns the configuration of a KV cache for this model from a cache spec
// string (e.g. "kivi4/kivi2") and optional per-layer overrides (e.g. "0,-1=f16"): the
// shape's configuration (Config.CacheConfig) with the model's RoPE rotation and
// weight fingerprint.
func (m *Model) CacheConfig(spec, layers string) (kv.Config, error) {
	cfg, err := m.Config.CacheConfig(spec, layers)
	if err != nil {
		return kv.Config{}, err
	}
	cfg.Rotate, cfg.RoPE, cfg.ModelFingerprint = m.Rotate, m.cacheRoPE, m.fingerprint
	if m.localFreq != nil {
		// Layers rotate keys with different frequencies: no one rotation serves every
		// layer, so sink + window eviction (which needs one) and keys stored before
		// RoPE are refused.
		cfg.Rotate, cfg.RoPE = nil, nil
	}
	return cfg, nil
}

// CacheConfig returns the configuration of a KV cache for a model of this shape:
// geometry, per-layer attention windows, attention scale and soft cap, and the cache
// types of spec and layer overrides (see Model.CacheConfig).
func (c Config) CacheConfig(spec, layers string) (kv.Config, error) {
	s, err := kv.ParseSpec(spec)
	if err != nil {
		return kv.Config{}, err
	}
	cfg := kv.Config{Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Spec: s,
		AttnScale: c.AttnScale, AttnSoftCap: c.AttnSoftCap}
	if c.Window > 0 {
		cfg.Windows = make([]int, c.Layers)
		for i := range cfg.Windows {
			cfg.Windows[i] = c.LayerWindow(i)
		}
	}
	if layers != "" {
		if cfg.LayerSpecs, err = kv.ParseLayerOverrides(layers, c.Layers); err != nil {
			return kv.Config{}, err
		}
	}
	return cfg, nil
}

// fingerprint identifies a model's weights cheaply and stably across processes: its
// architecture, shape and tensor table, and a SHA-256 over the first KiB of every
// tensor (hashing all weights would cost a second per GB at load).
func fingerprint(f *gguf.File, c Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%d|%d|%d|%d|%d|%d|%d\n", c.Arch, c.Name, c.Dim, c.Layers, c.Heads, c.KVHeads, c.FFN, c.Vocab, c.RopeDims)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		fmt.Fprintf(h, "%s|%v|%v|%d\n", t.Name, t.Dims, t.Type, t.Offset)
		if b, err := f.TensorData(t); err == nil {
			h.Write(b[:min(len(b), 1024)])
		}
	}
	return fmt.Sprintf("%s:%x", c.Arch, h.Sum(nil)[:12])
}
