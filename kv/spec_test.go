package kv

import (
	"strings"
	"testing"

	"kvq/quant"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in    string
		want  Spec
		canon string
	}{
		{"f32", Spec{K: Part{Type: TypeF32}, V: Part{Type: TypeF32}}, "f32"},
		{" q8 ", Spec{K: Part{Type: TypeQ8}, V: Part{Type: TypeQ8}}, "q8"},
		{"q4", Spec{K: Part{Type: TypeQ4, G: 32}, V: Part{Type: TypeQ4, G: 32}}, "q4"},
		{"q4:g=64", Spec{K: Part{Type: TypeQ4, G: 64}, V: Part{Type: TypeQ4, G: 64}}, "q4:g=64"},
		{"q4:g=32", Spec{K: Part{Type: TypeQ4, G: 32}, V: Part{Type: TypeQ4, G: 32}}, "q4"},
		{"kivi2:g=32,r=128", Spec{K: Part{Type: TypeKIVI2, G: 32, R: 128}, V: Part{Type: TypeKIVI2, G: 32, R: 128}}, "kivi2:r=128"},
		{"kivi2:r=64,g=16", Spec{K: Part{Type: TypeKIVI2, G: 16, R: 64}, V: Part{Type: TypeKIVI2, G: 16, R: 64}}, "kivi2:g=16,r=64"},
		{"kivi4/kivi2", Spec{K: Part{Type: TypeKIVI4, G: 32, R: 32}, V: Part{Type: TypeKIVI2, G: 32, R: 32}}, "kivi4/kivi2"},
		{"kivi2:sinks=4", Spec{K: Part{Type: TypeKIVI2, G: 32, R: 32}, V: Part{Type: TypeKIVI2, G: 32, R: 32}, Sinks: 4}, "kivi2:sinks=4"},
		{"kivi4/kivi2:r=16,sinks=4", Spec{K: Part{Type: TypeKIVI4, G: 32, R: 32}, V: Part{Type: TypeKIVI2, G: 32, R: 16}, Sinks: 4}, "kivi4/kivi2:r=16,sinks=4"},
		{"q8/f16", Spec{K: Part{Type: TypeQ8}, V: Part{Type: TypeF16}}, "q8/f16"},
		{"fp8e4m3/fp8e5m2", Spec{K: Part{Type: TypeFP8E4M3}, V: Part{Type: TypeFP8E5M2}}, "fp8e4m3/fp8e5m2"},
		{"f16:sinks=2/q2:g=8", Spec{K: Part{Type: TypeF16}, V: Part{Type: TypeQ2, G: 8}, Sinks: 2}, "f16/q2:g=8,sinks=2"},
		{"bf16", Spec{K: Part{Type: TypeBF16}, V: Part{Type: TypeBF16}}, "bf16"},
		{"kivi8:r=0", Spec{K: Part{Type: TypeKIVI8, G: 32, R: 0}, V: Part{Type: TypeKIVI8, G: 32, R: 0}}, "kivi8:r=0"},
		{"kivi2:rope=pre/kivi2", Spec{K: Part{Type: TypeKIVI2, G: 32, R: 32, PreRoPE: true}, V: Part{Type: TypeKIVI2, G: 32, R: 32}}, "kivi2:rope=pre/kivi2"},
		{"kivi3:rope=pre,g=64/kivi2:r=32", Spec{K: Part{Type: TypeKIVI3, G: 64, R: 32, PreRoPE: true}, V: Part{Type: TypeKIVI2, G: 32, R: 32}}, "kivi3:g=64,rope=pre/kivi2"},
		{"kivi3:rope=post", Spec{K: Part{Type: TypeKIVI3, G: 32, R: 32}, V: Part{Type: TypeKIVI3, G: 32, R: 32}}, "kivi3"},
		{"kivi4:rope=pre", Spec{K: Part{Type: TypeKIVI4, G: 32, R: 32, PreRoPE: true}, V: Part{Type: TypeKIVI4, G: 32, R: 32, PreRoPE: true}}, "kivi4:rope=pre"},
		{"q3:g=64", Spec{K: Part{Type: TypeQ3, G: 64}, V: Part{Type: TypeQ3, G: 64}}, "q3:g=64"},
		{"fp8e4m3:s=0.0125", Spec{K: Part{Type: TypeFP8E4M3, Scale: 0.0125}, V: Part{Type: TypeFP8E4M3, Scale: 0.0125}}, "fp8e4m3:s=0.0125"},
		{"fp8e4m3:s=2e-3/fp8e5m2:s=0.5,sinks=1", Spec{K: Part{Type: TypeFP8E4M3, Scale: 0.002}, V: Part{Type: TypeFP8E5M2, Scale: 0.5}, Sinks: 1}, "fp8e4m3:s=0.002/fp8e5m2:s=0.5,sinks=1"},
	}
	for _, c := range cases {
		got, err := ParseSpec(c.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if s := got.String(); s != c.canon {
			t.Errorf("ParseSpec(%q).String() = %q, want %q", c.in, s, c.canon)
		}
		back, err := ParseSpec(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q: %+v, %v", c.in, back, err)
		}
	}
}

