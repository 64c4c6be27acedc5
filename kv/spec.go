package kv

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"kvq/quant"
)

// Type is a cache element type, the TYPE of a spec string: the name of a row of
// the codec registry (quant.Registry), which says what the type stores and which
// parameters it takes. The zero Type is invalid.
type Type string

// Cache types named in code; every registry entry is a valid Type, named here or not.
const (
	TypeF32     Type = "f32"     // float32, lossless
	TypeF16     Type = "f16"     // IEEE half precision per value
	TypeBF16    Type = "bf16"    // bfloat16 per value
	TypeQ8      Type = "q8"      // symmetric int8 per row
	TypeFP8E4M3 Type = "fp8e4m3" // FP8 E4M3 per value
	TypeFP8E5M2 Type = "fp8e5m2" // FP8 E5M2 per value
	TypeQ4      Type = "q4"      // asymmetric 4-bit per group of g values along the row
	TypeQ3      Type = "q3"      // asymmetric 3-bit per group of g values along the row
	TypeQ2      Type = "q2"      // asymmetric 2-bit per group of g values along the row
	TypeKIVI8   Type = "kivi8"   // KIVI 8-bit: keys per channel over blocks of g tokens, values per token
	TypeKIVI4   Type = "kivi4"   // KIVI 4-bit
	TypeKIVI3   Type = "kivi3"   // KIVI 3-bit
	TypeKIVI2   Type = "kivi2"   // KIVI 2-bit
)

// Types lists every valid cache type, in the order of the spec grammar (the
// registry's).
func Types() []Type {
	var ts []Type
	for _, e := range quant.Registry() {
		ts = append(ts, Type(e.Name))
	}
	return ts
}

func typeList() string {
	var ns []string
	for _, t := range Types() {
		ns = append(ns, string(t))
	}
	return strings.Join(ns, " ")
}

// entry returns t's registry entry (the zero Entry for an invalid type).
func (t Type) entry() quant.Entry {
	e, _ := quant.Lookup(string(t))
	return e
}

// String returns the type's spec name, e.g. "kivi4".
func (t Type) String() string {
	if t == "" {
		return "Type()"
	}
	return string(t)
}

// IsKIVI reports whether t stores keys per channel over blocks of tokens (the KIVI
// types).
func (t Type) IsKIVI() bool { return t.entry().Key != nil }

// ValuesPerChannel reports whether t stores values per channel over blocks of g
// tokens (its keys too, as the KIVI types do).
func (t Type) ValuesPerChannel() bool { return t.entry().Value != nil }

// HasGroup reports whether t takes the group parameter g.
func (t Type) HasGroup() bool { return t.entry().Takes(quant.ParamGroup) }

// IsFP8 reports whether t takes the fixed scale parameter s (the FP8 types).
func (t Type) IsFP8() bool { return t.entry().Takes(quant.ParamScale) }

// Bits is the number of bits per stored value code (32 for f32).
func (t Type) Bits() int { return t.entry().Bits }

func parseType(s string) (Type, error) {
	if _, ok := quant.Lookup(s); !ok {
		return "", fmt.Errorf("unknown cache type %q (valid: %s)", s, typeList())
	}
	return Type(s), nil
}

// Defaults and limits of spec parameters.
const (
	DefaultGroup = 32 // g: group size along the quantized axis
	// DefaultResidual is r, the KIVI full-precision residual of recent values, in
	// tokens. It is 32, not the KIVI paper's 128: its rows (f16, r−1 per layer) are
	// held by every sequence beside its blocks, and at 128 they outweighed the
	// kivi4/kivi2 blocks of a 300-token sequence (llama-134m: 2.3 MiB of rows against
	// 2.8 MiB of blocks), so the cache's compression did not become concurrency.
	// kvq eval (stories260K, 8 × 512): r=128 PPL ratio 1.0022, KLD 0.0033; r=64
	// 1.0034, 0.0040; r=32 1.0043, 0.0052; 8-bit window rows did worse than f16
	// ones at every r (r=64: 1.0064, 0.0058).
	DefaultResidual = 32
	MaxGroup        = 1024    // largest g
	MaxWindow       = 1 << 20 // largest r and sinks
)

