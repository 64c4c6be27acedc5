package quant

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// This file regenerates testdata/stories260K_kv.f16 (see realkv_test.go). It holds a
// plain float64 llama2.c forward pass, test-only, whose sole use is to produce real
// keys and values; it first reproduces the reference logits and greedy tokens.

// TestGenerateStoriesKV rebuilds testdata/stories260K_kv.f16 from the shared model.
func TestGenerateStoriesKV(t *testing.T) {
	if os.Getenv("KVQ_GEN_KV") == "" {
		t.Skip("set KVQ_GEN_KV=1 to regenerate " + kvFile)
	}
	m, err := loadLlama2c("/work/shared/models/stories260K/stories260K.bin")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Greedy []struct {
			PromptTokens []int `json:"prompt_tokens"`
			Tokens       []int `json:"tokens"`
		} `json:"greedy"`
		Logits struct {
			Tokens []int `json:"tokens"`
			Top5   []struct {
				Pos  int          `json:"pos"`
				Top5 [][2]float64 `json:"top5"`
			} `json:"logits_top5"`
		} `json:"logits"`
	}
	jb, err := os.ReadFile("/work/shared/reference/stories260K.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(jb, &ref); err != nil {
		t.Fatal(err)
	}
	seq := append(append([]int(nil), ref.Greedy[0].PromptTokens...), ref.Greedy[0].Tokens...)
	if len(seq) != kvTokens {
		t.Fatalf("sequence has %d tokens, want %d", len(seq), kvTokens)
	}
	st := m.newState()
	var out []byte
	perLayer := make([][]float64, m.layers) // layer → token-major K|V rows
	checked := 0
	for pos, tok := range seq {
		logits := m.forward(st, tok, pos)
		for _, p := range ref.Logits.Top5 {
			if p.Pos != pos {
				continue
			}
			for _, e := range p.Top5 {
				if got := logits[int(e[0])]; math.Abs(got-e[1]) > 1e-3*math.Abs(e[1]) {
					t.Fatalf("pos %d token %d: logit %g, reference %g", pos, int(e[0]), got, e[1])
				}
				checked++
			}
		}
		if pos+1 < len(seq) && pos+1 >= len(ref.Greedy[0].PromptTokens) {
			if am := argmax(logits); am != seq[pos+1] {
				t.Fatalf("pos %d: greedy token %d, reference %d", pos, am, seq[pos+1])
			}
		}
		for l := range m.layers {
			perLayer[l] = append(perLayer[l], st.kc[l][pos]...)
			perLayer[l] = append(perLayer[l], st.vc[l][pos]...)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d reference logits checked", checked)
	}
	for l := range m.layers {
		for _, x := range perLayer[l] {
			out = binary.LittleEndian.AppendUint16(out, F32ToF16(float32(x)))
		}
	}
	if err := os.WriteFile(kvFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d bytes", kvFile, len(out))
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// llama2c is a float64 forward pass of a llama2.c checkpoint with tied embeddings,
// used only to generate test data.
type llama2c struct {
	dim, hidden, layers, heads, kvHeads, vocab, seqLen        int
	emb, rmsAtt, wq, wk, wv, wo, rmsFFN, w1, w2, w3, rmsFinal []float64
}

func loadLlama2c(path string) (*llama2c, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %w", err)
	}
	if len(b) < 28 {
		return nil, fmt.Errorf("llama2c: %s: short header", path)
	}
	h := make([]int, 7)
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	m := &llama2c{dim: h[0], hidden: h[1], layers: h[2], heads: h[3], kvHeads: h[4], vocab: h[5], seqLen: h[6]}
	if m.vocab <= 0 {
		return nil, fmt.Errorf("llama2c: %s: untied classifier unsupported", path)
	}
	off := 28
	take := func(n int) []float64 {
		if err != nil {
			return nil
		}
		if off+4*n > len(b) {
			err = fmt.Errorf("llama2c: %s: truncated weights", path)
			return nil
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*i:])))
		}
		off += 4 * n
		return x
	}
	kvDim := m.dim * m.kvHeads / m.heads
	L, D, H := m.layers, m.dim, m.hidden
	m.emb = take(m.vocab * D)
	m.rmsAtt = take(L * D)
	m.wq = take(L * D * D)
	m.wk = take(L * D * kvDim)
	m.wv = take(L * D * kvDim)
	m.wo = take(L * D * D)
	m.rmsFFN = take(L * D)
	m.w1 = take(L * H * D)
	m.w2 = take(L * D * H)
	m.w3 = take(L * H * D)
	m.rmsFinal = take(D)
	return m, err
}

