package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"kvq/assets"
	"kvq/eval"
	"kvq/model"
	"kvq/synth"
)

func init() {
	register("eval", "measure perplexity, KL divergence and top-1 agreement of KV cache types against f32", runEval)
}

// defaultEvalCaches is every cache type but the f32 reference, and split K/V specs.
var defaultEvalCaches = cacheSpecs()[1:]

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", fmt.Sprintf(`Runs perplexity with an f32 KV cache and with each --cache on the same tokens, and prints, per cache: bytes per token, compression against f16, perplexity and its ratio to f32, mean KL divergence of the next-token distribution from f32's, and top-1 agreement with f32. Rows marked * are recommended: no other cache compresses as much or more with a lower KL divergence.

Protocol: tokenize the first %d characters of the text without BOS, CRLF->LF; take the first ctx·chunks tokens; each chunk is [BOS] + the next ctx tokens; all ctx next-token predictions of a chunk are scored; the cache is empty at each chunk start; PPL = exp(mean NLL). Each chunk is one prefill, which the cache computes exactly as ctx single-token decode steps would.

--layers measures each layer alone: per --cache spec, one run per layer with only that layer compressed; with --budget BYTES it suggests the --cache-layers that keep the most sensitive layers at --safe (default f16) within BYTES per token and measures that choice.

