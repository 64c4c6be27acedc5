// Package model is kvq's inference runtime on CPU for Llama-family transformers: it
// loads GGUF weights, runs batched prefill and single-token decode through a
// kv.Cache, and samples.
//
// Supported architectures (general.architecture), as llama.cpp reads them:
//
//	llama   RoPE on adjacent pairs; every layer slides over <arch>.attention.sliding_window
//	        tokens when the file gives one (Mistral)
//	qwen2   q/k/v biases, RoPE on half-split (NeoX) pairs
//	qwen3   NeoX RoPE; RMSNorm per head on q and k before RoPE (attn_q_norm, attn_k_norm)
//	gemma2  NeoX RoPE; embeddings scaled by √dim; RMSNorm after attention and after the
//	        FFN as well as before; GELU FFN; attention scores and logits soft-capped
//	        (c·tanh(x/c)); even layers slide over a window (default 4096), odd layers see
//	        everything; query scale 1/√head size (1/√(dim/heads) for the 46-layer model)
//	gemma3  gemma2 without soft-capping, with per-head q/k RMSNorm; five of every six
//	        layers slide (RoPE base 10000 there, <arch>.rope.freq_base and linear RoPE
//	        scaling on the others)
//	phi3    NeoX RoPE; fused q/k/v (attn_qkv) and gate/up (ffn_up) matrices; every
//	        layer slides over <arch>.attention.sliding_window tokens
package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"kvq/gguf"
)

// Config is a model's shape and hyperparameters, read from GGUF metadata.
type Config struct {
	Arch     string  // general.architecture
	Name     string  // general.name, if any
	Dim      int     // embedding width
	Layers   int     // transformer blocks
	Heads    int     // query heads
	KVHeads  int     // key/value heads (grouped-query attention when < Heads)
	HeadDim  int     // width of one head (attention.key_length, else Dim/Heads)
	FFN      int     // feed-forward hidden width
	Vocab    int     // vocabulary size (rows of token_embd)
	Ctx      int     // trained context length, tokens
	RMSEps   float32 // RMSNorm epsilon
	RopeBase float64 // RoPE frequency base (of full-attention layers)
	RopeDims int     // rotated dimensions per head (≤ HeadDim)
	RopeNeoX bool    // pairs (i, i+RopeDims/2) instead of (2i, 2i+1)
	// RopeScale divides positions before RoPE on full-attention layers (linear RoPE
	// scaling, <arch>.rope.scaling.factor); 1 means none.
	RopeScale float64
	// LocalRopeBase is the RoPE base of sliding-window layers when it differs from
	// RopeBase (gemma3: 10000), else 0. Window layers are never position-scaled then.
	LocalRopeBase float64
	QKVBias       bool // q/k/v projections carry biases
	Tied          bool // output projection shares token_embd
	QKNorm        bool // RMSNorm per head on q and k before RoPE
	PostNorms     bool // RMSNorm of the attention and FFN outputs before each residual add
	GELU          bool // FFN gate activation GELU (tanh form) instead of SiLU
	FusedQKV      bool // one attn_qkv matrix: q rows, then k, then v
	FusedGateUp   bool // ffn_up holds the gate rows, then the up rows (no ffn_gate)
	// EmbedScale multiplies token embeddings (gemma: √Dim); 1 means none.
	EmbedScale float32
	// AttnScale multiplies attention scores before the softmax (1/√HeadDim unless the
	// architecture says otherwise).
	AttnScale float32
	// AttnSoftCap and FinalSoftCap, when positive, cap attention scores (after
	// AttnScale) and output logits x to c·tanh(x/c).
	AttnSoftCap, FinalSoftCap float32
	// Window is the attention window of sliding-window layers in tokens (a query at
	// position p sees positions > p − Window), 0 when no layer slides; WindowLayers
	// says which layers slide.
	Window       int
	WindowLayers []bool
}

// archInfo are the per-architecture facts GGUF metadata does not carry.
type archInfo struct {
	neox, bias, qkNorm, postNorms, gelu, embedScale, softCap, fusedQKV, fusedGateUp bool
	// slides reports whether layer i of n slides when the model has a window; nil:
	// every layer does.
	slides        func(i, n int) bool
	defaultWindow int     // window when the file gives none (0: none)
	localRopeBase float64 // RoPE base of window layers, 0: the model's
	// wideScaleLayers is the layer count of the one model size whose query scale is
	// 1/√(Dim/Heads) rather than 1/√HeadDim (gemma's 27B), or 0.
	wideScaleLayers int
}

