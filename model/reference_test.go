package model

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"kvq/gguf"
	"kvq/synth"
)

// tinyModel writes a small random model of arch with synth, rewrites it with the
// given rotary dimension count and weights scaled up (so that logits are far from
// flat), and loads it.
func tinyModel(t *testing.T, arch string, ropeDims int) (*Model, *gguf.File) {
	t.Helper()
	shape := synth.Shape{Name: "tiny-" + arch, Arch: arch, Dim: 64, Layers: 2, Heads: 8, KVHeads: 2, FFN: 96, Vocab: 300,
		Ctx: 64, RMSEps: 1e-5, RopeBase: 10000, QKVBias: arch == "qwen2", Tied: arch == "qwen2"}
	var buf bytes.Buffer
	if err := synth.WriteShape(&buf, shape, gguf.TypeF32, 3); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var meta []gguf.KV
	for _, k := range src.Keys() {
		v, _ := src.Value(k)
		if k == arch+".rope.dimension_count" {
			continue
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
		if len(ti.Dims) == 2 { // matrices: std 0.02 → 0.2
			for i := range data {
				data[i] *= 10
			}
		}
		tensors = append(tensors, gguf.Tensor{Name: ti.Name, Type: gguf.TypeF32, Dims: ti.Dims, Data: data})
	}
	var out bytes.Buffer
	if err := gguf.Write(&out, meta, tensors); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m, f
}

// naiveLogits is an independent float64 transformer over the file's tensors, written
// from the architecture's definition: token-by-token, no cache abstraction.
func naiveLogits(t *testing.T, f *gguf.File, c Config, toks []int32) [][]float64 {
	t.Helper()
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
	rope := func(v []float64, pos int) {
		for j := 0; j < c.RopeDims/2; j++ {
			theta := float64(pos) * math.Pow(c.RopeBase, -2*float64(j)/float64(c.RopeDims))
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
		for l := range c.Layers {
			p := fmt.Sprintf("blk.%d.", l)
			xb := norm(x, get(p+"attn_norm.weight"))
			q := matvec(get(p+"attn_q.weight"), xb, c.Heads*hd)
			k := matvec(get(p+"attn_k.weight"), xb, c.KVHeads*hd)
			v := matvec(get(p+"attn_v.weight"), xb, c.KVHeads*hd)
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
			for h := range c.Heads {
				rope(q[h*hd:(h+1)*hd], pos)
			}
			for h := range c.KVHeads {
				rope(k[h*hd:(h+1)*hd], pos)
			}
			keys[l] = append(keys[l], k)
			vals[l] = append(vals[l], v)
			att := make([]float64, c.Heads*hd)
			for h := range c.Heads {
				kh := h / group
				scores := make([]float64, pos+1)
				mx := math.Inf(-1)
				for j := range scores {
					for d := range hd {
						scores[j] += q[h*hd+d] * keys[l][j][kh*hd+d]
					}
					scores[j] /= math.Sqrt(float64(hd))
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
			for i := range x {
				x[i] += o[i]
			}
			xb = norm(x, get(p+"ffn_norm.weight"))
			g := matvec(get(p+"ffn_gate.weight"), xb, c.FFN)
			u := matvec(get(p+"ffn_up.weight"), xb, c.FFN)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := matvec(get(p+"ffn_down.weight"), g, c.Dim)
			for i := range x {
				x[i] += d[i]
			}
		}
		logits = append(logits, matvec(out, norm(x, get("output_norm.weight")), c.Vocab))
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
	}{{"llama", 8}, {"llama", 4}, {"qwen2", 8}, {"qwen2", 6}} {
		t.Run(fmt.Sprintf("%s/rope%d", tc.arch, tc.ropeDims), func(t *testing.T) {
			m, f := tinyModel(t, tc.arch, tc.ropeDims)
			if m.RopeDims != tc.ropeDims || m.RopeNeoX != (tc.arch == "qwen2") || m.QKVBias != (tc.arch == "qwen2") {
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