--calibrate SPEC adds a row for an FP8 cache with a fixed scale per layer and side (as vLLM's fp8 cache with k_scale/v_scale): an f32 run over the calib-tokens tokens right after the scored ones records each layer's largest |key| and |value|, and each scale maps that value to the format's largest; the per-layer specs are printed for --cache-layers.`, eval.TextChars), stderr)
	mf := addModelFlags(fs)
	textPath := fs.String("text", "", "UTF-8 text `FILE` (default: the built-in TinyStories validation head)")
	ctx := fs.Int("ctx", 512, "tokens scored per chunk (≤ the model's context)")
	chunks := fs.Int("chunks", 8, "number of chunks")
	var caches listFlag
	fs.Var(&caches, "cache", "cache `SPEC` to compare with f32; repeatable (default: a representative set)")
	layers := fs.String("cache-layers", "", "per-layer `OVERRIDES` applied to every cache, e.g. 0,-1=f16")
	perLayer := fs.Bool("layers", false, "per-layer sensitivity: each layer's KL divergence when only that layer has the --cache spec (default kivi2), the others f32")
	budget := fs.Float64("budget", 0, "with --layers: `BYTES` per token to meet; suggests --cache-layers moving the most sensitive layers to --safe within it")
	safe := fs.String("safe", "f16", "with --layers and --budget: the `SPEC` sensitive layers move to")
	var calib listFlag
	fs.Var(&calib, "calibrate", "FP8 cache `SPEC` (fp8e4m3, fp8e5m2, fp8e4m3/fp8e5m2) to evaluate with per-layer scales calibrated on held-out text; repeatable")
	calibTokens := fs.Int("calib-tokens", 0, "calibration run length in tokens (default: ctx)")
	jsonPath := fs.String("json", "", "also write the results as JSON to `FILE`")
	svgPath := fs.String("svg", "", "also draw compression against KL divergence as an SVG chart to `FILE`")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *perLayer {
		// --layers runs each layer alone with its own per-layer overrides.
		var stray []string
		fs.Visit(func(f *flag.Flag) {
			if slices.Contains([]string{"cache-layers", "calibrate", "calib-tokens", "svg"}, f.Name) {
				stray = append(stray, "--"+f.Name)
			}
		})
		if len(stray) > 0 {
			return usagef(fs, "%s cannot be combined with --layers", strings.Join(stray, ", "))
		}
	}
	layerSpecs := []string(caches)
	if len(layerSpecs) == 0 {
		layerSpecs = []string{"kivi2"} // --layers runs each spec once per layer: one by default
	}
	if len(caches) == 0 {
		caches = defaultEvalCaches
	}
	m, err := mf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	text, textName := assets.Text, "built-in:tinystories-valid-head.txt"
	if *textPath != "" {
		b, err := os.ReadFile(*textPath)
		if err != nil {
			return err
		}
		text, textName = string(b), *textPath
	}
	toks := eval.Tokens(m, text)
	if *perLayer {
		return runEvalLayers(m, toks, layerSpecs, eval.Options{Ctx: *ctx, Chunks: *chunks}, *budget, *safe, *jsonPath, stdout, stderr)
	}
	if *budget != 0 {
		return usagef(fs, "--budget needs --layers")
	}
	bar := newProgress(stderr, "eval", "chunk runs", 1)
	res, err := eval.Run(m, toks, eval.Options{Ctx: *ctx, Chunks: *chunks, Specs: caches, Layers: *layers,
		Calibrate: calib, CalibTokens: *calibTokens, Progress: bar.update})
	bar.done()
	if err != nil {
		return err
	}
	res.Model = modelName(mf.path)
	res.Text = textName
	fmt.Fprintf(stdout, "model %s, text %s: %d tokens (ctx %d × %d chunks)\n\n", res.Model, res.Text, res.Tokens, res.Ctx, res.Chunks)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cache\t \tbytes/token\tvs f16\tPPL\tPPL ratio\tKLD mean\ttop-1 agree\t")
	var warned []eval.Row
	for _, r := range res.Rows {
		mark := ""
		switch {
		case r.Recommended:
			mark = "*"
		case r.Warning != "":
			mark, warned = "!", append(warned, r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2fx\t%.4f\t%.4f\t%.5f\t%.2f%%\t\n", r.Cache, mark, r.BytesPerToken, r.CompressionVsF16, r.PPL, r.PPLRatio, r.KLDMean, 100*r.Top1Agree)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\n* recommended: no other cache here compresses as much or more with a lower KL divergence.")
	fmt.Fprintln(stdout, "  Choose the most compressed * row whose KLD and top-1 agreement you can accept.")
	for _, r := range warned {
		fmt.Fprintf(stdout, "! %s: %s; use a longer --ctx.\n", r.Cache, r.Warning)
	}
	if synth.IsSynthetic(m.Config.Name) {
		fmt.Fprintf(stdout, "note: %s has random weights (kvq synth): its perplexities are those of noise; the KL divergences still compare the caches.\n", m.Config.Name)
	}
	for _, c := range res.Calibrated {
		fmt.Fprintf(stdout, "\n%s, calibrated on %d held-out tokens; to use it: --cache f32 --cache-layers '%s'\n", c.Cache, c.Tokens, c.LayerSpecs)
	}
	if *svgPath != "" {
		f, err := os.Create(*svgPath)
		if err != nil {
			return err
		}
		if err := eval.WriteSVG(f, res); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, res)
	}
	return nil
}

// modelName is how reports name the model at path: the path, or the built-in model's name.
func modelName(path string) string {
	if path == "" {
		return assets.ModelName
	}
	return path
}

// runEvalLayers is kvq eval --layers: per spec, each layer's figures when only that
// layer has it; with a budget, the suggested overrides and their measured figures.
func runEvalLayers(m *model.Model, toks []int32, specs []string, opt eval.Options, budget float64, safe, jsonPath string, stdout, stderr io.Writer) error {
	bar := newProgress(stderr, "eval --layers", "chunk runs", 1)
	opt.Specs, opt.Progress = specs, bar.update
	rows, err := eval.Layers(m, toks, opt)
	bar.done()
	if err != nil {
		return err
	}
	if jsonPath != "" {
		if err := writeJSON(jsonPath, rows); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "per-layer sensitivity: one layer with the cache, the others f32 (ctx %d × %d chunks)\n\n", opt.Ctx, opt.Chunks)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cache\tlayer\tbytes/token\tPPL ratio\tKLD mean\ttop-1 agree\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.4f\t%.5f\t%.2f%%\t\n", r.Spec, r.Layer, r.BytesPerToken, r.PPLRatio, r.KLDMean, 100*r.Top1Agree)
	}
	tw.Flush()
	if budget <= 0 {
		fmt.Fprintln(stdout, "\nGive --budget BYTES (per token) for a --cache-layers suggestion.")
		return nil
	}
	for _, s := range specs {
		over, bytes, err := eval.SuggestLayers(m, rows, s, safe, budget)
		if err != nil {
			return err
		}
		if over == "" {
			fmt.Fprintf(stdout, "\nwithin %.1f bytes/token: --cache %s (%.1f bytes/token); no layer can move to %s within the budget\n", budget, s, bytes, safe)
			continue
		}
		opt.Specs, opt.Layers, opt.Progress = []string{s}, over, nil
		res, err := eval.Run(m, toks, opt)
		if err != nil {
			return err
		}
		r := res.Rows[1]
		fmt.Fprintf(stdout, "\nwithin %.1f bytes/token: --cache %s --cache-layers '%s' (%.1f bytes/token, measured: KLD %.5f, top-1 %.2f%%)\n", budget, s, over, bytes, r.KLDMean, 100*r.Top1Agree)
	}
	return nil
}