var archs = map[string]archInfo{
	"llama":  {},
	"qwen2":  {neox: true, bias: true},
	"qwen3":  {neox: true, qkNorm: true},
	"gemma2": {neox: true, postNorms: true, gelu: true, embedScale: true, softCap: true, slides: func(i, _ int) bool { return i%2 == 0 }, defaultWindow: 4096, wideScaleLayers: 46},
	"gemma3": {neox: true, qkNorm: true, postNorms: true, gelu: true, embedScale: true, slides: func(i, _ int) bool { return (i+1)%6 != 0 }, localRopeBase: 10000, wideScaleLayers: 62},
	"phi3":   {neox: true, fusedQKV: true, fusedGateUp: true},
}

// Architectures lists the supported general.architecture values.
func Architectures() []string { return []string{"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"} }

// ConfigFromGGUF reads a Config from GGUF metadata and tensor shapes. It fails for an
// architecture kvq does not run (see ShapeFromGGUF for the shape alone).
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	c, err := ShapeFromGGUF(f)
	if err != nil {
		return c, err
	}
	if _, ok := archs[c.Arch]; !ok {
		return c, fmt.Errorf("model: unsupported architecture %q (supported: %v)", c.Arch, Architectures())
	}
	if err := checkLayers(f, c.Arch, c.Layers); err != nil {
		return c, err
	}
	return c, nil
}