// Part is the cache type of one side (keys or values) with its parameters.
type Part struct {
	Type Type
	// G is the group size along the quantized axis: values per scale along a row for
	// q4/q2 and KIVI values (clipped to the head size when the cache is built), and the
	// key block length in tokens for KIVI keys. 0 for types without groups; for types
	// with groups 0 means DefaultGroup.
	G int
	// R is the number of most recent tokens whose values a KIVI value side keeps in
	// full precision (counting the querying token itself). Meaningful on the value
	// side of a KIVI type only; 0 elsewhere.
	R int
	// Scale is the fixed scale of an FP8 type (spec parameter s, e.g.
	// "fp8e4m3:s=0.0125"): a value x is stored as the FP8 code of x/Scale and nothing
	// per row, as vLLM's fp8 cache with per-tensor k_scale and v_scale. 0 (the
	// default) stores a per-row f16 scale in every row. Give each layer its own
	// scale with Config.LayerSpecs; CalibrateFP8 computes them from a calibration run.
	Scale float32
	// PreRoPE stores keys before RoPE (rope=pre, KIVI keys only): per-channel ranges
	// stay narrow (RoPE swings a channel across a block), and attention rotates each
	// key to its position while scoring (Config.RoPE). Set on the key side; the value
	// side of a single TYPE carries it too and ignores it.
	PreRoPE bool
}

// String is the part's spec string as one TYPE[:params] (sinks are a Spec's), with
// only non-default parameters; ParseSpec(p.String()) gives p for both sides, with a
// zero G read as DefaultGroup.
func (p Part) String() string { return partString(p, 0, roleBoth) }

// Spec is a parsed cache spec: the key and value types and the number of leading
// tokens of every sequence kept in full precision.
type Spec struct {
	K, V  Part
	Sinks int // first Sinks tokens of every sequence are attended in full precision
}

// ParseSpec parses SPEC := TYPE[:params] | KTYPE[:params]/VTYPE[:params], where TYPE is
// a name of the codec registry (f32 f16 bf16 q8 fp8e4m3 fp8e5m2 q4 q3 q2 kivi8 kivi4
// kivi3 kivi2; see Types) and params is a comma-separated list of key=value: g (group
// size, default 32; q*, kivi*), r (KIVI value residual in tokens, default 32; kivi*
// on the value side), rope (pre: KIVI keys stored before RoPE; post, the default),
// s (fixed scale of an FP8 type, a positive float; default: a scale per row) and
// sinks (leading full-precision tokens, default 0; any type, written once).
// With a single TYPE its parameters apply to both keys and values.
func ParseSpec(s string) (Spec, error) {
	sp, err := parseSpec(s)
	if err != nil {
		return Spec{}, fmt.Errorf("kv: %w", err)
	}
	return sp, nil
}

// parseSpec is ParseSpec with errors not yet prefixed by the package name.
func parseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, fmt.Errorf("empty cache spec (want TYPE or KTYPE/VTYPE, TYPE one of %s)", typeList())
	}
	sides := strings.Split(s, "/")
	if len(sides) > 2 {
		return Spec{}, fmt.Errorf("cache spec %q: more than one '/' (want TYPE or KTYPE/VTYPE)", s)
	}
	var sp Spec
	sinksSet := false
	for i, side := range sides {
		role := roleBoth
		if len(sides) == 2 {
			role = roleKey + i
		}
		p, sinks, hasSinks, err := parsePart(side, role)
		if err != nil {
			return Spec{}, fmt.Errorf("cache spec %q: %w", s, err)
		}
		if hasSinks {
			if sinksSet && sinks != sp.Sinks {
				return Spec{}, fmt.Errorf("cache spec %q: sinks given twice with different values", s)
			}
			sp.Sinks, sinksSet = sinks, true
		}
		switch role {
		case roleBoth:
			sp.K, sp.V = p, p
		case roleKey:
			sp.K = p
		case roleValue:
			sp.V = p
		}
	}
	return sp, nil
}

