package eval

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"kvq/assets"
	"kvq/internal/reference"
	"kvq/kv"
	"kvq/model"
)

// protocol is the reference's perplexity protocol and figures (an independent float64
// implementation) on the built-in text.
func protocol(t *testing.T) (ctx, chunks int, ppl float64, first []int32) {
	t.Helper()
	r, err := reference.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := r.Perplexity
	return p.Ctx, p.Chunks, p.F32, p.FirstTokens
}

func TestProtocolTokens(t *testing.T) {
	ctx, chunks, _, want := protocol(t)
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	toks := Tokens(m, assets.Text)
	for i, w := range want {
		if toks[i] != w {
			t.Fatalf("first tokens %v, want %v", toks[:len(want)], want)
		}
	}
	if len(toks) < ctx*chunks {
		t.Fatalf("built-in text gives %d tokens, protocol needs %d", len(toks), ctx*chunks)
	}
}

// TestQualityTargets runs the evaluation of the targets: f32 perplexity equals
// the reference, and the lossy caches stay within their quality bounds.
func TestQualityTargets(t *testing.T) {
	ctx, chunks, refPPL, _ := protocol(t)
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(m, Tokens(m, assets.Text), Options{Ctx: ctx, Chunks: chunks, Specs: []string{"q8", "kivi8", "kivi4/kivi2"}})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range res.Rows {
		rows[r.Cache] = r
		t.Logf("%-12s bytes/token %6.1f  ppl %.5f  ratio %.5f  kld %.6f  top1 %.4f", r.Cache, r.BytesPerToken, r.PPL, r.PPLRatio, r.KLDMean, r.Top1Agree)
	}
	if res.Rows[0].Cache != "f32" {
		t.Fatalf("first row is %q, want f32", res.Rows[0].Cache)
	}
	if p := res.Rows[0].PPL; math.Abs(p-refPPL)/refPPL > 0.001 {
		t.Errorf("f32 perplexity %.5f, reference %.5f (tolerance 0.1%%)", p, refPPL)
	}
	if r := res.Rows[0]; r.KLDMean != 0 || r.Top1Agree != 1 || r.PPLRatio != 1 {
		t.Errorf("f32 row against itself: %+v", r)
	}
	checks := []struct {
		cache        string
		maxKLD       float64
		maxPPLRatio  float64
		minTop1Agree float64
	}{
		{"q8", 0.002, 1.005, 0.95},
		{"kivi8", 5e-5, 1.001, 0.99},
		{"kivi4/kivi2", 0.006, 1.005, 0.95},
	}
	for _, c := range checks {
		r, ok := rows[c.cache]
		if !ok {
			t.Errorf("no row for %s (rows: %v)", c.cache, rows)
			continue
		}
		if r.KLDMean > c.maxKLD || r.PPLRatio > c.maxPPLRatio || r.Top1Agree < c.minTop1Agree {
			t.Errorf("%s: kld %.6f (max %g), ppl ratio %.5f (max %g), top-1 %.4f (min %g)", c.cache, r.KLDMean, c.maxKLD, r.PPLRatio, c.maxPPLRatio, r.Top1Agree, c.minTop1Agree)
		}
		if r.KLDMean <= 0 {
			t.Errorf("%s: kld %g; a lossy cache cannot match f32 exactly", c.cache, r.KLDMean)
		}
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	toks := Tokens(m, assets.Text)
	for _, o := range []Options{
		{Ctx: 0, Chunks: 1},
		{Ctx: 513, Chunks: 1},
		{Ctx: 512, Chunks: 1000},
		{Ctx: 64, Chunks: 1, Specs: []string{"q5"}},
	} {
		if _, err := Run(m, toks, o); err == nil {
			t.Errorf("Run(%+v) succeeded, want error", o)
		}
	}
}

func TestWriteSVG(t *testing.T) {
	res := &Result{Model: "m<1>", Ctx: 8, Chunks: 1, Rows: []Row{
		{Cache: "f32", CompressionVsF16: 0.5, Family: "float"},
		{Cache: "q8", CompressionVsF16: 1.6, KLDMean: 0.0015, Family: "int"},
		{Cache: "kivi4/kivi2", CompressionVsF16: 2.9, KLDMean: 0.0035, Family: "kivi"},
		{Cache: "f16", CompressionVsF16: 1, KLDMean: 0, Family: "float"},
		{Cache: "fp8e5m2", CompressionVsF16: 1.6, KLDMean: 0.05, Family: "fp8"},
	}}
	Recommend(res.Rows)
	var b strings.Builder
	if err := WriteSVG(&b, res); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	points := strings.Count(svg, "<circle") - len(familyColours) - 1 // less the legend's
	if points != 4 || !strings.Contains(svg, "kivi4/kivi2") || !strings.Contains(svg, "m&lt;1&gt;") || strings.Contains(svg, "NaN") {
		t.Fatalf("%d points, svg:\n%s", points, svg)
	}
	// The frontier joins f16, q8 and kivi4/kivi2 (not fp8e5m2), from x = 1× at the left edge.
	if strings.Count(svg, "<polyline") != 1 || !strings.Contains(svg, `points="70.0,`) || strings.Count(svg[strings.Index(svg, "<polyline"):], ",") < 3 {
		t.Fatalf("no frontier from 1×:\n%s", svg)
	}
	for _, f := range []string{"#1f77b4", "#ff7f0e", "#2ca02c"} {
		if !strings.Contains(svg, `stroke="`+f+`"`) {
			t.Errorf("no point drawn in %s", f)
		}
	}
}

// TestRecommend: the efficient frontier, f32 and warned rows aside.
func TestRecommend(t *testing.T) {
	rows := []Row{
		{Cache: "f32", CompressionVsF16: 0.5},
		{Cache: "f16", CompressionVsF16: 1},
		{Cache: "bf16", CompressionVsF16: 1, KLDMean: 0.0001},   // f16 as small, better
		{Cache: "q8", CompressionVsF16: 1.6, KLDMean: 0.002},    // frontier
		{Cache: "fp8", CompressionVsF16: 1.6, KLDMean: 0.01},    // q8 as small, better
		{Cache: "kivi4", CompressionVsF16: 2.5, KLDMean: 0.003}, // frontier
		{Cache: "q4", CompressionVsF16: 2, KLDMean: 0.3},        // kivi4 smaller and better
		{Cache: "kivi2", CompressionVsF16: 3.6, KLDMean: 0.0001, Warning: "window"},
		{Cache: "q2", CompressionVsF16: 2.7, KLDMean: 3}, // the most compressed unwarned
	}
	Recommend(rows)
	var got []string
	for _, r := range rows {
		if r.Recommended {
			got = append(got, r.Cache)
		}
	}
	if want := "f16 q8 kivi4 q2"; strings.Join(got, " ") != want {
		t.Fatalf("recommended %v, want %s", got, want)
	}
}

// TestWindowWarning: a row is warned exactly when ctx leaves a lossy side unquantized.
func TestWindowWarning(t *testing.T) {
	for _, tc := range []struct {
		spec string
		ctx  int
		want string // "" for no warning
	}{
		{"kivi4", 32, "values (32 tokens)"},
		{"kivi4", 33, ""},
		{"kivi4/kivi2:r=64", 64, "values (64 tokens)"},
		{"kivi4:g=64,r=16", 32, "keys (blocks of 64 tokens)"},
		{"q4:sinks=8", 8, "sinks (8 tokens)"},
		{"f16:sinks=8", 8, ""},
		{"q8", 1, ""},
	} {
		got := windowWarning(kv.MustParseSpec(tc.spec), tc.ctx)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s at ctx %d: warning %q, want one with %q", tc.spec, tc.ctx, got, tc.want)
		}
	}
}

