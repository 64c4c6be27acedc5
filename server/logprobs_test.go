package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"kvq/kv"
	"kvq/model"
)

// refLogSoftmax runs tokens through a fresh model and f32 cache in one step and
// returns, for each position p ≥ 1, the log-softmax of the logits predicting it.
func refLogSoftmax(t *testing.T, tokens []int32) [][]float64 {
	t.Helper()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := m.CacheConfig("f32", "")
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := c.NewSeq()
	out, err := m.Forward(c, []model.Span{{Seq: seq, Tokens: tokens, AllLogits: true}})
	if err != nil {
		t.Fatal(err)
	}
	V := m.Vocab
	ref := make([][]float64, len(tokens))
	for p := 1; p < len(tokens); p++ {
		row := out[0][(p-1)*V : p*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = max(mx, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - mx)
		}
		ref[p] = make([]float64, V)
		for i, v := range row {
			ref[p][i] = float64(v) - mx - math.Log(s)
		}
	}
	return ref
}

// The official client asks for a completion with echo and logprobs (what
// lm-evaluation-harness's loglikelihood tasks send): the prompt's tokens come first,
// the first without a log-probability, and every token's log-probability equals the
// model's log-softmax with an f32 cache within 1e-4; the chat endpoint's logprobs
// agree too; an unknown field gets 400 naming it.
func TestOpenAIClientLogprobs(t *testing.T) {
	e := newEnv(t, envConfig{})
	client := openaiClient(e, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok := e.m.Tok

	t.Run("completion echo", func(t *testing.T) {
		const prompt = "Lily and Tom went to the park."
		ids := tok.Encode(prompt, true)
		res, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:       "default",
			Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens:   openai.Int(6),
			Temperature: openai.Float(0),
			Echo:        openai.Bool(true),
			Logprobs:    openai.Int(3),
		})
		if err != nil {
			t.Fatal(err)
		}
		ch := res.Choices[0]
		gen := greedy(t, ids, 6)
		if ch.Text != prompt+gen {
			t.Fatalf("text %q, want the prompt and %q", ch.Text, gen)
		}
		lp := ch.Logprobs
		if !strings.Contains(lp.RawJSON(), `"token_logprobs":[null,`) || !strings.Contains(lp.RawJSON(), `"top_logprobs":[{},`) {
			t.Errorf("the first prompt token's logprob is not null: %.80s", lp.RawJSON())
		}
		if strings.Join(lp.Tokens, "") != ch.Text || len(lp.Tokens) != len(ids)+6 || len(lp.TokenLogprobs) != len(lp.Tokens) || len(lp.TopLogprobs) != len(lp.Tokens) {
			t.Fatalf("tokens %q (%d, want %d), %d logprobs; text %q; %d top", lp.Tokens, len(lp.Tokens), len(ids)+6, len(lp.TokenLogprobs), ch.Text, len(lp.TopLogprobs))
		}
		// The generated ids, from the model.
		m, _ := model.LoadDefault()
		cfg, _ := m.CacheConfig("f32", "")
		c, _ := kv.New(cfg)
		seq, _ := c.NewSeq()
		out, err := m.Generate(c, seq, ids, 6, model.NewSampler(model.SamplerConfig{}), nil)
		if err != nil || len(out) != 6 {
			t.Fatalf("generate: %v %v", out, err)
		}
		all := append(slices.Clone(ids), out...)
		ref := refLogSoftmax(t, all)
		off := 0
		for p := range all {
			if lp.TextOffset[p] != int64(off) {
				t.Errorf("token %d: text offset %d, want %d", p, lp.TextOffset[p], off)
			}
			off += utf8.RuneCountInString(lp.Tokens[p])
			if p == 0 {
				continue
			}
			want := ref[p][all[p]]
			if math.Abs(lp.TokenLogprobs[p]-want) > 1e-4 {
				t.Errorf("token %d (%q): logprob %v, log-softmax %v", p, lp.Tokens[p], lp.TokenLogprobs[p], want)
			}
			// The 3 most likely and the token itself, as OpenAI gives them.
			top := lp.TopLogprobs[p]
			if own, ok := top[lp.Tokens[p]]; len(top) < 3 || len(top) > 4 || !ok || own != lp.TokenLogprobs[p] {
				t.Fatalf("token %d: %d top logprobs %v, without its own", p, len(top), top)
			}
			best := math.Inf(-1)
			for _, v := range top {
				best = max(best, v)
			}
			if math.Abs(best-slices.Max(ref[p])) > 1e-4 {
				t.Errorf("token %d: best top logprob %v, max log-softmax %v", p, best, slices.Max(ref[p]))
			}
		}
	})

	t.Run("chat", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:       "default",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tom had a dog.")},
			MaxTokens:   openai.Int(8),
			Temperature: openai.Float(0),
			Logprobs:    openai.Bool(true),
			TopLogprobs: openai.Int(2),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids := tok.Encode("user: Tom had a dog.\nassistant:", true)
		m, _ := model.LoadDefault()
		cfg, _ := m.CacheConfig("f32", "")
		c, _ := kv.New(cfg)
		seq, _ := c.NewSeq()
		out, _ := m.Generate(c, seq, ids, 8, model.NewSampler(model.SamplerConfig{}), nil)
		all := append(slices.Clone(ids), out...)
		ref := refLogSoftmax(t, all)
		content := res.Choices[0].Logprobs.Content
		if len(content) != len(out) {
			t.Fatalf("%d logprob entries for %d tokens", len(content), len(out))
		}
		var text strings.Builder
		for k, c := range content {
			p := len(ids) + k
			if math.Abs(c.Logprob-ref[p][all[p]]) > 1e-4 || len(c.TopLogprobs) != 2 || string(bytesOf(c.Bytes)) != c.Token {
				t.Errorf("entry %d: %+v, log-softmax %v", k, c, ref[p][all[p]])
			}
			text.WriteString(c.Token)
		}
		if text.String() != res.Choices[0].Message.Content {
			t.Errorf("tokens %q, content %q", text.String(), res.Choices[0].Message.Content)
		}
	})

	t.Run("unknown field", func(t *testing.T) {
		_, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:     "default",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")},
			MaxTokens: openai.Int(2),
		}, option.WithJSONSet("guided_choice", []string{"a"}))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "guided_choice" {
			t.Fatalf("error %v, want 400 naming guided_choice", err)
		}
	})
}

