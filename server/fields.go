package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"kvq/engine"
	"kvq/tokenizer"
)

// Request fields. Every field a request may hold is listed here; any other field,
// and a listed one the server cannot honour as asked, is answered 400 naming it: a
// request is never served with a field silently ignored.

// fieldSet is the set of top-level fields an endpoint accepts.
type fieldSet map[string]bool

func fields(names string) fieldSet {
	s := fieldSet{}
	for _, n := range strings.Fields(names) {
		s[n] = true
	}
	return s
}

// Fields shared by both endpoints, then each endpoint's own. "user" (an end-user id
// for the provider's abuse monitoring) has nothing to do here and is accepted.
const commonFields = "model max_tokens temperature top_p seed stop n stream stream_options logprobs " +
	"presence_penalty frequency_penalty logit_bias top_k min_p user response_format cache_salt "

var (
	completionFields = fields(commonFields + "prompt echo")
	chatFields       = fields(commonFields + "messages max_completion_tokens top_logprobs " +
		"tools tool_choice parallel_tool_calls")
)

// unsupported explains fields of OpenAI's API that kvq knows but does not implement.
var unsupported = map[string]string{
	"best_of":            "best_of is not supported (ask for n choices and pick)",
	"suffix":             "suffix (insertion) is not supported",
	"functions":          "function calling is not supported",
	"function_call":      "function calling is not supported",
	"audio":              "audio output is not supported",
	"modalities":         "only text output is supported",
	"prediction":         "predicted outputs are not supported",
	"reasoning_effort":   "reasoning_effort is not supported",
	"service_tier":       "service tiers are not supported",
	"store":              "stored completions are not supported",
	"metadata":           "stored completions (metadata) are not supported",
	"web_search_options": "web search is not supported",
}

// checkFields reads body's top-level keys and refuses one that the endpoint does not
// accept (the first in sorted order when there are several). A field whose value is
// null counts as absent. Tools are accepted only when absent, null or empty, and
// tool_choice only as "none". Values are looked at in place, never copied: a body
// of megabytes costs one pass.
func checkFields(body []byte, accept fieldSet) *apiError {
	var top map[string]fieldValue
	if json.Unmarshal(body, &top) != nil {
		return nil // not an object, or malformed: the typed decode reports it
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		v := top[key]
		if v.null {
			continue
		}
		if why, ok := unsupported[key]; ok {
			return invalid(key, "%s", why)
		}
		if !accept[key] {
			return invalid(key, "unknown field %q: this server does not support it", key)
		}
		switch key {
		case "tools":
			if v.small != "[]" {
				return invalid(key, "tools (function calling) are not supported")
			}
		case "tool_choice":
			if v.small != `"none"` {
				return invalid(key, "tool_choice other than \"none\" is not supported (no tools)")
			}
		}
	}
	return nil
}

// fieldValue notes what checkFields needs of a value: whether it is null, and its
// text when it is short.
type fieldValue struct {
	null  bool
	small string // the value's JSON when at most 16 bytes
}

func (f *fieldValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	f.null = string(b) == "null"
	if len(b) <= 16 {
		f.small = string(b)
	}
	return nil
}

// responseFormat reads response_format: absent, {"type":"text"},
// {"type":"json_object"} or {"type":"json_schema","json_schema":{"schema":{...}}};
// it returns the constraint factory for tok (nil for text) and the fewest tokens
// its answers may need.
func responseFormat(raw json.RawMessage, tok *tokenizer.Tokenizer) (func() engine.Constraint, int, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, 0, nil
	}
	var rf struct {
		Type       *string `json:"type"`
		JSONSchema *struct {
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil || rf.Type == nil {
		return nil, 0, invalid("response_format", "response_format must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", \"json_schema\": {\"name\", \"schema\", \"strict\"}}")
	}
	switch *rf.Type {
	case "text":
		return nil, 0, nil
	case "json_object":
		f, n, err := jsonConstraint(tok)
		if err != nil {
			return nil, 0, invalid("response_format", "json_object is not available with this model's vocabulary: %v", err)
		}
		return f, n, nil
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return nil, 0, invalid("response_format.json_schema.schema", "response_format json_schema needs json_schema.schema")
		}
		f, n, err := schemaConstraint(tok, rf.JSONSchema.Schema)
		if err != nil {
			return nil, 0, invalid("response_format.json_schema.schema", "%v", err)
		}
		return f, n, nil
	}
	return nil, 0, invalid("response_format", "response_format type %q is not one of text, json_object, json_schema", *rf.Type)
}

// parseLogitBias reads logit_bias: token id (as a string) → bias in [−100, 100].
func parseLogitBias(m map[string]float64, vocab int) (map[int32]float32, *apiError) {
	if len(m) == 0 {
		return nil, nil
	}
	if len(m) > maxLogitBias {
		return nil, invalid("logit_bias", "logit_bias holds %d tokens; at most %d are allowed", len(m), maxLogitBias)
	}
	out := make(map[int32]float32, len(m))
	for k, b := range m {
		var id int64
		if _, err := fmt.Sscan(k, &id); err != nil || fmt.Sprint(id) != k || id < 0 || id >= int64(vocab) {
			return nil, invalid("logit_bias", "logit_bias key %q is not a token id in [0, %d)", k, vocab)
		}
		if !(b >= -100 && b <= 100) {
			return nil, invalid("logit_bias", "logit_bias of token %s is %v; it must be in [-100, 100]", k, b)
		}
		out[int32(id)] = float32(b)
	}
	return out, nil
}

const maxLogitBias = 1024
