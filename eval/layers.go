package eval

import (
	"cmp"
	"fmt"
	"slices"

	"kvq/kv"
	"kvq/model"
)

// LayerRow is a cache spec's figures when it compresses one layer only, the others
// kept in f32: how sensitive the model's output is to that layer's cache.
type LayerRow struct {
	Layer int    `json:"layer"`
	Spec  string `json:"spec"`
	// BytesPerToken is what the layer stores per token with the spec (keys and values).
	BytesPerToken float64 `json:"bytes_per_token"`
	KLDMean       float64 `json:"kld_mean"`
	PPLRatio      float64 `json:"ppl_ratio"`
	Top1Agree     float64 `json:"top1_agree"`
}

// Layers measures, for each spec of opt.Specs and each layer of the model, the KL
// divergence from f32 when only that layer's cache is the spec (kvq eval --layers):
// layer l runs as f32 with the override l=SPEC. opt.Layers and opt.Calibrate are not
// used. Rows come spec by spec, layer by layer.
func Layers(m *model.Model, tokens []int32, opt Options) ([]LayerRow, error) {
	if len(opt.Specs) == 0 {
		return nil, fmt.Errorf("eval: per-layer sensitivity needs a cache spec")
	}
	f32, err := m.CacheConfig("f32", "")
	if err != nil {
		return nil, err
	}
	f32Bytes, err := kv.BytesPerToken(f32)
	if err != nil {
		return nil, err
	}
	type key struct{ spec, layer int }
	var names []string
	var keys []key
	// One run over every (spec, layer): the f32 reference is computed once per chunk.
	var cfgs []kv.Config
	for si, s := range opt.Specs {
		for l := range m.Layers {
			cfg, err := m.CacheConfig("f32", fmt.Sprintf("%d=%s", l, s))
			if err != nil {
				return nil, err
			}
			cfgs = append(cfgs, cfg)
			keys = append(keys, key{si, l})
			names = append(names, CacheName(cfg))
		}
	}
	opt.Layers, opt.Calibrate = "", nil
	res, err := runConfigs(m, tokens, opt, cfgs)
	if err != nil {
		return nil, err
	}
	rows := make([]LayerRow, len(keys))
	perLayer := f32Bytes / float64(m.Layers) // one f32 layer's bytes per token
	for i, k := range keys {
		r := res.Rows[i+1] // after the f32 row
		if r.Cache != names[i] {
			return nil, fmt.Errorf("eval: internal: row %q for %q", r.Cache, names[i])
		}
		rows[i] = LayerRow{Layer: k.layer, Spec: opt.Specs[k.spec], BytesPerToken: r.BytesPerToken - f32Bytes + perLayer,
			KLDMean: r.KLDMean, PPLRatio: r.PPLRatio, Top1Agree: r.Top1Agree}
	}
	return rows, nil
}

// SuggestLayers chooses per-layer overrides for a cache of spec base within budget
// bytes per token (kv.BytesPerToken of the model's configuration): every layer starts
// at base, then the layers where base hurts most (the largest KLDMean among rows of
// base, from Layers) move to spec safe, most sensitive first, as long as the total
// stays within budget. It returns the overrides (kv.FormatLayerOverrides; empty when
// no layer fits) and the bytes per token they take, or an error when base alone
// exceeds the budget.
func SuggestLayers(m *model.Model, rows []LayerRow, base, safe string, budget float64) (string, float64, error) {
	cfg, err := m.CacheConfig(base, "")
	if err != nil {
		return "", 0, err
	}
	total, err := kv.BytesPerToken(cfg)
	if err != nil {
		return "", 0, err
	}
	if total > budget {
		return "", total, fmt.Errorf("eval: %s alone takes %.1f bytes per token, more than the budget of %.1f", base, total, budget)
	}
	safeSpec, err := kv.ParseSpec(safe)
	if err != nil {
		return "", 0, err
	}
	var mine []LayerRow
	for _, r := range rows {
		if r.Spec == base {
			mine = append(mine, r)
		}
	}
	slices.SortStableFunc(mine, func(a, b LayerRow) int { return cmp.Compare(b.KLDMean, a.KLDMean) })
	over := map[int]kv.Spec{}
	for _, r := range mine {
		over[r.Layer] = safeSpec
		cfg.LayerSpecs = over
		b, err := kv.BytesPerToken(cfg)
		if err != nil {
			return "", 0, err
		}
		if b > budget {
			delete(over, r.Layer)
			continue
		}
		total = b
	}
	return kv.FormatLayerOverrides(over), total, nil
}