// MustParseSpec is ParseSpec for specs fixed in source code; it panics on error
// and must not be used on user input.
func MustParseSpec(s string) Spec {
	sp, err := ParseSpec(s)
	if err != nil {
		panic(err)
	}
	return sp
}

const (
	roleBoth = iota
	roleKey
	roleValue
)

func parsePart(s string, role int) (p Part, sinks int, hasSinks bool, err error) {
	name, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	p.Type, err = parseType(strings.TrimSpace(name))
	if err != nil {
		return Part{}, 0, false, err
	}
	if p.Type.HasGroup() {
		p.G = DefaultGroup
	}
	e := p.Type.entry()
	if e.Takes(quant.ParamResidual) {
		p.R = DefaultResidual
	}
	if params == "" {
		if strings.Contains(s, ":") {
			return Part{}, 0, false, fmt.Errorf("%s: empty parameter list after ':'", name)
		}
		return p, 0, false, nil
	}
	seen := map[string]bool{}
	for _, kvs := range strings.Split(params, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(kvs), "=")
		if !ok {
			return Part{}, 0, false, fmt.Errorf("%s: parameter %q is not key=value (valid keys: %s)", name, kvs, validKeys(p.Type, role))
		}
		if seen[key] {
			return Part{}, 0, false, fmt.Errorf("%s: parameter %s given twice", name, key)
		}
		seen[key] = true
		if !slices.Contains(strings.Fields(validKeys(p.Type, role)), key) {
			return Part{}, 0, false, fmt.Errorf("%s: parameter %q is not valid here (valid keys: %s)", name, key, validKeys(p.Type, role))
		}
		if key == "s" {
			f, ferr := strconv.ParseFloat(val, 32)
			if ferr != nil || !(f > 0) || math.IsInf(f, 0) || float32(f) == 0 {
				return Part{}, 0, false, fmt.Errorf("%s: s=%q must be a positive finite number (the FP8 scale)", name, val)
			}
			p.Scale = float32(f)
			continue
		}
		if key == "rope" {
			if val != "pre" && val != "post" {
				return Part{}, 0, false, fmt.Errorf("%s: rope=%q: want pre (keys stored before RoPE) or post (after, the default)", name, val)
			}
			p.PreRoPE = val == "pre"
			continue
		}
		n, perr := strconv.Atoi(val)
		if perr != nil {
			return Part{}, 0, false, fmt.Errorf("%s: parameter %s=%q is not an integer", name, key, val)
		}
		switch {
		case key == "g" && p.Type.HasGroup():
			if n < 1 || n > MaxGroup {
				return Part{}, 0, false, fmt.Errorf("%s: g=%d must be in [1, %d]", name, n, MaxGroup)
			}
			p.G = n
		case key == "r" && e.Takes(quant.ParamResidual) && role != roleKey:
			if n < 0 || n > MaxWindow {
				return Part{}, 0, false, fmt.Errorf("%s: r=%d must be in [0, %d]", name, n, MaxWindow)
			}
			p.R = n
		case key == "sinks":
			if n < 0 || n > MaxWindow {
				return Part{}, 0, false, fmt.Errorf("%s: sinks=%d must be in [0, %d]", name, n, MaxWindow)
			}
			sinks, hasSinks = n, true
		default:
			return Part{}, 0, false, fmt.Errorf("%s: parameter %q is not valid here (valid keys: %s)", name, key, validKeys(p.Type, role))
		}
	}
	return p, sinks, hasSinks, nil
}

func validKeys(t Type, role int) string {
	var ks []string
	if t.HasGroup() {
		ks = append(ks, "g")
	}
	e := t.entry()
	if e.Takes(quant.ParamResidual) && role != roleKey {
		ks = append(ks, "r")
	}
	if e.Takes(quant.ParamRoPE) && role != roleValue {
		ks = append(ks, "rope")
	}
	if e.Takes(quant.ParamScale) {
		ks = append(ks, "s")
	}
	ks = append(ks, "sinks")
	return strings.Join(ks, " ")
}

