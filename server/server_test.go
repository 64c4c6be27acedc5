package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

// testEnv is a server over the built-in model on a real 127.0.0.1 socket.
type testEnv struct {
	s  *Server
	ts *httptest.Server
	m  *model.Model
}

type envConfig struct {
	opts   Options
	spec   string // cache spec; "" means f32
	budget int64  // cache byte budget; 0 unlimited
	engine engine.Config
	model  *model.Model // nil: the built-in model
}

func newEnv(t testing.TB, ec envConfig) *testEnv {
	t.Helper()
	m := ec.model
	if m == nil {
		var err error
		if m, err = model.LoadDefault(); err != nil {
			t.Fatalf("LoadDefault: %v", err)
		}
	}
	if ec.spec == "" {
		ec.spec = "f32"
	}
	cfg, err := m.CacheConfig(ec.spec, "")
	if err != nil {
		t.Fatalf("CacheConfig(%q): %v", ec.spec, err)
	}
	cfg.BudgetBytes = ec.budget
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatalf("kv.New: %v", err)
	}
	s := New(ec.opts)
	if err := s.Start(m, c, ec.engine); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close) // runs after Shutdown (cleanups run last-registered first)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &testEnv{s: s, ts: ts, m: m}
}

// greedy returns the text model.Generate produces from prompt with an f32 cache,
// on its own model instance.
func greedy(t testing.TB, prompt []int32, maxNew int) string {
	t.Helper()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatalf("LoadDefault: %v", err)
	}
	cfg, err := m.CacheConfig("f32", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := c.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	dec := m.Tok.NewStreamDecoder()
	var b strings.Builder
	if _, err := m.Generate(c, seq, prompt, maxNew, model.NewSampler(model.SamplerConfig{}), func(tk int32) bool {
		b.WriteString(dec.Write(tk))
		return true
	}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	b.WriteString(dec.Flush())
	return b.String()
}

// post sends a JSON body and returns the response.
func (e *testEnv) post(t testing.TB, path, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// decode reads a JSON response body into v.
func decode(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
}

// sseEvents reads a whole SSE body: the JSON payloads before [DONE], and whether
// [DONE] came.
func sseEvents(t testing.TB, r io.Reader) (payloads []string, done bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE line %q lacks the data: prefix", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if done {
			t.Fatalf("SSE data after [DONE]: %q", data)
		}
		payloads = append(payloads, data)
	}
	return payloads, done
}