// TestPartString: every part, zero values included, prints as a spec that parses
// back to the same cache (a zero G is the default group; a key side's R is not
// written).
func TestPartString(t *testing.T) {
	for _, typ := range Types() {
		for _, p := range []Part{{Type: typ}, {Type: typ, G: 8, R: 3}} {
			if !typ.HasGroup() {
				p.G = 0
			}
			if !typ.entry().Takes(quant.ParamResidual) {
				p.R = 0
			}
			sp, err := ParseSpec(p.String())
			if err != nil {
				t.Errorf("Part %+v: String %q does not parse: %v", p, p.String(), err)
				continue
			}
			want := p
			if want.G == 0 && typ.HasGroup() {
				want.G = DefaultGroup
			}
			if sp.K != want || sp.V != want {
				t.Errorf("Part %+v: %q parses to %+v", p, p.String(), sp)
			}
			two := Spec{K: p, V: Part{Type: TypeF16}}
			if _, err := ParseSpec(two.String()); err != nil {
				t.Errorf("Spec %+v: String %q does not parse: %v", two, two.String(), err)
			}
		}
	}
	if _, err := New(Config{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 8, Spec: Spec{K: Part{Type: TypeQ8, Scale: 2}, V: Part{Type: TypeQ8}}}); err == nil {
		t.Error("a scale on a q8 part: no error")
	}
	if _, err := New(Config{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 8, Spec: Spec{K: Part{Type: TypeKIVI4}, V: Part{Type: TypeQ4}}}); err != nil {
		t.Errorf("zero groups: %v", err)
	}
}

func TestParseSpecErrors(t *testing.T) {
	cases := []struct{ in, mention string }{
		{"", "kivi2"},
		{"q5", "valid: f32 f16 bf16 q8 fp8e4m3 fp8e5m2 q4 q3 q2 kivi8 kivi4 kivi3 kivi2"},
		{"q8:g=32", "valid keys: sinks"},
		{"q4:r=3", "valid keys: g sinks"},
		{"kivi4:r=8/kivi2", "valid keys: g rope sinks"},
		{"kivi4/kivi2:rope=pre", "valid keys: g r sinks"},
		{"q4:rope=pre", "valid keys: g sinks"},
		{"kivi2:rope=yes", "want pre"},
		{"q4:g=0", "must be in [1, 1024]"},
		{"kivi4:g=4096", "must be in [1, 1024]"},
		{"q4:g=x", "not an integer"},
		{"q4:g", "key=value"},
		{"q4:", "empty parameter"},
		{"kivi2:r=-1", "must be in [0, 1048576]"},
		{"q8:sinks=-2", "must be in [0, 1048576]"},
		{"a/b/c", "more than one"},
		{"q8:sinks=1/q8:sinks=2", "sinks given twice"},
		{"q4:g=8,g=16", "given twice"},
		{"Q8", "unknown cache type"},
		{"fp8e4m3:s=0", "positive finite"},
		{"fp8e4m3:s=-1", "positive finite"},
		{"fp8e4m3:s=NaN", "positive finite"},
		{"fp8e4m3:s=inf", "positive finite"},
		{"fp8e4m3:s=1e-60", "positive finite"},
		{"q8:s=0.5", "valid keys: sinks"},
	}
	for _, c := range cases {
		_, err := ParseSpec(c.in)
		if err == nil {
			t.Errorf("ParseSpec(%q): no error", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("ParseSpec(%q) error %q does not mention %q", c.in, err, c.mention)
		}
	}
}

func TestParseLayerOverrides(t *testing.T) {
	m, err := ParseLayerOverrides("0,-1=f16; 3=kivi4:g=16,r=8", 6)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{0: "f16", 5: "f16", 3: "kivi4:g=16,r=8"}
	if len(m) != len(want) {
		t.Fatalf("got %v, want %v", m, want)
	}
	for l, s := range want {
		if m[l].String() != s {
			t.Errorf("layer %d: %v, want %s", l, m[l], s)
		}
	}
	if f := FormatLayerOverrides(m); f != "0,5=f16;3=kivi4:g=16,r=8" {
		t.Errorf("FormatLayerOverrides = %q", f)
	}
	if m, err := ParseLayerOverrides("", 4); err != nil || len(m) != 0 {
		t.Errorf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"6=f16", "-7=f16", "0=q9", "x=f16", "0,0=f16", "f16", "0,-6=q8"} {
		if _, err := ParseLayerOverrides(bad, 6); err == nil {
			t.Errorf("ParseLayerOverrides(%q): no error", bad)
		}
	}
}

// FuzzParseSpec: any input is an error or a spec whose canonical string parses back
// to the same spec; nothing panics.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"f32", "q4:g=64", "kivi4/kivi2:r=16,sinks=4", "kivi2:g=32,r=128", "q8/f16", "a/b", "q4:g=", ":", "/", "kivi8:r=0,sinks=0", "fp8e4m3:s=0.5/fp8e5m2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			return
		}
		back, err := ParseSpec(sp.String())
		if err != nil || back != sp {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, sp, sp.String(), back, err)
		}
	})
}

// TestPreRoPEConfig: sizes of keys stored before RoPE need no rotation, a Store does.
func TestPreRoPEConfig(t *testing.T) {
	cfg := Config{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Spec: MustParseSpec("kivi2:rope=pre/kivi2")}
	pre, err := BytesPerToken(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Spec = MustParseSpec("kivi2")
	if post, err := BytesPerToken(cfg); err != nil || post != pre {
		t.Errorf("bytes per token: before RoPE %v, after %v (%v)", pre, post, err)
	}
	cfg.Spec = MustParseSpec("kivi2:rope=pre/kivi2")
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Config.RoPE") {
		t.Errorf("New without Config.RoPE: %v", err)
	}
	if _, err := New(Config{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 16, Spec: cfg.Spec, RoPE: testRoPE(t, 32)}); err == nil {
		t.Error("New with a RoPE wider than the head: no error")
	}
}