func bytesOf(b []int64) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = byte(x)
	}
	return out
}

// Accepted options change the answer as asked and nulls count as absent.
func TestSamplingOptions(t *testing.T) {
	e := newEnv(t, envConfig{})
	full := greedy(t, e.m.Tok.Encode("Once upon a time", true), 8)
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	// Nulls, user and an empty tool list are accepted and change nothing.
	resp := e.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"user":"u1","top_k":null,"logit_bias":null,"echo":null,"response_format":{"type":"text"}}`)
	decode(t, resp, &out)
	if resp.StatusCode != 200 || out.Choices[0].Text != full {
		t.Fatalf("status %d text %q, want %q", resp.StatusCode, out.Choices[0].Text, full)
	}
	resp = e.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":2,"tools":[],"tool_choice":"none"}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat with empty tools: status %d", resp.StatusCode)
	}
	// A logit bias of −100 on the greedy first token changes the first token.
	ids := e.m.Tok.Encode("Once upon a time", true)
	m, _ := model.LoadDefault()
	cfg, _ := m.CacheConfig("f32", "")
	c, _ := kv.New(cfg)
	seq, _ := c.NewSeq()
	outIDs, _ := m.Generate(c, seq, ids, 1, model.NewSampler(model.SamplerConfig{}), nil)
	body := `{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"logit_bias":{"` + strconv.Itoa(int(outIDs[0])) + `":-100}}`
	resp = e.post(t, "/v1/completions", body)
	decode(t, resp, &out)
	if resp.StatusCode != 200 || strings.HasPrefix(out.Choices[0].Text, e.m.Tok.Decode(outIDs[:1])) {
		t.Errorf("banned first token %d (%q): status %d text %q", outIDs[0], e.m.Tok.Decode(outIDs[:1]), resp.StatusCode, out.Choices[0].Text)
	}
	// A strong frequency penalty keeps greedy text from repeating a token as often.
	resp = e.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":40,"temperature":0,"frequency_penalty":2,"presence_penalty":2}`)
	decode(t, resp, &out)
	pen := out.Choices[0].Text
	plain := greedy(t, ids, 40)
	if resp.StatusCode != 200 || pen == plain {
		t.Errorf("penalties changed nothing: %q", pen)
	}
	// top_k 1 and min_p 1 at temperature 1 are greedy.
	for _, opt := range []string{`"top_k":1`, `"min_p":1`} {
		resp = e.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":8,"temperature":1,"seed":5,`+opt+`}`)
		decode(t, resp, &out)
		if out.Choices[0].Text != full {
			t.Errorf("%s at temperature 1: %q, want greedy %q", opt, out.Choices[0].Text, full)
		}
	}
}

