package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// /tokenize and /detokenize in llama-server's and vLLM's shapes round-trip text.
func TestTokenize(t *testing.T) {
	e := newEnv(t, envConfig{})
	const text = "Lily and Tom went to the park."
	var tok struct {
		Tokens      []int32 `json:"tokens"`
		Count       int     `json:"count"`
		MaxModelLen int     `json:"max_model_len"`
	}
	resp := e.post(t, "/tokenize", `{"content":"`+text+`"}`)
	decode(t, resp, &tok)
	if want := e.m.Tok.Encode(text, false); resp.StatusCode != 200 || !slices.Equal(tok.Tokens, want) || tok.Count != len(want) || tok.MaxModelLen != e.m.Ctx {
		t.Fatalf("llama-server shape: %d %+v, want tokens %v", resp.StatusCode, tok, want)
	}
	resp = e.post(t, "/tokenize", `{"model":"default","prompt":"`+text+`"}`)
	decode(t, resp, &tok)
	if want := e.m.Tok.Encode(text, true); !slices.Equal(tok.Tokens, want) {
		t.Fatalf("vLLM shape (BOS added by default): %v, want %v", tok.Tokens, want)
	}
	var pieces struct {
		Tokens []struct {
			ID    int32  `json:"id"`
			Piece string `json:"piece"`
		} `json:"tokens"`
	}
	resp = e.post(t, "/tokenize", `{"content":"`+text+`","with_pieces":true}`)
	decode(t, resp, &pieces)
	var joined strings.Builder
	for _, p := range pieces.Tokens {
		joined.WriteString(p.Piece)
	}
	if strings.TrimSpace(joined.String()) != text {
		t.Errorf("pieces join to %q", joined.String())
	}
	var detok struct {
		Content string `json:"content"`
		Prompt  string `json:"prompt"`
	}
	ids, _ := json.Marshal(e.m.Tok.Encode(text, true))
	resp = e.post(t, "/detokenize", `{"tokens":`+string(ids)+`}`)
	decode(t, resp, &detok)
	if detok.Content != text || detok.Prompt != text {
		t.Errorf("detokenize: %+v", detok)
	}
	for _, c := range []struct{ path, body, param string }{
		{"/tokenize", `{}`, "content"},
		{"/tokenize", `{"content":"a","extra":1}`, "extra"},
		{"/detokenize", `{"tokens":[1,999999]}`, "tokens"},
		{"/detokenize", `{}`, "tokens"},
	} {
		var out struct {
			Error struct {
				Param string `json:"param"`
			} `json:"error"`
		}
		resp := e.post(t, c.path, c.body)
		decode(t, resp, &out)
		if resp.StatusCode != 400 || out.Error.Param != c.param {
			t.Errorf("%s %s: %d param %q, want 400 %q", c.path, c.body, resp.StatusCode, out.Error.Param, c.param)
		}
	}
}

// CORS headers only for allowed origins, preflights answered before auth; 404 and
// 405 outside /v1 are JSON; a 400's message is in the request log.
func TestCORSAndErrors(t *testing.T) {
	var logBuf bytes.Buffer
	e := newEnv(t, envConfig{opts: Options{APIKey: "k", AllowedOrigins: []string{"https://app.example"},
		Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))}})
	do := func(method, path, origin string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, e.ts.URL+path, strings.NewReader(`{"prompt":"a","max_tokens":1}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do(http.MethodOptions, "/v1/completions", "https://app.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp = do(http.MethodPost, "/v1/completions", "https://app.example", "Authorization", "Bearer k")
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	resp = do(http.MethodPost, "/v1/completions", "https://evil.example", "Authorization", "Bearer k")
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin got CORS headers: %v", resp.Header)
	}
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{{http.MethodGet, "/nowhere", 404, ""}, {http.MethodPost, "/health", 405, "GET"}, {http.MethodGet, "/tokenize", 405, "POST"}} {
		resp := do(c.method, c.path, "")
		var out struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		decode(t, resp, &out)
		if resp.StatusCode != c.status || out.Error.Message == "" || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.Contains(resp.Header.Get("Allow"), c.allow) {
			t.Errorf("%s %s: %d %q %+v", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), out)
		}
	}
	resp = do(http.MethodPost, "/v1/completions", "", "Authorization", "Bearer k")
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"a","top_k":-7}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	e.s.Shutdown(t.Context())
	if !strings.Contains(logBuf.String(), `"status":400`) || !strings.Contains(logBuf.String(), `"param":"top_k"`) || !strings.Contains(logBuf.String(), "top_k must be") {
		t.Errorf("400 not logged with its message:\n%s", logBuf.String())
	}
}