// ShapeFromGGUF reads the shape and hyperparameters of any transformer with llama.cpp's
// <arch>.* keys, whether or not kvq runs its architecture (for reports: an unknown
// architecture gets the plain Llama traits).
func ShapeFromGGUF(f *gguf.File) (Config, error) {
	var c Config
	arch, ok := f.String("general.architecture")
	if !ok {
		return c, fmt.Errorf("model: general.architecture missing")
	}
	ai := archs[arch]
	c.Arch, c.RopeNeoX, c.QKVBias, c.QKNorm = arch, ai.neox, ai.bias, ai.qkNorm
	c.PostNorms, c.GELU, c.FusedQKV, c.FusedGateUp = ai.postNorms, ai.gelu, ai.fusedQKV, ai.fusedGateUp
	c.Name, _ = f.String("general.name")
	geti := func(key string, dst *int, required bool) error {
		v, ok := f.Uint(arch + "." + key)
		if !ok {
			if required {
				return fmt.Errorf("model: %s.%s missing", arch, key)
			}
			return nil
		}
		if v == 0 || v > 1<<24 {
			return fmt.Errorf("model: %s.%s = %d out of range", arch, key, v)
		}
		*dst = int(v)
		return nil
	}
	for _, k := range []struct {
		key string
		dst *int
	}{
		{"embedding_length", &c.Dim},
		{"block_count", &c.Layers},
		{"attention.head_count", &c.Heads},
		{"feed_forward_length", &c.FFN},
		{"context_length", &c.Ctx},
	} {
		if err := geti(k.key, k.dst, true); err != nil {
			return c, err
		}
	}
	c.KVHeads = c.Heads
	if err := geti("attention.head_count_kv", &c.KVHeads, false); err != nil {
		return c, err
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("model: head_count %d not divisible by head_count_kv %d", c.Heads, c.KVHeads)
	}
	c.HeadDim = c.Dim / c.Heads
	if err := geti("attention.key_length", &c.HeadDim, false); err != nil {
		return c, err
	}
	if _, ok := f.Uint(arch + ".attention.key_length"); !ok && c.Dim%c.Heads != 0 {
		return c, fmt.Errorf("model: embedding_length %d not divisible by head_count %d", c.Dim, c.Heads)
	}
	if v, ok := f.Uint(arch + ".attention.value_length"); ok && int(v) != c.HeadDim {
		return c, fmt.Errorf("model: attention.value_length %d differs from key_length %d (unsupported)", v, c.HeadDim)
	}
	c.RopeDims = c.HeadDim
	if err := geti("rope.dimension_count", &c.RopeDims, false); err != nil {
		return c, err
	}
	if c.RopeDims > c.HeadDim || c.RopeDims%2 != 0 {
		return c, fmt.Errorf("model: rope.dimension_count %d must be even and ≤ head size %d", c.RopeDims, c.HeadDim)
	}
	c.RMSEps = 1e-5
	if v, ok := f.Float(arch + ".attention.layer_norm_rms_epsilon"); ok {
		// Below 1e-30 it is 0 or a subnormal in float32, and above 1 it swamps the
		// mean square of any real activation.
		if !(v >= 1e-30 && v <= 1) {
			return c, fmt.Errorf("model: %s.attention.layer_norm_rms_epsilon = %v, must be a number in [1e-30, 1]", arch, v)
		}
		c.RMSEps = float32(v)
	}
	c.RopeBase = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		if !(v > 1 && v <= 1e12) {
			return c, fmt.Errorf("model: %s.rope.freq_base = %v, must be a number in (1, 1e12]", arch, v)
		}
		c.RopeBase = v
	}
	c.RopeScale = 1
	if t, _ := f.String(arch + ".rope.scaling.type"); t == "linear" {
		if v, ok := f.Float(arch + ".rope.scaling.factor"); ok && v > 0 {
			c.RopeScale = v
		}
	} else if t != "" && t != "none" {
		return c, fmt.Errorf("model: rope.scaling.type %q is not supported (linear only)", t)
	}
	c.EmbedScale = 1
	if ai.embedScale {
		c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	}
	c.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	if ai.wideScaleLayers != 0 && c.Layers == ai.wideScaleLayers {
		c.AttnScale = float32(1 / math.Sqrt(float64(c.Dim/c.Heads)))
	}
	if ai.softCap {
		c.AttnSoftCap, c.FinalSoftCap = 50, 30
		if v, ok := f.Float(arch + ".attn_logit_softcapping"); ok {
			c.AttnSoftCap = float32(v)
		}
		if v, ok := f.Float(arch + ".final_logit_softcapping"); ok {
			c.FinalSoftCap = float32(v)
		}
	}
	c.Window = ai.defaultWindow
	if err := geti("attention.sliding_window", &c.Window, false); err != nil {
		return c, err
	}
	if c.Window > 0 {
		c.WindowLayers = make([]bool, c.Layers)
		for i := range c.WindowLayers {
			c.WindowLayers[i] = ai.slides == nil || ai.slides(i, c.Layers)
		}
		c.LocalRopeBase = ai.localRopeBase
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return c, fmt.Errorf("model: token_embd.weight missing or not 2-D")
	}
	if emb.Dims[0] != uint64(c.Dim) {
		return c, fmt.Errorf("model: token_embd.weight rows are %d wide, but %s.embedding_length = %d", emb.Dims[0], arch, c.Dim)
	}
	if emb.Dims[1] == 0 || emb.Dims[1] > 1<<31-1 {
		return c, fmt.Errorf("model: token_embd.weight has %d rows, not a vocabulary size", emb.Dims[1])
	}
	c.Vocab = int(emb.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	c.Tied = !hasOut
	return c, nil
}

// checkLayers verifies that the file holds tensors of exactly the layers its
// block_count claims (blk.0. to blk.<layers-1>.), before anything is sized by that
// count: a few hundred bytes claiming 2²⁴ layers must fail at once, not after
// allocating them.
func checkLayers(f *gguf.File, arch string, layers int) error {
	blocks := 0 // 1 + the largest block index among the tensors
	for i := range f.Tensors {
		rest, ok := strings.CutPrefix(f.Tensors[i].Name, "blk.")
		if !ok {
			continue
		}
		num, _, ok := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); ok && err == nil && n >= 0 && n < 1<<24 {
			blocks = max(blocks, n+1)
		}
	}
	if blocks != layers {
		return fmt.Errorf("model: %s.block_count = %d, but the file holds tensors of %d layers", arch, layers, blocks)
	}
	return nil
}

// KVDim is the width of one token's keys (or values) in one layer.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// QDim is the width of one token's queries in one layer.
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// LayerWindow is the attention window of layer i in tokens, 0 for full attention.
func (c Config) LayerWindow(i int) int {
	if c.Window > 0 && i < len(c.WindowLayers) && c.WindowLayers[i] {
		return c.Window
	}
	return 0
}