// Streamed, every token's chunk carries its log-probability (completions and chat),
// the same values as the whole answer.
func TestStreamLogprobs(t *testing.T) {
	e := newEnv(t, envConfig{})
	whole := func(path, body string) []float64 {
		resp := e.post(t, path, body)
		var out struct {
			Choices []struct {
				Logprobs struct {
					TokenLogprobs []float64 `json:"token_logprobs"`
					Content       []struct {
						Logprob float64 `json:"logprob"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		decode(t, resp, &out)
		lp := out.Choices[0].Logprobs.TokenLogprobs
		for _, c := range out.Choices[0].Logprobs.Content {
			lp = append(lp, c.Logprob)
		}
		return lp
	}
	streamed := func(path, body string) []float64 {
		resp := e.post(t, path, strings.TrimSuffix(body, "}")+`,"stream":true}`)
		payloads, _ := sseEvents(t, resp.Body)
		resp.Body.Close()
		var lp []float64
		for _, p := range payloads {
			var c struct {
				Choices []struct {
					Logprobs *struct {
						TokenLogprobs []float64 `json:"token_logprobs"`
						Content       []struct {
							Logprob float64 `json:"logprob"`
						} `json:"content"`
					} `json:"logprobs"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(p), &c); err != nil {
				t.Fatal(err)
			}
			for _, ch := range c.Choices {
				if ch.Logprobs == nil {
					continue
				}
				lp = append(lp, ch.Logprobs.TokenLogprobs...)
				for _, x := range ch.Logprobs.Content {
					lp = append(lp, x.Logprob)
				}
			}
		}
		return lp
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"Once upon a time","max_tokens":10,"temperature":0,"logprobs":2}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":10,"temperature":0,"logprobs":true,"top_logprobs":1}`},
	} {
		w, s := whole(c.path, c.body), streamed(c.path, c.body)
		if len(w) != 10 || !slices.Equal(w, s) {
			t.Errorf("%s: whole %v, streamed %v", c.path, w, s)
		}
	}
}

// echo puts the prompt's text before each choice's, streamed or whole, for text and
// token-id prompts.
func TestEcho(t *testing.T) {
	e := newEnv(t, envConfig{})
	const prompt = "Once upon a time"
	gen := greedy(t, e.m.Tok.Encode(prompt, true), 6)
	ids, _ := json.Marshal(e.m.Tok.Encode(prompt, true))
	for _, p := range []string{`"` + prompt + `"`, string(ids)} {
		body := `{"prompt":` + p + `,"max_tokens":6,"temperature":0,"echo":true,"n":2}`
		var out struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		resp := e.post(t, "/v1/completions", body)
		decode(t, resp, &out)
		if len(out.Choices) != 2 || out.Choices[0].Text != prompt+gen || out.Choices[1].Text != prompt+gen {
			t.Errorf("%s: %+v, want %q twice", body, out.Choices, prompt+gen)
		}
		resp = e.post(t, "/v1/completions", strings.TrimSuffix(body, "}")+`,"stream":true}`)
		payloads, _ := sseEvents(t, resp.Body)
		resp.Body.Close()
		texts := map[int]string{}
		for _, pl := range payloads {
			var c struct {
				Choices []struct {
					Index int    `json:"index"`
					Text  string `json:"text"`
				} `json:"choices"`
			}
			json.Unmarshal([]byte(pl), &c)
			for _, ch := range c.Choices {
				texts[ch.Index] += ch.Text
			}
		}
		if texts[0] != prompt+gen || texts[1] != prompt+gen {
			t.Errorf("%s streamed: %v", body, texts)
		}
	}
}

