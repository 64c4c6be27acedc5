// Package eval measures what a lossy KV cache costs in quality: perplexity, mean KL
// divergence of next-token distributions and top-1 agreement, each against the same
// model run with an f32 cache on the same tokens.
//
// Protocol (that of the reference figures for the built-in model): tokenize the first
// 32768 characters of the text without BOS, CRLF→LF; take the first ctx·chunks tokens;
// each chunk is [BOS] + the next ctx tokens; all ctx next-token predictions of a chunk are
// scored; the cache is empty at each chunk start; PPL = exp(mean NLL).
package eval

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"kvq/kv"
	"kvq/model"
)

// TextChars is how many characters of the text the protocol tokenizes.
const TextChars = 32768

// Tokens applies the protocol's tokenization to text: its first TextChars characters,
// CRLF→LF, without BOS.
func Tokens(m *model.Model, text string) []int32 {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if utf8.RuneCountInString(text) > TextChars {
		n := 0
		for i := range text {
			if n == TextChars {
				text = text[:i]
				break
			}
			n++
		}
	}
	return m.Tok.Encode(text, false)
}

// Options configures Run.
type Options struct {
	Ctx    int      // tokens scored per chunk
	Chunks int      // chunks
	Specs  []string // cache specs to compare with f32 (f32 itself is always run first)
	Layers string   // per-layer overrides applied to every spec, e.g. "0,-1=f16"; may be empty
	// Calibrate lists FP8 cache specs without a scale (e.g. "fp8e4m3",
	// "fp8e4m3/fp8e5m2") to evaluate with a fixed scale per layer and side, vLLM's
	// fp8 cache with k_scale and v_scale: the scales come from a kv.Calibrator over
	// an f32 run of CalibTokens held-out tokens, those right after the scored ones.
	Calibrate []string
	// CalibTokens is the length of the calibration run; 0 means Ctx.
	CalibTokens int
	// Progress, if set, is called after each (chunk, cache) run with the runs done and in total.
	Progress func(done, total int)
}

// Row is one cache's figures. Field names are the JSON contract of `kvq eval --json`.
type Row struct {
	Cache            string  `json:"cache"`
	BytesPerToken    float64 `json:"bytes_per_token"`
	CompressionVsF16 float64 `json:"compression_vs_f16"`
	PPL              float64 `json:"ppl"`
	PPLRatio         float64 `json:"ppl_ratio"`
	KLDMean          float64 `json:"kld_mean"`
	KLDMax           float64 `json:"kld_max"`
	Top1Agree        float64 `json:"top1_agree"`
	// TokPerS is the prefill tokens per second through this cache, wall clock, the
	// caches taking turns chunk by chunk; short runs on a busy machine move it a lot,
	// so the table leaves it out (kvq bench decode measures speed).
	TokPerS float64 `json:"tok_per_s"`
	// Family groups caches for the chart: float, int (q8, q4, q2), fp8, kivi, or
	// mixed when keys and values are of different families.
	Family string `json:"family"`
	// Recommended marks the efficient frontier (see Recommend): no other row
	// compresses as much or more with a lower mean KL divergence.
	Recommended bool `json:"recommended"`
	// Warning says why the row does not show what the cache does on long contexts:
	// the context does not exceed the full-precision window of a KIVI side or of
	// the sinks, so that side quantized nothing. Such rows are never recommended.
	Warning string `json:"warning,omitempty"`
}

// family is the chart family of type t.
func family(t kv.Type) string {
	switch {
	case t == kv.TypeF32 || t == kv.TypeF16 || t == kv.TypeBF16:
		return "float"
	case t.IsFP8():
		return "fp8"
	case t.IsKIVI():
		return "kivi"
	}
	return "int"
}

// specFamily is the family of a spec: its sides' when they agree, else mixed.
func specFamily(s kv.Spec) string {
	k, v := family(s.K.Type), family(s.V.Type)
	if k != v {
		return "mixed"
	}
	return k
}

