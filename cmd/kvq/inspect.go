package main

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"kvq/assets"
	"kvq/eval"
	"kvq/gguf"
	"kvq/kv"
	"kvq/linalg"
	"kvq/model"
)

func init() {
	register("inspect", "show a GGUF file's metadata, tensors, whether kvq runs it, and what each cache type fits in a budget", runInspect)
}

// inspectCaches are the cache types listed by inspect.
var inspectCaches = cacheSpecs()

// runInspect describes any GGUF file it can parse: the metadata and tensors always,
// the model's shape and the cache table when the metadata gives a transformer's shape,
// and, when kvq cannot run the model, the reason.
func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "Describes any GGUF file: its metadata and tensors, the model's architecture and shapes, whether kvq runs it, then, for each cache type, the exact KV bytes per token and how many tokens and sequences of --ctx tokens fit in --budget.", stderr)
	mf := addModelFlags(fs)
	ctx := fs.Int("ctx", 0, "sequence length for the fit figures (default: the model's context)")
	budget := byteSize(1 << 30)
	fs.Var(&budget, "budget", "KV memory budget in bytes, with an optional KB, MB, GB, KiB, MiB or GiB suffix")
	listTensors := fs.Bool("tensors", false, "list every tensor (name, type, shape, bytes)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var f *gguf.File
	var err error
	if mf.path == "" {
		f, err = gguf.Parse(assets.Model)
	} else {
		f, err = gguf.Open(mf.path)
	}
	if err != nil {
		return err
	}
	defer f.Close()

	c, shapeErr := model.ShapeFromGGUF(f)
	var m *model.Model
	runErr := shapeErr
	if runErr == nil {
		if m, runErr = mf.open(); runErr == nil {
			defer m.Close()
			c = m.Config
		}
	}
	if shapeErr == nil && (*ctx < 0 || *ctx > c.Ctx) {
		return usagef(fs, "--ctx must be in [1, %d], the model's context (0: all of it), got %d", c.Ctx, *ctx)
	}
	name := c.Name
	if name == "" {
		name, _ = f.String("general.name")
	}
	if name == "" {
		name = modelName(mf.path)
	}
	arch, _ := f.String("general.architecture")
	fmt.Fprintf(stdout, "model        %s (architecture %s)\n", name, arch)
	if runErr != nil {
		fmt.Fprintf(stdout, "runs         no: %v\n", runErr)
		if slow := unsupportedTypes(f); slow != "" {
			fmt.Fprintf(stdout, "             (tensor types kvq cannot multiply: %s)\n", slow)
		}
	} else {
		fmt.Fprintf(stdout, "runs         yes\n")
	}
	if shapeErr == nil {
		fmt.Fprintf(stdout, "shape        dim %d, %d layers, %d heads, %d KV heads, head size %d, FFN %d, vocab %d\n", c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab)
		fmt.Fprintf(stdout, "context      %d tokens; RoPE base %g on %d dims (%s pairs)\n", c.Ctx, c.RopeBase, c.RopeDims, map[bool]string{false: "adjacent", true: "NeoX half-split"}[c.RopeNeoX])
		fmt.Fprintf(stdout, "output       %s; q/k/v bias: %v; RMSNorm eps %g\n", map[bool]string{true: "tied to token_embd", false: "separate"}[c.Tied], c.QKVBias, c.RMSEps)
		if c.Window > 0 {
			n := 0
			for i := range c.Layers {
				if c.LayerWindow(i) > 0 {
					n++
				}
			}
			if n == c.Layers {
				fmt.Fprintf(stdout, "attention    every layer slides over a window of %d tokens: a sequence holds the blocks of its window only\n", c.Window)
			} else {
				fmt.Fprintf(stdout, "attention    %d of %d layers slide over a window of %d tokens, the others see the whole history: a sliding layer holds the blocks of its window only\n", n, c.Layers, c.Window)
			}
		}
		if c.AttnSoftCap > 0 || c.FinalSoftCap > 0 {
			fmt.Fprintf(stdout, "soft caps    attention scores %g, logits %g\n", c.AttnSoftCap, c.FinalSoftCap)
		}
	}
	types := map[gguf.TensorType]int{}
	var total int64
	for _, t := range f.Tensors {
		types[t.Type]++
		total += int64(t.Size)
	}
	keys := make([]string, 0, len(types))
	for t, n := range types {
		keys = append(keys, fmt.Sprintf("%s×%d", t, n))
	}
	sort.Strings(keys)
	if m != nil {
		fmt.Fprintf(stdout, "tensors      %v; %s of weights, %s read per decoded token\n", keys, fmtBytes(m.WeightBytes()), fmtBytes(m.DecodeWeightBytes()))
		if mf.path != "" {
			fmt.Fprintf(stdout, "memory       %s of weights copied into memory, the rest read through the file's mapping\n", fmtBytes(m.PreloadedBytes()))
		}
		if note := dequantNote(types); note != "" {
			fmt.Fprintf(stdout, "note         %s\n", note)
		}
		fmt.Fprintf(stdout, "tokenizer    %d tokens, BOS %d, EOS %d\n", m.Tok.VocabSize(), m.Tok.BOS(), m.Tok.EOS())
	} else {
		fmt.Fprintf(stdout, "tensors      %d: %v; %s\n", len(f.Tensors), keys, fmtBytes(total))
	}
	writeMetadata(stdout, f)
	if *listTensors {
		writeTensors(stdout, f)
	}
	if shapeErr != nil {
		fmt.Fprintf(stdout, "\nno cache figures: %v\n", shapeErr)
		return nil
	}

	if *ctx <= 0 {
		*ctx = c.Ctx
	}
	fmt.Fprintf(stdout, "\nKV cache per type: exact bytes per token, and what fits in %s (sequences of %d tokens, full-precision tails included)\n", fmtBytes(int64(budget)), *ctx)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cache\tbytes/token\tvs f16\tper sequence\tof which tail\ttokens in budget\tsequences\t")
	tailCodec := ""
	for _, spec := range inspectCaches {
		cfg, err := c.CacheConfig(spec, "")
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
		tail, err := kv.SteadyTail(cfg)
		if err != nil {
			return err
		}
		tailCodec = tail.Codec
		fmt.Fprintf(tw, "%s\t%.1f\t%.2fx\t%s\t%s\t%d\t%d\t\n", eval.CacheName(cfg), bpt, kv.F16BytesPerToken(cfg)/bpt, fmtBytes(seqBytes), tailText(tail), int64(float64(budget)/bpt), int64(budget)/seqBytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tail: what a sequence holds beyond its blocks, rows kept in full precision (%s), summed over layers:\n"+
		"  keys of the unfinished KIVI key group, the KIVI value residual, sinks, and the step's work rows\n", tailCodec)
	if c.Window > 0 {
		cfg, err := c.CacheConfig("f16", "")
		if err != nil {
			return err
		}
		toks, err := kv.SteadyLayerTokens(cfg, *ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "windows: bytes/token and tokens in budget count every layer's whole history; per sequence and sequences count\n"+
			"  only the blocks each layer keeps: at %d tokens (f16), %s of blocks\n", *ctx, layerTokensText(toks))
	}
	return nil
}

// writeMetadata lists the file's metadata, one key a line; long arrays (the
// tokenizer's) are summarized by their element type and length.
func writeMetadata(w io.Writer, f *gguf.File) {
	fmt.Fprintf(w, "\nmetadata (GGUF v%d, %d keys)\n", f.Version, len(f.Keys()))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		fmt.Fprintf(tw, "  %s\t%s\n", k, showValue(v))
	}
	tw.Flush()
}