type llamaState struct{ kc, vc [][][]float64 } // layer → position → row

func (m *llama2c) newState() *llamaState {
	return &llamaState{kc: make([][][]float64, m.layers), vc: make([][][]float64, m.layers)}
}

func matvec(w []float64, x []float64, rows int) []float64 {
	n := len(x)
	out := make([]float64, rows)
	for i := range out {
		var s float64
		for j, xj := range x {
			s += w[i*n+j] * xj
		}
		out[i] = s
	}
	return out
}

func rmsnorm(x, w []float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * r * w[i]
	}
	return out
}

func (m *llama2c) forward(st *llamaState, tok, pos int) []float64 {
	D, H := m.dim, m.hidden
	hs := D / m.heads
	kvDim := hs * m.kvHeads
	x := append([]float64(nil), m.emb[tok*D:(tok+1)*D]...)
	for l := range m.layers {
		xb := rmsnorm(x, m.rmsAtt[l*D:(l+1)*D])
		q := matvec(m.wq[l*D*D:(l+1)*D*D], xb, D)
		k := matvec(m.wk[l*D*kvDim:(l+1)*D*kvDim], xb, kvDim)
		v := matvec(m.wv[l*D*kvDim:(l+1)*D*kvDim], xb, kvDim)
		for i := 0; i < D; i += 2 {
			freq := 1 / math.Pow(10000, float64(i%hs)/float64(hs))
			c, s := math.Cos(float64(pos)*freq), math.Sin(float64(pos)*freq)
			q[i], q[i+1] = q[i]*c-q[i+1]*s, q[i]*s+q[i+1]*c
			if i < kvDim {
				k[i], k[i+1] = k[i]*c-k[i+1]*s, k[i]*s+k[i+1]*c
			}
		}
		st.kc[l] = append(st.kc[l], k)
		st.vc[l] = append(st.vc[l], v)
		att := make([]float64, D)
		for h := range m.heads {
			kvh := h / (m.heads / m.kvHeads)
			scores := make([]float64, pos+1)
			mx := math.Inf(-1)
			for t := range scores {
				var s float64
				for i := range hs {
					s += q[h*hs+i] * st.kc[l][t][kvh*hs+i]
				}
				scores[t] = s / math.Sqrt(float64(hs))
				mx = math.Max(mx, scores[t])
			}
			var sum float64
			for t := range scores {
				scores[t] = math.Exp(scores[t] - mx)
				sum += scores[t]
			}
			for t := range scores {
				for i := range hs {
					att[h*hs+i] += scores[t] / sum * st.vc[l][t][kvh*hs+i]
				}
			}
		}
		o := matvec(m.wo[l*D*D:(l+1)*D*D], att, D)
		for i := range x {
			x[i] += o[i]
		}
		xb = rmsnorm(x, m.rmsFFN[l*D:(l+1)*D])
		h1 := matvec(m.w1[l*H*D:(l+1)*H*D], xb, H)
		h3 := matvec(m.w3[l*H*D:(l+1)*H*D], xb, H)
		for i := range h1 {
			h1[i] = h1[i] / (1 + math.Exp(-h1[i])) * h3[i]
		}
		o = matvec(m.w2[l*D*H:(l+1)*D*H], h1, D)
		for i := range x {
			x[i] += o[i]
		}
	}
	x = rmsnorm(x, m.rmsFinal)
	return matvec(m.emb, x, m.vocab)
}