// windowWarning reports, for a cache of spec s scored on chunks of ctx tokens,
// when a side keeps every token of a chunk in full precision: KIVI values within
// their r recent tokens, KIVI keys until a block of g tokens fills, any lossy side
// within the first sinks tokens. Empty when every lossy side quantizes something.
func windowWarning(s kv.Spec, ctx int) string {
	lossy := func(p kv.Part) bool { return p.Type != kv.TypeF32 && p.Type != kv.TypeF16 && p.Type != kv.TypeBF16 }
	var why []string
	if s.Sinks >= ctx && (lossy(s.K) || lossy(s.V)) {
		why = append(why, fmt.Sprintf("sinks (%d tokens)", s.Sinks))
	}
	if s.K.Type.IsKIVI() && ctx < max(s.K.G, 1) {
		why = append(why, fmt.Sprintf("keys (blocks of %d tokens)", s.K.G))
	}
	if s.V.Type.IsKIVI() && ctx <= s.V.R {
		why = append(why, fmt.Sprintf("values (%d tokens)", s.V.R))
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("ctx %d does not exceed the full-precision window of its %s: nothing there is quantized", ctx, strings.Join(why, " and "))
}

// Recommend marks the rows on the efficient frontier of compression against mean
// KL divergence: a row is recommended when no other row compresses as much or more
// with a lower KL divergence. The f32 reference and rows with a Warning take no part.
func Recommend(rows []Row) {
	for i := range rows {
		r := &rows[i]
		r.Recommended = false
		if r.Cache == "f32" || r.Warning != "" {
			continue
		}
		r.Recommended = true
		for j, o := range rows {
			if j != i && o.Cache != "f32" && o.Warning == "" && o.CompressionVsF16 >= r.CompressionVsF16 && o.KLDMean < r.KLDMean {
				r.Recommended = false
				break
			}
		}
	}
}

// Result is a whole evaluation.
type Result struct {
	Model  string `json:"model"`
	Text   string `json:"text"`
	Ctx    int    `json:"ctx"`
	Chunks int    `json:"chunks"`
	Tokens int    `json:"tokens"`
	Rows   []Row  `json:"rows"`
	// Calibrated holds, per calibrated cache, the per-layer specs its scales gave:
	// pass them to --cache-layers (or Config.LayerSpecs) to use them.
	Calibrated []Calibrated `json:"calibrated,omitempty"`
}

// Calibrated is one calibrated cache's per-layer specs.
type Calibrated struct {
	Cache      string `json:"cache"`       // the row's name
	LayerSpecs string `json:"layer_specs"` // kv.FormatLayerOverrides of its layers
	Tokens     int    `json:"tokens"`      // calibration run length
}

// ErrTooFewTokens means the text is shorter than ctx·chunks tokens.
var ErrTooFewTokens = errors.New("eval: text too short")

type runner struct {
	name string
	cfg  kv.Config
	row  Row
	nll  float64
	kl   float64
	agr  int
	dur  time.Duration
}

// Run evaluates every spec in opt.Specs against an f32 cache on tokens (already
// tokenized by Tokens). The f32 row comes first.
func Run(m *model.Model, tokens []int32, opt Options) (*Result, error) {
	var cfgs []kv.Config
	for _, sp := range opt.Specs {
		cfg, err := m.CacheConfig(sp, opt.Layers)
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, cfg)
	}
	return runConfigs(m, tokens, opt, cfgs)
}

