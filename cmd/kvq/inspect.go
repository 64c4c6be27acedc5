package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"kvq/eval"
	"kvq/gguf"
	"kvq/kv"
	"kvq/linalg"
)

func init() {
	register("inspect", "show a model's architecture, tensors and what each cache type fits in a budget", runInspect)
}

// inspectCaches are the cache types listed by inspect.
var inspectCaches = []string{"f32", "f16", "bf16", "q8", "fp8e4m3", "fp8e5m2", "q4", "q2", "kivi8", "kivi4", "kivi2", "kivi4/kivi2", "q8/q4"}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "[--model F] [--ctx N] [--budget BYTES]", stderr)
	mf := addModelFlags(fs)
	ctx := fs.Int("ctx", 0, "sequence length for the fit figures (default: the model's context)")
	budget := byteSize(1 << 30)
	fs.Var(&budget, "budget", "KV memory budget, bytes with optional KB/MB/GB/KiB/MiB/GiB suffix")
	if err := parse(fs, args); err != nil {
		return err
	}
	m, err := mf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	if *ctx <= 0 {
		*ctx = m.Ctx
	}
	c := m.Config
	name := c.Name
	if name == "" {
		name = modelName(mf.path)
	}
	fmt.Fprintf(stdout, "model        %s (architecture %s)\n", name, c.Arch)
	fmt.Fprintf(stdout, "shape        dim %d, %d layers, %d heads, %d KV heads, head size %d, FFN %d, vocab %d\n", c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab)
	fmt.Fprintf(stdout, "context      %d tokens; RoPE base %g on %d dims (%s pairs)\n", c.Ctx, c.RopeBase, c.RopeDims, map[bool]string{false: "adjacent", true: "NeoX half-split"}[c.RopeNeoX])
	fmt.Fprintf(stdout, "output       %s; q/k/v bias: %v; RMSNorm eps %g\n", map[bool]string{true: "tied to token_embd", false: "separate"}[c.Tied], c.QKVBias, c.RMSEps)
	types := m.TensorTypes()
	keys := make([]string, 0, len(types))
	for t, n := range types {
		keys = append(keys, fmt.Sprintf("%s×%d", t, n))
	}
	sort.Strings(keys)
	fmt.Fprintf(stdout, "tensors      %v; %s of weights, %s read per decoded token\n", keys, fmtBytes(m.WeightBytes()), fmtBytes(m.DecodeWeightBytes()))
	if mf.path != "" {
		fmt.Fprintf(stdout, "memory       %s of weights copied into memory, the rest read through the file's mapping\n", fmtBytes(m.PreloadedBytes()))
	}
	if note := dequantNote(types); note != "" {
		fmt.Fprintf(stdout, "note         %s\n", note)
	}
	fmt.Fprintf(stdout, "tokenizer    %d tokens, BOS %d, EOS %d\n\n", m.Tok.VocabSize(), m.Tok.BOS(), m.Tok.EOS())

	fmt.Fprintf(stdout, "KV cache per type: exact bytes per token, and what fits in %s (sequences of %d tokens, full-precision tails included)\n", fmtBytes(int64(budget)), *ctx)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cache\tbytes/token\tvs f16\tper sequence\ttokens in budget\tsequences\t")
	for _, spec := range inspectCaches {
		cfg, err := m.CacheConfig(spec, "")
		if err != nil {
			return err
		}
		bpt, err := kv.BytesPerToken(cfg)
		if err != nil {
			return err
		}
		seqBytes, err := kv.SteadyBytes(cfg, *ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.2fx\t%s\t%d\t%d\t\n", eval.CacheName(cfg), bpt, kv.F16BytesPerToken(cfg)/bpt, fmtBytes(seqBytes), int64(float64(budget)/bpt), int64(budget)/seqBytes)
	}
	return tw.Flush()
}

// dequantNote names the weight types among types that are multiplied by dequantizing
// rows (see linalg.Native), or is empty when there are none.
func dequantNote(types map[gguf.TensorType]int) string {
	var slow []string
	for t := range types {
		if !linalg.Native(t) {
			slow = append(slow, t.String())
		}
	}
	if len(slow) == 0 {
		return ""
	}
	sort.Strings(slow)
	return fmt.Sprintf("%s weights are multiplied by dequantizing each row first, many times slower than F32, F16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K weights", strings.Join(slow, ", "))
}