// A stop string cuts the log-probabilities with the text: the tokens reported are
// those whose text starts before the cut, streamed or whole; text_offset counts
// characters, not bytes, past a non-ASCII prompt (echo).
func TestLogprobsStopAndOffsets(t *testing.T) {
	e := newEnv(t, envConfig{})
	const prompt = "Lily saw a café. Once upon a time"
	gen := greedy(t, e.m.Tok.Encode(prompt, true), 24)
	words := strings.Fields(gen)
	if len(words) < 6 {
		t.Fatalf("greedy text %q too short", gen)
	}
	stop := " " + words[len(words)/2]
	want := gen[:strings.Index(gen, stop)]
	type lps struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []*float64           `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	stopJSON, _ := json.Marshal(stop)
	body := `{"prompt":"` + prompt + `","max_tokens":24,"temperature":0,"logprobs":1,"echo":true,"stop":` + string(stopJSON) + `}`
	var out struct {
		Choices []struct {
			Text     string `json:"text"`
			Logprobs lps    `json:"logprobs"`
		} `json:"choices"`
	}
	decode(t, e.post(t, "/v1/completions", body), &out)
	ch := out.Choices[0]
	if ch.Text != prompt+want {
		t.Fatalf("text %q, want %q", ch.Text, prompt+want)
	}
	lp := ch.Logprobs
	joined := strings.Join(lp.Tokens, "")
	last := len(lp.Tokens) - 1
	if !strings.HasPrefix(joined, ch.Text) || len(joined)-len(lp.Tokens[last]) >= len(ch.Text) {
		t.Errorf("tokens %q for text %q: not cut with it", lp.Tokens, ch.Text)
	}
	chars := 0
	for p, s := range lp.Tokens {
		if lp.TextOffset[p] != chars {
			t.Errorf("token %d (%q): text offset %d, want %d characters", p, s, lp.TextOffset[p], chars)
		}
		chars += utf8.RuneCountInString(s)
	}
	if chars == len(joined) {
		t.Fatalf("prompt %q has no multi-byte character in its tokens %q", prompt, lp.Tokens)
	}

	// Streamed without echo: the same generated tokens and log-probabilities.
	resp := e.post(t, "/v1/completions", strings.Replace(body, `"echo":true`, `"stream":true`, 1))
	payloads, _ := sseEvents(t, resp.Body)
	resp.Body.Close()
	var streamed lps
	text := ""
	for _, pl := range payloads {
		var c struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs *lps   `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(pl), &c); err != nil {
			t.Fatal(err)
		}
		for _, x := range c.Choices {
			text += x.Text
			if x.Logprobs != nil {
				streamed.Tokens = append(streamed.Tokens, x.Logprobs.Tokens...)
				streamed.TextOffset = append(streamed.TextOffset, x.Logprobs.TextOffset...)
			}
		}
	}
	genTokens := lp.Tokens[len(e.m.Tok.Encode(prompt, true)):]
	if text != want || !slices.Equal(streamed.Tokens, genTokens) {
		t.Errorf("streamed text %q tokens %q, want %q and %q", text, streamed.Tokens, want, genTokens)
	}
}

// A token's own entry in top_logprobs is keyed by its text as tokens gives it,
// also where that differs from its piece (the first token after BOS loses its
// leading space): it is listed once.
func TestTopLogprobsOwnKey(t *testing.T) {
	e := newEnv(t, envConfig{})
	var out struct {
		Choices []struct {
			Logprobs struct {
				Tokens      []string             `json:"tokens"`
				TopLogprobs []map[string]float64 `json:"top_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	decode(t, e.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":1,"temperature":0,"logprobs":5,"echo":true}`), &out)
	lp := out.Choices[0].Logprobs
	if len(lp.Tokens) < 3 || lp.Tokens[1] != "Once" {
		t.Fatalf("tokens %q, want the second to be \"Once\"", lp.Tokens)
	}
	for p := 1; p < len(lp.Tokens); p++ {
		own := lp.Tokens[p]
		if _, ok := lp.TopLogprobs[p][own]; !ok {
			t.Errorf("token %d %q: not in its top_logprobs %v", p, own, lp.TopLogprobs[p])
		}
		if _, twice := lp.TopLogprobs[p][" "+own]; twice && p == 1 {
			t.Errorf("token %d %q: listed again as its piece: %v", p, own, lp.TopLogprobs[p])
		}
	}
}