// TestCalibrate: a calibrated FP8 row stores d bytes per row (no per-row scale),
// every layer gets its own scales, its quality is close to f32's, and bad requests
// (non-FP8 types, a given scale, no held-out tokens) are refused.
func TestCalibrate(t *testing.T) {
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	toks := Tokens(m, assets.Text)
	res, err := Run(m, toks, Options{Ctx: 128, Chunks: 2, Specs: []string{"fp8e4m3"}, Calibrate: []string{"fp8e4m3"}, CalibTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || len(res.Calibrated) != 1 {
		t.Fatalf("rows %+v calibrated %+v", res.Rows, res.Calibrated)
	}
	perRow, cal := res.Rows[1], res.Rows[2]
	t.Logf("per-row %+v\ncalibrated %+v\n%+v", perRow, cal, res.Calibrated[0])
	if want := float64(m.Layers * 2 * m.KVHeads * m.HeadDim); cal.BytesPerToken != want {
		t.Errorf("calibrated fp8: %v bytes per token, want %v (one byte per value)", cal.BytesPerToken, want)
	}
	over, err := kv.ParseLayerOverrides(res.Calibrated[0].LayerSpecs, m.Layers)
	if err != nil || len(over) != m.Layers {
		t.Fatalf("layer specs %q: %v", res.Calibrated[0].LayerSpecs, err)
	}
	for l, sp := range over {
		if sp.K.Scale <= 0 || sp.V.Scale <= 0 || sp.K.Type != kv.TypeFP8E4M3 {
			t.Errorf("layer %d: %v", l, sp)
		}
	}
	if cal.KLDMean <= 0 || cal.KLDMean > 0.2 || cal.Top1Agree < 0.8 {
		t.Errorf("calibrated fp8e4m3: KLD %v top-1 %v", cal.KLDMean, cal.Top1Agree)
	}
	for _, bad := range []Options{
		{Ctx: 64, Chunks: 1, Calibrate: []string{"q8"}},
		{Ctx: 64, Chunks: 1, Calibrate: []string{"fp8e4m3:s=0.5"}},
		{Ctx: 512, Chunks: len(toks) / 512, Calibrate: []string{"fp8e4m3"}},
	} {
		if _, err := Run(m, toks, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestPreRoPEQuality pins what keys stored before RoPE buy on the built-in model and
// text: kivi2 keys before RoPE take kivi2's bytes with at most a third of its KL
// divergence, and 3-bit keys before RoPE take fewer bytes than kivi4/kivi2 with a KL
// divergence of at most 0.01.
func TestPreRoPEQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("four caches over the protocol's chunks (about 10 s)")
	}
	ctx, chunks, _, _ := protocol(t)
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(m, Tokens(m, assets.Text), Options{Ctx: ctx, Chunks: chunks, Specs: []string{"kivi2", "kivi2:rope=pre/kivi2", "kivi3:rope=pre/kivi2", "kivi4/kivi2"}})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range res.Rows {
		rows[r.Cache] = r
		t.Logf("%-22s bytes/token %6.1f  kld %.5f  top1 %.4f", r.Cache, r.BytesPerToken, r.KLDMean, r.Top1Agree)
	}
	post, pre2, pre3, k4 := rows["kivi2"], rows["kivi2:rope=pre/kivi2"], rows["kivi3:rope=pre/kivi2"], rows["kivi4/kivi2"]
	if pre2.BytesPerToken != post.BytesPerToken || pre2.KLDMean > post.KLDMean/3 || pre2.KLDMean <= 0 {
		t.Errorf("kivi2:rope=pre/kivi2: %.1f bytes/token, kld %.5f; kivi2: %.1f, %.5f (want the same bytes and at most a third)", pre2.BytesPerToken, pre2.KLDMean, post.BytesPerToken, post.KLDMean)
	}
	if pre3.BytesPerToken >= k4.BytesPerToken || pre3.KLDMean > 0.01 || pre3.KLDMean <= 0 {
		t.Errorf("kivi3:rope=pre/kivi2: %.1f bytes/token, kld %.5f; kivi4/kivi2: %.1f bytes/token (want fewer bytes, kld ≤ 0.01)", pre3.BytesPerToken, pre3.KLDMean, k4.BytesPerToken)
	}
}

// TestLayers checks kvq eval --layers: one row per layer, the layers' bytes adding
// up to the whole cache's, and a suggestion that moves the most sensitive layer to
// f16 when the budget has room for exactly one.
func TestLayers(t *testing.T) {
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Layers(m, Tokens(m, assets.Text), Options{Ctx: 256, Chunks: 2, Specs: []string{"kivi2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != m.Layers {
		t.Fatalf("%d rows for %d layers", len(rows), m.Layers)
	}
	all, err := m.CacheConfig("kivi2", "")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := kv.BytesPerToken(all)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	worst := 0
	for l, r := range rows {
		t.Logf("layer %d: %.1f bytes/token, kld %.5f", r.Layer, r.BytesPerToken, r.KLDMean)
		if r.Layer != l || r.Spec != "kivi2" || r.KLDMean <= 0 {
			t.Errorf("row %d: %+v", l, r)
		}
		sum += r.BytesPerToken
		if r.KLDMean > rows[worst].KLDMean {
			worst = l
		}
	}
	if math.Abs(sum-whole) > 1e-9*whole {
		t.Errorf("layers' bytes add up to %.3f, the whole cache takes %.3f", sum, whole)
	}
	f16, err := m.CacheConfig("f16", "")
	if err != nil {
		t.Fatal(err)
	}
	f16Bytes, err := kv.BytesPerToken(f16)
	if err != nil {
		t.Fatal(err)
	}
	upgrade := f16Bytes/float64(m.Layers) - rows[worst].BytesPerToken
	got, bytes, err := SuggestLayers(m, rows, "kivi2", "f16", whole+1.5*upgrade)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d=f16", worst); got != want || math.Abs(bytes-(whole+upgrade)) > 1e-9*bytes {
		t.Errorf("suggestion %q at %.2f bytes/token, want %q at %.2f", got, bytes, want, whole+upgrade)
	}
	if _, _, err := SuggestLayers(m, rows, "kivi2", "f16", whole-1); err == nil {
		t.Error("a budget below the base spec's bytes: no error")
	}
}

// TestCalibrateFP8: layers given an override keep it; the others get the
// calibrated FP8 scales.
func TestCalibrateFP8(t *testing.T) {
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	toks := Tokens(m, assets.Text)[:100]
	cfg, err := CalibrateFP8(m, "fp8e4m3", "0=f16", toks)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LayerSpecs[0].String(); got != "f16" {
		t.Errorf("layer 0: %s, want the f16 override", got)
	}
	for l := 1; l < m.Layers; l++ {
		if sp := cfg.LayerSpecs[l]; sp.K.Scale <= 0 || sp.V.Scale <= 0 {
			t.Errorf("layer %d: %v", l, sp)
		}
	}
	if _, err := CalibrateFP8(m, "fp8e4m3", "", nil); err == nil {
		t.Error("no tokens: no error")
	}
}
