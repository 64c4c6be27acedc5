package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"kvq/assets"
	"kvq/gguf"
	"kvq/kv"
	"kvq/model"
)

// modelWithEOT rebuilds the built-in model with tokenizer.ggml.eot_token_id = eot,
// so that the tokenizer reports eot as ending a turn while the engine knows only EOS.
func modelWithEOT(t *testing.T, eot int32) *model.Model {
	t.Helper()
	f, err := gguf.Parse(assets.Model)
	if err != nil {
		t.Fatal(err)
	}
	var meta []gguf.KV
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		meta = append(meta, gguf.KV{Key: k, Value: v})
	}
	meta = append(meta, gguf.KV{Key: "tokenizer.ggml.eot_token_id", Value: uint32(eot)})
	var tensors []gguf.Tensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Type != gguf.TypeF32 {
			t.Fatalf("tensor %s is %v, not F32", ti.Name, ti.Type)
		}
		b, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]float32, ti.Elems())
		for j := range data {
			data[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
		}
		tensors = append(tensors, gguf.Tensor{Name: ti.Name, Type: ti.Type, Dims: ti.Dims, Data: data})
	}
	var out bytes.Buffer
	if err := gguf.Write(&out, meta, tensors); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Tok.IsEOG(eot) || eot == m.Tok.EOS() {
		t.Fatalf("token %d is not a separate end-of-turn token", eot)
	}
	return m
}

// A turn-end token other than EOS (e.g. <|im_end|>) ends a choice with "stop" and
// its request's work at once in the engine, as EOS does.
func TestEndOfTurnToken(t *testing.T) {
	ref, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	prompt := ref.Tok.Encode("Once upon a time", true)
	cfg, _ := ref.CacheConfig("f32", "")
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := c.NewSeq()
	out, err := ref.Generate(c, seq, prompt, 30, model.NewSampler(model.SamplerConfig{}), nil)
	if err != nil || len(out) < 10 {
		t.Fatalf("Generate: %d tokens, %v", len(out), err)
	}
	// The 8th generated token becomes the end of turn; it must not occur earlier.
	const k = 7
	for _, tk := range out[:k] {
		if tk == out[k] {
			t.Fatalf("token %d occurs before position %d", tk, k)
		}
	}
	want := ref.Tok.Decode(out[:k]) // an end-of-generation token ends the text, as EOS does
	// Slow steps: a request that did not stop would run its 30 tokens meanwhile.
	e := newEnv(t, envConfig{model: modelWithEOT(t, out[k]), engine: slowSteps(2 * time.Millisecond)})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			body := fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":30,"temperature":0,"n":2,"stream":%v}`, stream)
			resp := e.post(t, "/v1/completions", body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			texts, finishes := make([]string, 2), make([]string, 2)
			if stream {
				payloads, done := sseEvents(t, resp.Body)
				resp.Body.Close()
				if !done {
					t.Fatal("no [DONE]")
				}
				for _, p := range payloads {
					var ch completionOut
					if err := json.Unmarshal([]byte(p), &ch); err != nil {
						t.Fatal(err)
					}
					for _, x := range ch.Choices {
						texts[x.Index] += x.Text
						if x.FinishReason != nil {
							finishes[x.Index] = *x.FinishReason
						}
					}
				}
			} else {
				var ch completionOut
				decode(t, resp, &ch)
				for _, x := range ch.Choices {
					texts[x.Index], finishes[x.Index] = x.Text, *x.FinishReason
				}
			}
			for i := range 2 {
				if texts[i] != want || finishes[i] != "stop" {
					t.Errorf("choice %d: %q (%s), want %q (stop)", i, texts[i], finishes[i], want)
				}
			}
		})
	}
	e.waitMetric(t, "kvq_kv_blocks_used", 0)
	e.waitMetric(t, "kvq_running_sequences", 0)
	if got := e.metric(t, `kvq_requests_total{status="200"}`); got != 2 {
		t.Errorf("%v requests counted as 200", got)
	}
	// Two requests × two choices × k+1 tokens, give or take the step in flight when
	// the cancellation arrives.
	if n := e.metric(t, "kvq_tokens_generated_total"); n > 2*2*(k+1+2) {
		t.Errorf("%v tokens generated: the requests ran on past the end of turn", n)
	}
}