// String returns the canonical spec string: one TYPE when keys and values agree,
// KTYPE/VTYPE otherwise, with only non-default parameters, in the order g, r, rope,
// s, sinks. ParseSpec(s.String()) == s for every valid s (a zero G reads back as
// DefaultGroup; a key side's R, meaningless, is not written).
func (s Spec) String() string {
	if s.K == s.V {
		return partString(s.K, s.Sinks, roleBoth)
	}
	return partString(s.K, 0, roleKey) + "/" + partString(s.V, s.Sinks, roleValue)
}

func partString(p Part, sinks, role int) string {
	var ps []string
	if p.Type.HasGroup() && p.G != DefaultGroup && p.G != 0 {
		ps = append(ps, "g="+strconv.Itoa(p.G))
	}
	if p.Type.entry().Takes(quant.ParamResidual) && p.R != DefaultResidual && role != roleKey {
		ps = append(ps, "r="+strconv.Itoa(p.R))
	}
	if p.PreRoPE && role != roleValue {
		ps = append(ps, "rope=pre")
	}
	if p.Type.IsFP8() && p.Scale != 0 {
		ps = append(ps, "s="+strconv.FormatFloat(float64(p.Scale), 'g', -1, 32))
	}
	if sinks != 0 {
		ps = append(ps, "sinks="+strconv.Itoa(sinks))
	}
	if len(ps) == 0 {
		return p.Type.String()
	}
	return p.Type.String() + ":" + strings.Join(ps, ",")
}

// ParseLayerOverrides parses per-layer cache specs for a model of nLayers layers:
// groups separated by ';', each "LAYERS=SPEC" where LAYERS is a comma-separated list
// of layer indexes, negative ones counting from the end (-1 is the last layer).
// Example: "0,-1=f16;5=kivi4:g=64". A layer named twice is an error.
func ParseLayerOverrides(s string, nLayers int) (map[int]Spec, error) {
	out := map[int]Spec{}
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	if nLayers < 1 {
		return nil, fmt.Errorf("kv: layer overrides %q: model has %d layers", s, nLayers)
	}
	for _, group := range strings.Split(s, ";") {
		group = strings.TrimSpace(group)
		if group == "" {
			continue
		}
		layers, spec, ok := strings.Cut(group, "=")
		if !ok {
			return nil, fmt.Errorf("kv: layer override %q: want LAYERS=SPEC, e.g. 0,-1=f16", group)
		}
		sp, err := parseSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("kv: layer override %q: %w", group, err)
		}
		for _, ls := range strings.Split(layers, ",") {
			ls = strings.TrimSpace(ls)
			l, err := strconv.Atoi(ls)
			if err != nil {
				return nil, fmt.Errorf("kv: layer override %q: layer %q is not an integer", group, ls)
			}
			idx := l
			if l < 0 {
				idx = nLayers + l
			}
			if idx < 0 || idx >= nLayers {
				return nil, fmt.Errorf("kv: layer override %q: layer %d out of range [-%d, %d)", group, l, nLayers, nLayers)
			}
			if _, dup := out[idx]; dup {
				return nil, fmt.Errorf("kv: layer override %q: layer %d (index %d) given twice", group, l, idx)
			}
			out[idx] = sp
		}
	}
	return out, nil
}

// FormatLayerOverrides is the inverse of ParseLayerOverrides with non-negative
// indexes, layers sharing a spec grouped, groups ordered by their first layer.
func FormatLayerOverrides(m map[int]Spec) string {
	layers := make([]int, 0, len(m))
	for l := range m {
		layers = append(layers, l)
	}
	sort.Ints(layers)
	var order []string
	groups := map[string][]string{}
	for _, l := range layers {
		k := m[l].String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], strconv.Itoa(l))
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = strings.Join(groups[k], ",") + "=" + k
	}
	return strings.Join(parts, ";")
}