// showValue formats a metadata value for writeMetadata.
func showValue(v gguf.Value) string {
	if v.Type == gguf.TypeArray {
		s := fmt.Sprint(v.Data)
		if len(s) <= 80 {
			return s
		}
		return fmt.Sprintf("[array of %v, %d values]", v.Elem, arrayLen(v.Data))
	}
	if s, ok := v.Data.(string); ok {
		if len(s) > 80 {
			return fmt.Sprintf("%q… (%d bytes)", s[:77], len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v.Data)
}

// arrayLen is the length of a metadata array's Go slice.
func arrayLen(data any) int {
	if v := reflect.ValueOf(data); v.Kind() == reflect.Slice {
		return v.Len()
	}
	return 0
}

// writeTensors lists every tensor of f in file order.
func writeTensors(w io.Writer, f *gguf.File) {
	fmt.Fprintf(w, "\ntensors (%d)\n", len(f.Tensors))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, t := range f.Tensors {
		fmt.Fprintf(tw, "  %s\t%v\t%v\t%s\n", t.Name, t.Type, t.Dims, fmtBytes(int64(t.Size)))
	}
	tw.Flush()
}

// unsupportedTypes names the tensor types of f that kvq cannot multiply or convert.
func unsupportedTypes(f *gguf.File) string {
	var names []string
	for _, t := range f.Tensors {
		if n := t.Type.String(); !linalg.Supports(t.Type) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
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
	return fmt.Sprintf("%s weights are multiplied by dequantizing each row first, many times slower than weights with kernels of their own", strings.Join(slow, ", "))
}

// tailText describes a sequence's tail: its bytes and the rows they hold.
func tailText(t kv.Tail) string {
	if t.Bytes == 0 {
		return "none"
	}
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{t.KeyRows, "key"}, {t.ValueRows, "value"}, {t.SinkRows, "sink"}, {t.WorkRows, "work"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	return fmt.Sprintf("%s (%s rows, %s)", fmtBytes(t.Bytes), strings.Join(parts, " + "), t.Codec)
}