// runConfigs is Run over cache configurations: f32 (with opt.Layers) first, then
// cfgs, then opt.Calibrate's.
func runConfigs(m *model.Model, tokens []int32, opt Options, cfgs []kv.Config) (*Result, error) {
	if opt.Ctx <= 0 || opt.Chunks <= 0 {
		return nil, fmt.Errorf("eval: ctx (%d) and chunks (%d) must be positive", opt.Ctx, opt.Chunks)
	}
	if opt.Ctx > m.Ctx {
		return nil, fmt.Errorf("eval: ctx %d exceeds the model's context of %d tokens", opt.Ctx, m.Ctx)
	}
	if need := opt.Ctx * opt.Chunks; len(tokens) < need {
		return nil, fmt.Errorf("%w: %d tokens, ctx·chunks needs %d (use fewer --chunks or a shorter --ctx)", ErrTooFewTokens, len(tokens), need)
	}
	var rs []*runner
	add := func(name string, cfg kv.Config) error {
		bpt, err := kv.BytesPerToken(cfg)
		if err != nil {
			return err
		}
		if name == "" {
			name = CacheName(cfg)
		}
		rs = append(rs, &runner{name: name, cfg: cfg, row: Row{BytesPerToken: bpt, CompressionVsF16: kv.F16BytesPerToken(cfg) / bpt,
			Family: specFamily(cfg.Spec), Warning: windowWarning(cfg.Spec, opt.Ctx)}})
		return nil
	}
	ref, err := m.CacheConfig("f32", opt.Layers)
	if err != nil {
		return nil, err
	}
	for _, cfg := range append([]kv.Config{ref}, cfgs...) {
		if err := add("", cfg); err != nil {
			return nil, err
		}
	}
	var calibrated []Calibrated
	for _, s := range opt.Calibrate {
		cfg, cal, err := calibrate(m, s, opt, tokens[opt.Ctx*opt.Chunks:])
		if err != nil {
			return nil, err
		}
		if err := add(cal.Cache, cfg); err != nil {
			return nil, err
		}
		calibrated = append(calibrated, cal)
	}
	v := m.Vocab
	refLogp := make([]float64, opt.Ctx*v) // f32 log-probabilities of the current chunk
	logp := make([]float64, v)
	input := make([]int32, opt.Ctx)
	done, total := 0, opt.Chunks*len(rs)
	for ch := range opt.Chunks {
		text := tokens[ch*opt.Ctx : (ch+1)*opt.Ctx]
		input[0] = m.Tok.BOS()
		copy(input[1:], text[:opt.Ctx-1])
		for ri, r := range rs {
			t0 := time.Now()
			logits, err := runChunk(m, r.cfg, input)
			if err != nil {
				return nil, fmt.Errorf("eval: cache %s, chunk %d: %w", r.name, ch, err)
			}
			r.dur += time.Since(t0)
			for i := range opt.Ctx {
				row := logits[i*v : (i+1)*v]
				target := text[i]
				if ri == 0 {
					logSoftmax(refLogp[i*v:(i+1)*v], row)
					r.nll -= refLogp[i*v+int(target)]
					r.agr++
					continue
				}
				logSoftmax(logp, row)
				r.nll -= logp[target]
				ref := refLogp[i*v : (i+1)*v]
				var kl float64
				for j, lp := range ref {
					kl += math.Exp(lp) * (lp - logp[j])
				}
				r.kl += kl
				r.row.KLDMax = max(r.row.KLDMax, kl)
				if argmax64(ref) == argmax64(logp) {
					r.agr++
				}
			}
			done++
			if opt.Progress != nil {
				opt.Progress(done, total)
			}
		}
	}
	n := float64(opt.Ctx * opt.Chunks)
	res := &Result{Ctx: opt.Ctx, Chunks: opt.Chunks, Tokens: opt.Ctx * opt.Chunks, Calibrated: calibrated}
	for _, r := range rs {
		r.row.Cache = r.name
		r.row.PPL = math.Exp(r.nll / n)
		r.row.PPLRatio = r.row.PPL / math.Exp(rs[0].nll/n)
		r.row.KLDMean = r.kl / n
		r.row.Top1Agree = float64(r.agr) / n
		r.row.TokPerS = n / r.dur.Seconds()
		res.Rows = append(res.Rows, r.row)
	}
	Recommend(res.Rows)
	return res, nil
}

// CacheName is how reports name a cache configuration: its canonical spec, followed by
// its per-layer overrides when it has any.
func CacheName(cfg kv.Config) string {
	if len(cfg.LayerSpecs) == 0 {
		return cfg.Spec.String()
	}
	return cfg.Spec.String() + " [" + kv.FormatLayerOverrides(cfg.LayerSpecs) + "]"
}

