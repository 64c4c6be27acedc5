package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// JSON mode: every answer parses as one JSON object, whatever the seed, sampling
// temperature and max_tokens (a budget too short to finish naturally ends the
// object early), for chat and completions, whole and streamed.
func TestJSONObjectAlwaysParses(t *testing.T) {
	e := newEnv(t, envConfig{})
	for i := range 24 {
		maxTokens := []int{3, 8, 30, 250}[i%4]
		var body, path string
		if i%2 == 0 {
			path = "/v1/chat/completions"
			body = fmt.Sprintf(`{"messages":[{"role":"user","content":"Tell me about a cat as JSON."}],"response_format":{"type":"json_object"},"max_tokens":%d,"temperature":%v,"seed":%d}`, maxTokens, 0.5+float64(i%3)*0.5, i)
		} else {
			path = "/v1/completions"
			body = fmt.Sprintf(`{"prompt":"Once upon a time","response_format":{"type":"json_object"},"max_tokens":%d,"temperature":1.5,"seed":%d}`, maxTokens, i)
		}
		stream := i%3 == 0
		if stream {
			body = strings.TrimSuffix(body, "}") + `,"stream":true}`
		}
		resp := e.post(t, path, body)
		var text, finish string
		if stream {
			payloads, done := sseEvents(t, resp.Body)
			resp.Body.Close()
			if !done {
				t.Fatalf("%s: stream did not end with [DONE]", body)
			}
			for _, p := range payloads {
				var c struct {
					Choices []struct {
						Text  string `json:"text"`
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
				}
				if err := json.Unmarshal([]byte(p), &c); err != nil {
					t.Fatal(err)
				}
				for _, ch := range c.Choices {
					text += ch.Text + ch.Delta.Content
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
				}
			}
		} else {
			var out struct {
				Choices []struct {
					Text    string `json:"text"`
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
			}
			decode(t, resp, &out)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d", body, resp.StatusCode)
			}
			text = out.Choices[0].Text + out.Choices[0].Message.Content
			finish = out.Choices[0].FinishReason
		}
		var obj map[string]any
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || dec.More() {
			t.Errorf("%s: %q is not one JSON object: %v", body, text, err)
		}
		if finish != "length" {
			t.Errorf("finish %q", finish)
		}
		t.Logf("max %d %s: %q", maxTokens, finish, text)
	}
	// Biased towards '}', the object closes at once and the answer ends with EOS.
	var closer int32 = -1
	for id := range int32(e.m.Vocab) {
		if e.m.Tok.Piece(id) == "}" {
			closer = id
		}
	}
	resp0 := e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":"a","response_format":{"type":"json_object"},"max_tokens":50,"temperature":0,"logit_bias":{"%d":100}}`, closer))
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	decode(t, resp0, &out)
	if strings.TrimSpace(out.Choices[0].Text) != "{}" || out.Choices[0].FinishReason != "stop" {
		t.Errorf("biased to '}': %q %s, want {} and stop", out.Choices[0].Text, out.Choices[0].FinishReason)
	}
	resp := e.post(t, "/v1/completions", `{"prompt":"a","response_format":{"type":"json_object"},"stop":["}"]}`)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("json_object with stop: status %d, want 400", resp.StatusCode)
	}
}

// JSON schema: every answer is an object with the schema's properties, in order,
// of the schema's types, whatever the sampling and the budget.
func TestJSONSchemaAnswers(t *testing.T) {
	e := newEnv(t, envConfig{})
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"pet":{"enum":["cat","dog"]},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},"required":["name","age","pet","tags"],"additionalProperties":false}`
	for i := range 8 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Describe a person."}],"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":%s,"strict":true}},"max_tokens":%d,"temperature":1,"seed":%d}`,
			schema, []int{41, 60, 120, 400}[i%4], i)
		resp := e.post(t, "/v1/chat/completions", body)
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		decode(t, resp, &out)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		text := out.Choices[0].Message.Content
		var v struct {
			Name *string  `json:"name"`
			Age  *int64   `json:"age"`
			Pet  *string  `json:"pet"`
			Tags []string `json:"tags"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.Name == nil || v.Age == nil || v.Pet == nil || (*v.Pet != "cat" && *v.Pet != "dog") || v.Tags == nil || len(v.Tags) > 2 {
			t.Errorf("%q (%s) does not match the schema: %v", text, out.Choices[0].FinishReason, err)
		}
		if k := strings.Index(text, `"name"`); k < 0 || k > strings.Index(text, `"age"`) {
			t.Errorf("%q: properties out of order", text)
		}
		t.Logf("%s: %q", out.Choices[0].FinishReason, text)
	}
}