// metric scrapes /metrics and returns the value of the sample named exactly name
// (labels included, e.g. `kvq_requests_total{status="200"}`), or -1 if absent.
func (e *testEnv) metric(t testing.TB, name string) float64 {
	t.Helper()
	resp, err := e.ts.Client().Get(e.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	return -1
}

// waitMetric polls until metric name equals want, or fails after a few seconds.
func (e *testEnv) waitMetric(t testing.TB, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := e.metric(t, name)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type completionOut struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int             `json:"index"`
		Text         string          `json:"text"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
		Message      *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func TestCompletionWholeMatchesGenerate(t *testing.T) {
	e := newEnv(t, envConfig{})
	prompt := "Once upon a time"
	want := greedy(t, e.m.Tok.Encode(prompt, true), 40)
	resp := e.post(t, "/v1/completions", `{"model":"stories260K","prompt":"Once upon a time","max_tokens":40,"temperature":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var out completionOut
	decode(t, resp, &out)
	if id := resp.Header.Get("X-Request-Id"); id != out.ID {
		t.Errorf("X-Request-Id %q, body id %q", id, out.ID)
	}
	if out.Object != "text_completion" || !strings.HasPrefix(out.ID, "cmpl-") || out.Model != "stories260K" || out.Created == 0 {
		t.Errorf("envelope %+v", out)
	}
	if len(out.Choices) != 1 || out.Choices[0].Text != want || string(out.Choices[0].Logprobs) != "null" {
		t.Fatalf("choices %+v, want text %q", out.Choices, want)
	}
	if f := out.Choices[0].FinishReason; f == nil || *f != "length" {
		t.Errorf("finish_reason %v, want length", f)
	}
	u := out.Usage
	if u == nil || u.PromptTokens != 5 || u.CompletionTokens != 40 || u.TotalTokens != 45 {
		t.Errorf("usage %+v", u)
	}
}

func TestChatWholeAndStreamAgree(t *testing.T) {
	e := newEnv(t, envConfig{})
	body := `{"model":"default","messages":[{"role":"system","content":"Tell a story."},{"role":"user","content":[{"type":"text","text":"Once upon"},{"type":"text","text":" a time"}]}],"max_tokens":30,"temperature":0%s}`
	want := greedy(t, e.m.Tok.Encode("system: Tell a story.\nuser: Once upon a time\nassistant:", true), 30)

	var whole completionOut
	resp := e.post(t, "/v1/chat/completions", fmt.Sprintf(body, ""))
	decode(t, resp, &whole)
	if resp.StatusCode != 200 || whole.Object != "chat.completion" || len(whole.Choices) != 1 || whole.Choices[0].Message == nil {
		t.Fatalf("status %d, body %+v", resp.StatusCode, whole)
	}
	if msg := whole.Choices[0].Message; msg.Role != "assistant" || msg.Content != want {
		t.Fatalf("message %+v, want content %q", msg, want)
	}

	resp = e.post(t, "/v1/chat/completions", fmt.Sprintf(body, `,"stream":true,"stream_options":{"include_usage":true}`))
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	payloads, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	if !done {
		t.Fatal("stream did not end with [DONE]")
	}
	var text strings.Builder
	var finish string
	for i, p := range payloads {
		var c completionOut
		if err := json.Unmarshal([]byte(p), &c); err != nil {
			t.Fatalf("chunk %d %q: %v", i, p, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d object %q", i, c.Object)
		}
		last := i == len(payloads)-1
		if last {
			if len(c.Choices) != 0 || c.Usage == nil || c.Usage.CompletionTokens != 30 || c.Usage.PromptTokens != whole.Usage.PromptTokens {
				t.Fatalf("final chunk %s", p)
			}
			continue
		}
		if !strings.Contains(p, `"usage":null`) {
			t.Errorf("chunk %d lacks usage:null with include_usage: %s", i, p)
		}
		if len(c.Choices) != 1 || c.Choices[0].Delta == nil {
			t.Fatalf("chunk %d: %s", i, p)
		}
		if i == 0 && c.Choices[0].Delta.Role != "assistant" {
			t.Errorf("first chunk has no assistant role: %s", p)
		}
		if d := c.Choices[0].Delta.Content; d != nil {
			text.WriteString(*d)
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if text.String() != want || finish != "length" {
		t.Fatalf("streamed %q (finish %q), want %q (length)", text.String(), finish, want)
	}
}

func TestStopAndN(t *testing.T) {
	e := newEnv(t, envConfig{})
	full := greedy(t, e.m.Tok.Encode("Once upon a time", true), 40)
	// A stop string from the middle of the greedy text: the answer is cut before it.
	i := strings.Index(full, "Lily")
	if i < 0 {
		t.Fatalf("greedy text %q lacks the stop string", full)
	}
	for _, stop := range []string{`"Lily"`, `["zzz","Lily"]`} {
		resp := e.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":40,"temperature":0,"n":3,"stop":`+stop+`}`)
		var out completionOut
		decode(t, resp, &out)
		if resp.StatusCode != 200 || len(out.Choices) != 3 {
			t.Fatalf("stop %s: status %d, %+v", stop, resp.StatusCode, out)
		}
		for j, c := range out.Choices {
			if c.Index != j || c.Text != full[:i] || c.FinishReason == nil || *c.FinishReason != "stop" {
				t.Errorf("stop %s: choice %d = %q (index %d, finish %v), want %q stop", stop, j, c.Text, c.Index, c.FinishReason, full[:i])
			}
		}
	}
	// Sampled choices with a fixed seed: reproducible per request.
	body := `{"prompt":"Once upon a time","max_tokens":24,"temperature":1,"top_p":0.9,"seed":7,"n":2}`
	var a, b completionOut
	decode(t, e.post(t, "/v1/completions", body), &a)
	decode(t, e.post(t, "/v1/completions", body), &b)
	if len(a.Choices) != 2 || len(b.Choices) != 2 {
		t.Fatalf("choices %d and %d", len(a.Choices), len(b.Choices))
	}
	for j := range a.Choices {
		if a.Choices[j].Text != b.Choices[j].Text {
			t.Errorf("seeded choice %d differs: %q vs %q", j, a.Choices[j].Text, b.Choices[j].Text)
		}
	}
	if a.Choices[0].Text == a.Choices[1].Text {
		t.Errorf("the two sampled choices are identical: %q", a.Choices[0].Text)
	}
	// top_p 0 keeps the most likely token alone: greedy, whatever the temperature.
	var g completionOut
	decode(t, e.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":40,"temperature":1.5,"top_p":0}`), &g)
	if len(g.Choices) != 1 || g.Choices[0].Text != full {
		t.Errorf("top_p 0: %+v, want %q", g.Choices, full)
	}
}

// A prompt array is answered with n choices per prompt, numbered prompt by prompt,
// each the greedy text of its own prompt, streamed or whole.
func TestPromptArray(t *testing.T) {
	e := newEnv(t, envConfig{})
	prompts := []string{"Once upon a time", "The little dog"}
	ids := e.m.Tok.Encode("Sam had a red ball", true)
	want := []string{greedy(t, e.m.Tok.Encode(prompts[0], true), 20), greedy(t, e.m.Tok.Encode(prompts[1], true), 20), greedy(t, ids, 20)}
	idsJSON, _ := json.Marshal(ids)
	for _, tc := range []struct {
		name, prompt string
		want         []string
	}{
		{"strings", `["Once upon a time","The little dog"]`, want[:2]},
		{"token arrays", `[` + string(idsJSON) + `,` + string(idsJSON) + `]`, []string{want[2], want[2]}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tc.name, stream), func(t *testing.T) {
				resp := e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":%s,"max_tokens":20,"temperature":0,"n":2,"stream":%v}`, tc.prompt, stream))
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				texts, finishes := make([]string, 4), make([]string, 4)
				var chunks []completionOut
				if stream {
					payloads, _ := sseEvents(t, resp.Body)
					resp.Body.Close()
					for _, p := range payloads {
						var c completionOut
						if err := json.Unmarshal([]byte(p), &c); err != nil {
							t.Fatal(err)
						}
						chunks = append(chunks, c)
					}
				} else {
					var c completionOut
					decode(t, resp, &c)
					if len(c.Choices) != 4 || c.Usage == nil || c.Usage.CompletionTokens != 80 {
						t.Fatalf("%d choices, usage %+v", len(c.Choices), c.Usage)
					}
					chunks = append(chunks, c)
				}
				for _, c := range chunks {
					for _, x := range c.Choices {
						texts[x.Index] += x.Text
						if x.FinishReason != nil {
							finishes[x.Index] = *x.FinishReason
						}
					}
				}
				for i := range 4 {
					if texts[i] != tc.want[i/2] || finishes[i] != "length" {
						t.Errorf("choice %d: %q (%s), want %q", i, texts[i], finishes[i], tc.want[i/2])
					}
				}
			})
		}
	}
	e.waitMetric(t, "kvq_kv_blocks_used", 0)
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{MaxBodyBytes: 4096}})
	long := strings.Repeat("Once upon a time ", 200) // > 512 tokens
	for _, tc := range []struct {
		name, path, body string
		status           int
		param            string // "" expects null
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "a",`, 400, ""},
		{"not an object", "/v1/completions", `[1,2]`, 400, ""},
		{"empty body", "/v1/completions", ``, 400, ""},
		{"trailing data", "/v1/completions", `{"prompt":"a"} {}`, 400, ""},
		{"max_tokens wrong type", "/v1/completions", `{"prompt":"a","max_tokens":"ten"}`, 400, "max_tokens"},
		{"temperature wrong type", "/v1/completions", `{"prompt":"a","temperature":"hot"}`, 400, "temperature"},
		{"stream wrong type", "/v1/completions", `{"prompt":"a","stream":"yes"}`, 400, "stream"},
		{"unknown model", "/v1/completions", `{"model":"gpt-4","prompt":"a"}`, 400, "model"},
		{"max_tokens zero", "/v1/completions", `{"prompt":"a","max_tokens":0}`, 400, "max_tokens"},
		{"max_tokens negative", "/v1/completions", `{"prompt":"a","max_tokens":-5}`, 400, "max_tokens"},
		{"max_tokens past context", "/v1/completions", `{"prompt":"a","max_tokens":600}`, 400, "max_tokens"},
		{"prompt too long", "/v1/completions", `{"prompt":"` + long[:3000] + `","max_tokens":1}`, 400, "prompt"},
		{"prompt missing", "/v1/completions", `{"max_tokens":4}`, 400, "prompt"},
		{"prompt empty", "/v1/completions", `{"prompt":""}`, 400, "prompt"},
		{"prompt wrong type", "/v1/completions", `{"prompt":{"a":1}}`, 400, "prompt"},
		{"prompt token out of range", "/v1/completions", `{"prompt":[1,2,99999]}`, 400, "prompt"},
		{"prompt empty array", "/v1/completions", `{"prompt":[]}`, 400, "prompt"},
		{"prompt array with an empty string", "/v1/completions", `{"prompt":["a",""]}`, 400, "prompt"},
		{"prompt array with an empty id array", "/v1/completions", `{"prompt":[[1],[]]}`, 400, "prompt"},
		{"prompt array mixing types", "/v1/completions", `{"prompt":["a",1]}`, 400, "prompt"},
		{"too many prompts", "/v1/completions", `{"prompt":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 33), ",") + `]}`, 400, "prompt"},
		{"too many choices", "/v1/completions", `{"prompt":["a","b","c","d","e"],"n":16}`, 400, "n"},
		{"n zero", "/v1/completions", `{"prompt":"a","n":0}`, 400, "n"},
		{"n too large", "/v1/completions", `{"prompt":"a","n":1000}`, 400, "n"},
		{"temperature out of range", "/v1/completions", `{"prompt":"a","temperature":3}`, 400, "temperature"},
		{"top_p out of range", "/v1/completions", `{"prompt":"a","top_p":1.5}`, 400, "top_p"},
		{"top_p negative", "/v1/completions", `{"prompt":"a","top_p":-0.1}`, 400, "top_p"},
		{"stop wrong type", "/v1/completions", `{"prompt":"a","stop":5}`, 400, "stop"},
		{"too many stops", "/v1/completions", `{"prompt":"a","stop":["a","b","c","d","e"]}`, 400, "stop"},
		{"stream_options without stream", "/v1/completions", `{"prompt":"a","stream_options":{"include_usage":true}}`, 400, "stream_options"},
		{"logprobs too many", "/v1/completions", `{"prompt":"a","logprobs":21}`, 400, "logprobs"},
		{"logprobs wrong type", "/v1/completions", `{"prompt":"a","logprobs":"x"}`, 400, "logprobs"},
		{"echo logprobs stream", "/v1/completions", `{"prompt":"a","echo":true,"logprobs":1,"stream":true}`, 400, "echo"},
		{"unknown field", "/v1/completions", `{"prompt":"a","frobnicate":1}`, 400, "frobnicate"},
		{"unknown field after a known one", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"temperature":0,"guided_regex":"x"}`, 400, "guided_regex"},
		{"best_of", "/v1/completions", `{"prompt":"a","best_of":2}`, 400, "best_of"},
		{"suffix", "/v1/completions", `{"prompt":"a","suffix":"z"}`, 400, "suffix"},
		{"chat field on completions", "/v1/completions", `{"prompt":"a","messages":[]}`, 400, "messages"},
		{"tools", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "tools"},
		{"tool_choice", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"tool_choice":"auto"}`, 400, "tool_choice"},
		{"response_format max_tokens too small", "/v1/completions", `{"prompt":"a","max_tokens":1,"response_format":{"type":"json_object"}}`, 400, "max_tokens"},
		{"response_format unknown key", "/v1/completions", `{"prompt":"a","response_format":{"type":"json_object","x":1}}`, 400, "response_format"},
		{"response_format schema missing", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_schema","json_schema":{}}}`, 400, "response_format.json_schema.schema"},
		{"response_format schema unsupported", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}}}}`, 400, "response_format.json_schema.schema"},
		{"response_format unknown", "/v1/completions", `{"prompt":"a","response_format":{"type":"xml"}}`, 400, "response_format"},
		{"presence_penalty out of range", "/v1/completions", `{"prompt":"a","presence_penalty":2.5}`, 400, "presence_penalty"},
		{"frequency_penalty out of range", "/v1/completions", `{"prompt":"a","frequency_penalty":-3}`, 400, "frequency_penalty"},
		{"top_k negative", "/v1/completions", `{"prompt":"a","top_k":-2}`, 400, "top_k"},
		{"min_p out of range", "/v1/completions", `{"prompt":"a","min_p":1.5}`, 400, "min_p"},
		{"logit_bias bad token", "/v1/completions", `{"prompt":"a","logit_bias":{"99999":1}}`, 400, "logit_bias"},
		{"logit_bias not an id", "/v1/completions", `{"prompt":"a","logit_bias":{"x":1}}`, 400, "logit_bias"},
		{"logit_bias out of range", "/v1/completions", `{"prompt":"a","logit_bias":{"5":101}}`, 400, "logit_bias"},
		{"chat message name", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a","name":"bob"}]}`, 400, "messages[0].name"},
		{"chat message tool_calls", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[]}]}`, 400, "messages[1].tool_calls"},
		{"stream_options unknown", "/v1/completions", `{"prompt":"a","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, 400, "stream_options.continuous_usage_stats"},
		{"chat top_logprobs without logprobs", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"top_logprobs":2}`, 400, "top_logprobs"},
		{"chat logprobs wrong type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"logprobs":3}`, 400, "logprobs"},
		{"oversized body", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 5000) + `"}`, 413, ""},
		{"chat empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages"},
		{"chat messages missing", "/v1/chat/completions", `{"model":"default"}`, 400, "messages"},
		{"chat messages wrong type", "/v1/chat/completions", `{"messages":"hi"}`, 400, "messages"},
		{"chat role missing", "/v1/chat/completions", `{"messages":[{"content":"hi"}]}`, 400, "messages[0].role"},
		{"chat role unknown", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"wizard","content":"hi"}]}`, 400, "messages[1].role"},
		{"chat content wrong type", "/v1/chat/completions", `{"messages":[{"role":"user","content":7}]}`, 400, "messages[0].content"},
		{"chat image part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0]"},
		{"chat prompt too long", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long[:3000] + `"}]}`, 400, "messages"},
		{"chat max_completion_tokens past context", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":1000}`, 400, "max_completion_tokens"},
		{"unknown route", "/v1/embeddings", `{}`, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.post(t, tc.path, tc.body)
			var out struct {
				Error *struct {
					Message *string `json:"message"`
					Type    *string `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			decode(t, resp, &out)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if out.Error == nil || out.Error.Message == nil || *out.Error.Message == "" || out.Error.Type == nil || out.Error.Code != nil {
				t.Fatalf("error body %+v", out.Error)
			}
			if tc.status < 500 && *out.Error.Type != "invalid_request_error" {
				t.Errorf("type %q", *out.Error.Type)
			}
			switch {
			case tc.param == "" && out.Error.Param != nil:
				t.Errorf("param %q, want null", *out.Error.Param)
			case tc.param != "" && (out.Error.Param == nil || *out.Error.Param != tc.param):
				t.Errorf("param %v, want %q (message %q)", out.Error.Param, tc.param, *out.Error.Message)
			}
		})
	}
	if got := e.metric(t, `kvq_requests_total{status="400"}`); got < 30 {
		t.Errorf("kvq_requests_total{status=\"400\"} = %v", got)
	}
	if got := e.metric(t, "kvq_kv_blocks_used"); got != 0 {
		t.Errorf("blocks used after bad requests: %v", got)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{APIKey: "s3cret"}})
	body := `{"prompt":"Once","max_tokens":2}`
	for _, tc := range []struct {
		name, path, method, header string
		status                     int
	}{
		{"no header", "/v1/completions", "POST", "", 401},
		{"wrong key", "/v1/completions", "POST", "Bearer nope", 401},
		{"not bearer", "/v1/completions", "POST", "Basic s3cret", 401},
		{"key prefix", "/v1/completions", "POST", "Bearer s3cre", 401},
		{"right key", "/v1/completions", "POST", "Bearer s3cret", 200},
		{"lower-case scheme", "/v1/completions", "POST", "bearer s3cret", 200},
		{"upper-case scheme", "/v1/completions", "POST", "BEARER s3cret", 200},
		{"scheme alone", "/v1/completions", "POST", "Bearer", 401},
		{"chat without key", "/v1/chat/completions", "POST", "", 401},
		{"models without key", "/v1/models", "GET", "", 401},
		{"models with key", "/v1/models", "GET", "Bearer s3cret", 200},
		{"health is open", "/health", "GET", "", 200},
		{"metrics are open", "/metrics", "GET", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader
			if tc.method == "POST" {
				rd = strings.NewReader(body)
			}
			req, _ := http.NewRequest(tc.method, e.ts.URL+tc.path, rd)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == 401 && (!strings.Contains(string(b), `"authentication_error"`) || resp.Header.Get("WWW-Authenticate") == "") {
				t.Errorf("401 body %s, headers %v", b, resp.Header)
			}
		})
	}
}

func TestModelsAndHealth(t *testing.T) {
	s := New(Options{ModelName: "tiny"})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	get := func(path string) (int, string) {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/health"); code != 503 {
		t.Errorf("health before Start: %d, want 503", code)
	}
	resp, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("completion before Start: %d, want 503", resp.StatusCode)
	}
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := m.CacheConfig("q8", "")
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(m, c, engine.Config{}); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/health"); code != 200 {
		t.Errorf("health after Start: %d, want 200", code)
	}
	code, body := get("/v1/models")
	var list modelList
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 {
		t.Fatalf("models: %d %q %v", code, body, err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "tiny" || list.Data[0].Object != "model" {
		t.Errorf("models %+v", list)
	}
	for path, want := range map[string]int{"/v1/models/tiny": 200, "/v1/models/default": 200, "/v1/models/gpt-4": 404} {
		code, body := get(path)
		var mo modelObject
		if code != want || code == 200 && (json.Unmarshal([]byte(body), &mo) != nil || mo.ID != "tiny") {
			t.Errorf("GET %s: %d %s, want %d", path, code, body, want)
		}
	}
	for _, name := range []string{"tiny", "default", "stories260K"} {
		resp, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"`+name+`","prompt":"a","max_tokens":2}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("model %q: status %d", name, resp.StatusCode)
		}
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/health"); code != 503 {
		t.Errorf("health after Shutdown: %d, want 503", code)
	}
}

// A body without a declared length is cut off at the limit while it is read.
func TestOversizedChunkedBody(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{MaxBodyBytes: 1024}})
	for _, tc := range []struct {
		name   string
		size   int
		status int
	}{
		{"under the limit", 900, 200},
		{"over the limit", 1 << 20, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pad := strings.Repeat(" ", tc.size)
			body := io.MultiReader(strings.NewReader(`{"prompt":"Once",`+pad), strings.NewReader(`"max_tokens":2}`))
			req, err := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/completions", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if req.ContentLength != 0 || resp.StatusCode != tc.status {
				t.Fatalf("content length %d, status %d (want %d): %s", req.ContentLength, resp.StatusCode, tc.status, b)
			}
			if tc.status == 413 && !strings.Contains(string(b), "limit of 1024 bytes") {
				t.Errorf("body %s", b)
			}
		})
	}
}

// A prompt sent again is served partly from the prefix cache: usage reports the
// cached tokens, the text is unchanged, and the metrics show the hit and the blocks
// kept for reuse.
func TestPrefixCacheHit(t *testing.T) {
	// Every kind of cache shares: plain codes, KIVI windows, sinks.
	for _, spec := range []string{"f16", "kivi4/kivi2", "q4:sinks=4"} {
		t.Run(spec, func(t *testing.T) { testPrefixCacheHit(t, spec) })
	}
}

func testPrefixCacheHit(t *testing.T, spec string) {
	e := newEnv(t, envConfig{spec: spec, budget: 8 << 20})
	prompt := strings.Repeat("Lily and Tom went to the park. ", 24)
	n := len(e.m.Tok.Encode(prompt, true))
	B := max(kv.DefaultBlockTokens, kv.MustParseSpec(spec).K.G)
	if n < 2*B {
		t.Fatalf("prompt of %d tokens is shorter than two blocks of %d", n, B)
	}
	body := `{"prompt":"` + prompt + `","max_tokens":24,"temperature":0}`
	var first, second completionOut
	decode(t, e.post(t, "/v1/completions", body), &first)
	decode(t, e.post(t, "/v1/completions", body), &second)
	if len(first.Choices) != 1 || len(second.Choices) != 1 || first.Usage == nil || second.Usage == nil {
		t.Fatalf("responses %+v and %+v", first, second)
	}
	if first.Choices[0].Text != second.Choices[0].Text {
		t.Errorf("texts differ: %q then %q", first.Choices[0].Text, second.Choices[0].Text)
	}
	if c := first.Usage.PromptTokensDetails.CachedTokens; c != 0 {
		t.Errorf("first request: %d cached tokens", c)
	}
	// Whole blocks, at least one token left to compute.
	c := second.Usage.PromptTokensDetails.CachedTokens
	if c < B || c > n-1 || c%B != 0 || second.Usage.PromptTokens != n {
		t.Errorf("second request: %d cached of %d prompt tokens (prompt %d tokens)", c, second.Usage.PromptTokens, n)
	}
	e.waitMetric(t, "kvq_kv_blocks_used", 0)
	if got := e.metric(t, "kvq_kv_blocks_cached"); got < float64(c/B) {
		t.Errorf("kvq_kv_blocks_cached = %v, want ≥ %d", got, c/B)
	}
	if got, want := e.metric(t, "kvq_prefix_hit_rate"), float64(c)/float64(2*n); got != want {
		t.Errorf("kvq_prefix_hit_rate = %v, want %v", got, want)
	}
	if got := e.metric(t, "kvq_prompt_tokens_cached_total"); got != float64(c) {
		t.Errorf("kvq_prompt_tokens_cached_total = %v, want %d", got, c)
	}
}
