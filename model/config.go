// Package model is kvq's Llama-family inference runtime on CPU: it loads GGUF weights,
// runs batched prefill and single-token decode through a kv.Cache, and samples.
//
// Supported architectures: "llama" (RoPE on adjacent pairs, as GGUF stores llama
// weights) and "qwen2" (q/k/v biases, RoPE on half-split NeoX pairs).
package model

import (
	"fmt"

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
	HeadDim  int     // width of one head
	FFN      int     // feed-forward hidden width
	Vocab    int     // vocabulary size (rows of token_embd)
	Ctx      int     // trained context length, tokens
	RMSEps   float32 // RMSNorm epsilon
	RopeBase float64 // RoPE frequency base
	RopeDims int     // rotated dimensions per head (≤ HeadDim)
	RopeNeoX bool    // pairs (i, i+RopeDims/2) instead of (2i, 2i+1)
	QKVBias  bool    // q/k/v projections carry biases
	Tied     bool    // output projection shares token_embd
}

// archTraits are the per-architecture facts GGUF metadata does not carry.
var archTraits = map[string]struct{ neox, bias bool }{
	"llama": {neox: false, bias: false},
	"qwen2": {neox: true, bias: true},
}

// ConfigFromGGUF reads a Config from GGUF metadata and tensor shapes.
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	var c Config
	arch, ok := f.String("general.architecture")
	if !ok {
		return c, fmt.Errorf("model: general.architecture missing")
	}
	traits, ok := archTraits[arch]
	if !ok {
		return c, fmt.Errorf("model: unsupported architecture %q (supported: llama, qwen2)", arch)
	}
	c.Arch, c.RopeNeoX, c.QKVBias = arch, traits.neox, traits.bias
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
	if c.Dim%c.Heads != 0 {
		return c, fmt.Errorf("model: embedding_length %d not divisible by head_count %d", c.Dim, c.Heads)
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("model: head_count %d not divisible by head_count_kv %d", c.Heads, c.KVHeads)
	}
	c.HeadDim = c.Dim / c.Heads
	if v, ok := f.Uint(arch + ".attention.key_length"); ok && int(v) != c.HeadDim {
		return c, fmt.Errorf("model: attention.key_length %d differs from embedding_length/head_count %d (unsupported)", v, c.HeadDim)
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
		c.RMSEps = float32(v)
	}
	c.RopeBase = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		c.RopeBase = v
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return c, fmt.Errorf("model: token_embd.weight missing or not 2-D")
	}
	c.Vocab = int(emb.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	c.Tied = !hasOut
	return c, nil
}

// KVDim is the width of one token's keys (or values) in one layer.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }
