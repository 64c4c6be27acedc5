package model

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"kvq/gguf"
	"kvq/synth"
)

// tinyShapes are small shapes of each architecture for the reference tests: windows
// shorter than the test's tokens, head sizes other than Dim/Heads, layer counts that
// mix window and full layers.
var tinyShapes = map[string]synth.Shape{
	"llama":   {Dim: 64, Layers: 2, Heads: 8, KVHeads: 2, FFN: 96},
	"qwen2":   {Dim: 64, Layers: 2, Heads: 8, KVHeads: 2, FFN: 96, QKVBias: true, Tied: true},
	"mistral": {Dim: 64, Layers: 2, Heads: 8, KVHeads: 2, FFN: 96, Window: 5},
	"qwen3":   {Dim: 64, Layers: 2, Heads: 8, KVHeads: 2, FFN: 96, HeadSize: 16, Tied: true},
	"gemma2":  {Dim: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 96, HeadSize: 32, Window: 4, Tied: true},
	"gemma3":  {Dim: 64, Layers: 7, Heads: 4, KVHeads: 1, FFN: 96, HeadSize: 16, Window: 3, RopeScale: 2, Tied: true},
	// llama.cpp b4747 runs gemma2 models of 26, 42 or 46 layers only. Its weights are
	// scaled less and its soft caps are small (tinyTweaks; see TestLogitsMatchLlamaCpp).
	"gemma2-26": {Dim: 64, Layers: 26, Heads: 4, KVHeads: 2, FFN: 96, HeadSize: 32, Window: 4, Tied: true},
	"phi3":      {Dim: 64, Layers: 2, Heads: 8, KVHeads: 4, FFN: 96, Window: 4},
}

// tinyTweak is how tinyFile departs from synth's file for one shape: the factor on
// every matrix (10 unless set) and metadata values replaced.
type tinyTweak struct {
	scale float32
	meta  map[string]any
}

var tinyTweaks = map[string]tinyTweak{
	"gemma2-26": {scale: 3, meta: map[string]any{
		"gemma2.attn_logit_softcapping": float32(1), "gemma2.final_logit_softcapping": float32(2)}},
}

// tinyModel writes a small random model of arch (a key of tinyShapes) with synth,
// rewrites it with the given rotary dimension count, weights scaled up (so that
// logits are far from flat) and norm weights varied, and loads it.
func tinyModel(t *testing.T, arch string, ropeDims int) (*Model, *gguf.File) {
	t.Helper()
	f, err := gguf.Parse(tinyFile(t, arch, ropeDims))
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m, f
}

// tinyFile is the GGUF file of tinyModel.
func tinyFile(t *testing.T, arch string, ropeDims int) []byte {
	t.Helper()
	shape, tweak := tinyShapes[arch], tinyTweaks[arch]
	if tweak.scale == 0 {
		tweak.scale = 10
	}
	shape.Name, shape.Arch, shape.Vocab, shape.Ctx, shape.RMSEps, shape.RopeBase = "tiny", arch, 300, 64, 1e-5, 10000
	switch arch {
	case "mistral":
		shape.Arch = "llama"
	case "gemma2-26":
		shape.Arch = "gemma2"
	}
	arch = shape.Arch
	src, err := synth.Parse(shape, gguf.TypeF32, 3)
	if err != nil {
		t.Fatal(err)
	}
	var meta []gguf.KV
	for _, k := range src.Keys() {
		v, _ := src.Value(k)
		if k == arch+".rope.dimension_count" {
			continue
		}
		if x, ok := tweak.meta[k]; ok {
			if v, err = gguf.ValueOf(x); err != nil {
				t.Fatal(err)
			}
		}
		meta = append(meta, gguf.KV{Key: k, Value: v})
	}
	meta = append(meta, gguf.KV{Key: arch + ".rope.dimension_count", Value: uint32(ropeDims)})
	var tensors []gguf.Tensor
	for _, ti := range src.Tensors {
		data := make([]float32, ti.Elems())
		raw, err := src.TensorData(&ti)
		if err != nil {
			t.Fatal(err)
		}
		if err := gguf.Dequantize(ti.Type, data, raw); err != nil {
			t.Fatal(err)
		}
		if len(ti.Dims) == 2 { // matrices: std 0.02 → 0.2 (by default)
			for i := range data {
				data[i] *= tweak.scale
			}
		} else if strings.HasSuffix(ti.Name, "norm.weight") { // ones → 0.5…1.5
			for i := range data {
				data[i] = float32(1 + 0.5*math.Sin(float64(i+3*len(ti.Name))))
			}
		}
		tensors = append(tensors, gguf.Tensor{Name: ti.Name, Type: gguf.TypeF32, Dims: ti.Dims, Data: data})
	}
	var out bytes.Buffer
	if err := gguf.Write(&out, meta, tensors); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// naiveLogits is an independent float64 transformer over the file's tensors, written
// from the architecture's definition (c.Arch's published model code; only sizes are
// taken from c): token-by-token, no cache abstraction.
func naiveLogits(t *testing.T, f *gguf.File, c Config, toks []int32) [][]float64 {
	t.Helper()
	arch := c.Arch
	gemma := arch == "gemma2" || arch == "gemma3"
	window, _ := f.Uint(arch + ".attention.sliding_window")
	slides := func(l int) bool {
		switch {
		case window == 0:
			return false
		case arch == "gemma2":
			return l%2 == 0
		case arch == "gemma3":
			return l%6 != 5
		}
		return true
	}
	ropeScale, _ := f.Float(arch + ".rope.scaling.factor")
	if ropeScale == 0 {
		ropeScale = 1
	}
	softcap := func(x, c float64) float64 { return c * math.Tanh(x/c) }
	attnCap, _ := f.Float(arch + ".attn_logit_softcapping")
	finalCap, _ := f.Float(arch + ".final_logit_softcapping")
	gelu := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}
	get := func(name string) []float64 {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("tensor %s missing", name)
		}
		raw, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, ti.Elems())
		if err := gguf.Dequantize(ti.Type, v, raw); err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	matvec := func(w, x []float64, rows int) []float64 {
		cols := len(x)
		y := make([]float64, rows)
		for r := range rows {
			for k := range cols {
				y[r] += w[r*cols+k] * x[k]
			}
		}
		return y
	}
	norm := func(x, w []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(len(x))+float64(c.RMSEps))
		y := make([]float64, len(x))
		for i := range x {
			y[i] = x[i] * s * w[i]
		}
		return y
	}
	rope := func(v []float64, pos int, local bool) {
		base, p := c.RopeBase, float64(pos)/ropeScale
		if local && arch == "gemma3" {
			base, p = 10000, float64(pos)
		}
		for j := 0; j < c.RopeDims/2; j++ {
			theta := p * math.Pow(base, -2*float64(j)/float64(c.RopeDims))
			i0, i1 := 2*j, 2*j+1
			if c.RopeNeoX {
				i0, i1 = j, j+c.RopeDims/2
			}
			a, b := v[i0], v[i1]
			v[i0] = a*math.Cos(theta) - b*math.Sin(theta)
			v[i1] = a*math.Sin(theta) + b*math.Cos(theta)
		}
	}
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	emb := get("token_embd.weight")
	out := emb
	if !c.Tied {
		out = get("output.weight")
	}
	keys := make([][][]float64, c.Layers) // layer → position → kvDim
	vals := make([][][]float64, c.Layers)
	var logits [][]float64
	for pos, tok := range toks {
		x := append([]float64(nil), emb[int(tok)*c.Dim:(int(tok)+1)*c.Dim]...)
		if gemma {
			for i := range x {
				x[i] *= math.Sqrt(float64(c.Dim))
			}
		}
		for l := range c.Layers {
			p := fmt.Sprintf("blk.%d.", l)
			xb := norm(x, get(p+"attn_norm.weight"))
			var q, k, v []float64
			if arch == "phi3" {
				qkv := matvec(get(p+"attn_qkv.weight"), xb, (c.Heads+2*c.KVHeads)*hd)
				q, k, v = qkv[:c.Heads*hd], qkv[c.Heads*hd:(c.Heads+c.KVHeads)*hd], qkv[(c.Heads+c.KVHeads)*hd:]
			} else {
				q = matvec(get(p+"attn_q.weight"), xb, c.Heads*hd)
				k = matvec(get(p+"attn_k.weight"), xb, c.KVHeads*hd)
				v = matvec(get(p+"attn_v.weight"), xb, c.KVHeads*hd)
			}
			if c.QKVBias {
				for _, pair := range []struct {
					x []float64
					b string
				}{{q, "attn_q.bias"}, {k, "attn_k.bias"}, {v, "attn_v.bias"}} {
					for i, b := range get(p + pair.b) {
						pair.x[i] += b
					}
				}
			}
			if arch == "qwen3" || arch == "gemma3" {
				qn, kn := get(p+"attn_q_norm.weight"), get(p+"attn_k_norm.weight")
				for h := range c.Heads {
					copy(q[h*hd:(h+1)*hd], norm(q[h*hd:(h+1)*hd], qn))
				}
				for h := range c.KVHeads {
					copy(k[h*hd:(h+1)*hd], norm(k[h*hd:(h+1)*hd], kn))
				}
			}
			for h := range c.Heads {
				rope(q[h*hd:(h+1)*hd], pos, slides(l))
			}
			for h := range c.KVHeads {
				rope(k[h*hd:(h+1)*hd], pos, slides(l))
			}
			keys[l] = append(keys[l], k)
			vals[l] = append(vals[l], v)
			att := make([]float64, c.Heads*hd)
			for h := range c.Heads {
				kh := h / group
				scores := make([]float64, pos+1)
				mx := math.Inf(-1)
				for j := range scores {
					if slides(l) && pos-j >= int(window) {
						scores[j] = math.Inf(-1)
						continue
					}
					for d := range hd {
						scores[j] += q[h*hd+d] * keys[l][j][kh*hd+d]
					}
					scores[j] /= math.Sqrt(float64(hd))
					if arch == "gemma2" {
						scores[j] = softcap(scores[j], attnCap)
					}
					mx = math.Max(mx, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					sum += scores[j]
				}
				for j := range scores {
					for d := range hd {
						att[h*hd+d] += scores[j] / sum * vals[l][j][kh*hd+d]
					}
				}
			}
			o := matvec(get(p+"attn_output.weight"), att, c.Dim)
			if gemma {
				o = norm(o, get(p+"post_attention_norm.weight"))
			}
			for i := range x {
				x[i] += o[i]
			}
			xb = norm(x, get(p+"ffn_norm.weight"))
			var g, u []float64
			if arch == "phi3" {
				gu := matvec(get(p+"ffn_up.weight"), xb, 2*c.FFN)
				g, u = gu[:c.FFN], gu[c.FFN:]
			} else {
				g = matvec(get(p+"ffn_gate.weight"), xb, c.FFN)
				u = matvec(get(p+"ffn_up.weight"), xb, c.FFN)
			}
			for i := range g {
				if gemma {
					g[i] = gelu(g[i]) * u[i]
				} else {
					g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
				}
			}
			d := matvec(get(p+"ffn_down.weight"), g, c.Dim)
			if gemma {
				d = norm(d, get(p+"post_ffw_norm.weight"))
			}
			for i := range x {
				x[i] += d[i]
			}
		}
		lg := matvec(out, norm(x, get("output_norm.weight")), c.Vocab)
		if arch == "gemma2" {
			for i := range lg {
				lg[i] = softcap(lg[i], finalCap)
			}
		}
		logits = append(logits, lg)
	}
	return logits
}

// TestForwardMatchesNaiveReference checks both architectures (llama: adjacent RoPE
// pairs, separate output; qwen2: NeoX pairs, q/k/v biases, tied output), with full and
// partial rotary dimensions, prefill and decode, against the float64 reference.
func TestForwardMatchesNaiveReference(t *testing.T) {
	for _, tc := range []struct {
		arch     string
		ropeDims int
	}{{"llama", 8}, {"llama", 4}, {"qwen2", 8}, {"qwen2", 6}, {"mistral", 8}, {"qwen3", 16}, {"qwen3", 10},
		{"gemma2", 32}, {"gemma3", 16}, {"phi3", 8}, {"phi3", 6}} {
		t.Run(fmt.Sprintf("%s/rope%d", tc.arch, tc.ropeDims), func(t *testing.T) {
			m, f := tinyModel(t, tc.arch, tc.ropeDims)
			neox := tc.arch != "llama" && tc.arch != "mistral"
			if m.RopeDims != tc.ropeDims || m.RopeNeoX != neox || m.QKVBias != (tc.arch == "qwen2") {
				t.Fatalf("config %+v", m.Config)
			}
			toks := []int32{1, 17, 250, 3, 99, 42, 7, 7, 120, 5, 64, 200}
			want := naiveLogits(t, f, m.Config, toks)
			c, seq := newCache(t, m, "f32")
			got, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks[:5], AllLogits: true}})
			if err != nil {
				t.Fatal(err)
			}
			rows := [][]float32{}
			for i := range 5 {
				rows = append(rows, append([]float32(nil), got[0][i*m.Vocab:(i+1)*m.Vocab]...))
			}
			for _, tok := range toks[5:] {
				out, err := m.Forward(c, []Span{{Seq: seq, Tokens: []int32{tok}}})
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, append([]float32(nil), out[0]...))
			}
			for pos := range toks {
				var scale, worst float64
				for _, v := range want[pos] {
					scale = math.Max(scale, math.Abs(v))
				}
				for i, v := range want[pos] {
					worst = math.Max(worst, math.Abs(float64(rows[pos][i])-v))
				}
				if scale < 0.5 {
					t.Fatalf("pos %d: reference logits nearly flat (max |logit| %g); the test would prove little", pos, scale)
				}
				if worst > 1e-4*scale {
					t.Errorf("pos %d: max |logit error| %.3g, max |logit| %.3g", pos, worst, scale)
				}
			}
		})
	}
}