// calibrate builds the cache configuration of FP8 spec s with per-layer scales
// from an f32 run over [BOS] + the first CalibTokens−1 of held (tokens not scored).
// Layers named in opt.Layers keep their override.
func calibrate(m *model.Model, s string, opt Options, held []int32) (kv.Config, Calibrated, error) {
	n := opt.CalibTokens
	if n <= 0 {
		n = opt.Ctx
	}
	n = min(n, m.Ctx)
	if len(held) < n-1 || n < 2 {
		return kv.Config{}, Calibrated{}, fmt.Errorf("%w: calibrating %s needs %d held-out tokens after the %d scored ones, the text has %d (use fewer --chunks or a longer --text)",
			ErrTooFewTokens, s, n-1, opt.Ctx*opt.Chunks, len(held))
	}
	cfg, err := CalibrateFP8(m, s, opt.Layers, held[:n-1])
	if err != nil {
		return kv.Config{}, Calibrated{}, err
	}
	sp, _ := kv.ParseSpec(s)
	name := sp.String() + " per-layer scales"
	if opt.Layers != "" {
		name += " [" + opt.Layers + "]"
	}
	return cfg, Calibrated{Cache: name, LayerSpecs: kv.FormatLayerOverrides(cfg.LayerSpecs), Tokens: n}, nil
}

// CalibrateFP8 returns the cache configuration of FP8 spec s (FP8 types on both
// sides, without s=) with a fixed scale per layer and side: each maps the largest
// |key| (|value|) of that layer in an f32 run of m over [BOS] + tokens (at most
// the model's context) to the format's largest value (kv.Calibrator). Layers
// named in layers (overrides, as for Model.CacheConfig) keep their override.
func CalibrateFP8(m *model.Model, s, layers string, tokens []int32) (kv.Config, error) {
	sp, err := kv.ParseSpec(s)
	if err != nil {
		return kv.Config{}, fmt.Errorf("eval: calibrate: %w", err)
	}
	if !sp.K.Type.IsFP8() || !sp.V.Type.IsFP8() || sp.K.Scale != 0 || sp.V.Scale != 0 {
		return kv.Config{}, fmt.Errorf("eval: calibrate %q: want FP8 types on both sides without s= (the scales are what calibration finds)", s)
	}
	if len(tokens) < 1 {
		return kv.Config{}, fmt.Errorf("eval: calibrate %s: no tokens", s)
	}
	tokens = tokens[:min(len(tokens), m.Ctx-1)]
	ref, err := m.CacheConfig("f32", "")
	if err != nil {
		return kv.Config{}, err
	}
	st, err := kv.New(ref)
	if err != nil {
		return kv.Config{}, err
	}
	c := kv.NewCalibrator(st, m.Layers)
	seq, err := c.NewSeq()
	if err != nil {
		return kv.Config{}, err
	}
	input := append([]int32{m.Tok.BOS()}, tokens...)
	if _, err := m.Forward(c, []model.Span{{Seq: seq, Tokens: input}}); err != nil {
		return kv.Config{}, fmt.Errorf("eval: calibration run: %w", err)
	}
	specs, err := c.LayerSpecs(sp.K.Type, sp.V.Type, sp.Sinks)
	if err != nil {
		return kv.Config{}, fmt.Errorf("eval: calibrate %s: %w", s, err)
	}
	cfg, err := m.CacheConfig(s, layers)
	if err != nil {
		return kv.Config{}, err
	}
	if cfg.LayerSpecs == nil {
		cfg.LayerSpecs = map[int]kv.Spec{}
	}
	for l, lsp := range specs {
		if _, fixed := cfg.LayerSpecs[l]; !fixed {
			cfg.LayerSpecs[l] = lsp
		}
	}
	return cfg, nil
}

// runChunk prefills input into a fresh cache and returns all logits.
func runChunk(m *model.Model, cfg kv.Config, input []int32) ([]float32, error) {
	c, err := kv.New(cfg)
	if err != nil {
		return nil, err
	}
	seq, err := c.NewSeq()
	if err != nil {
		return nil, err
	}
	out, err := m.Forward(c, []model.Span{{Seq: seq, Tokens: input, AllLogits: true}})
	if err != nil {
		return nil, err
	}
	return out[0], c.Drop(seq)
}

// logSoftmax writes the log-probabilities of the logits x to dst.
func logSoftmax(dst []float64, x []float32) {
	ls := model.LogSumExp(x)
	for i, v := range x {
		dst[i] = float64(v) - ls
	}
}

func argmax64(x []float64) int {
	b := 0
	for i, v := range x {
		if v > x[b] {
			b = i
		}
	}
	return b
}
