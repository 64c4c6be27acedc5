package server

import (
	"net/http"
	"testing"

	"kvq/model"
)

// Request parsing never panics, and any body it accepts is a request the engine
// can take: a prompt within the context, room for max_tokens, n in range.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"stop":["a","b"],"n":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[1,2,3],"seed":-4,"top_p":0.5}`,
		`{"prompt":["x"],"stop":"y","logprobs":null}`,
		`{"prompt":["x","yz"],"n":3}`,
		`{"prompt":[[1,5],[1,7,9]],"max_tokens":2}`,
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":3}`,
		`{"messages":[{"role":"assistant","content":null}]}`,
		`{"model":"default","prompt":"a","max_tokens":511}`,
		`[]`, `{`, `null`, `{"prompt":1e400}`,
	} {
		f.Add(seed)
	}
	m, err := model.LoadDefault()
	if err != nil {
		f.Fatal(err)
	}
	s := New(Options{})
	names := []string{"stories260K", "default"}
	f.Fuzz(func(t *testing.T, body string) {
		for _, chat := range []bool{false, true} {
			j := &job{chat: chat}
			var err *apiError
			if chat {
				err = s.parseChat([]byte(body), m, names, j)
			} else {
				err = s.parseCompletion([]byte(body), m, names, j)
			}
			if err != nil {
				if err.status != http.StatusBadRequest || err.message == "" {
					t.Fatalf("body %q: error %v", body, err)
				}
				continue
			}
			p := j.p
			if len(p.prompts) == 0 || len(p.prompts) > maxPrompts || p.n < 1 || p.n > DefaultMaxN || len(p.prompts)*p.n > maxChoices || p.maxTokens < 1 {
				t.Fatalf("body %q accepted as %d prompts, max_tokens %d, n %d", body, len(p.prompts), p.maxTokens, p.n)
			}
			for _, pr := range p.prompts {
				if len(pr) == 0 || len(pr)+p.maxTokens > m.Ctx {
					t.Fatalf("body %q accepted with a prompt of %d tokens and max_tokens %d", body, len(pr), p.maxTokens)
				}
				for _, id := range pr {
					if id < 0 || int(id) >= m.Vocab {
						t.Fatalf("body %q: token %d out of range", body, id)
					}
				}
			}
			for _, st := range p.stop {
				if st == "" {
					t.Fatalf("body %q: empty stop string accepted", body)
				}
			}
		}
	})
}
