package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	"presence_penalty frequency_penalty logit_bias top_k min_p user response_format "

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

// responseFormat reads response_format: absent, {"type":"text"} or
// {"type":"json_object"}; it reports whether JSON mode is asked for.
func responseFormat(raw json.RawMessage) (jsonObject bool, aerr *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return false, nil
	}
	var rf struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil || rf.Type == nil {
		return false, invalid("response_format", "response_format must be an object with a type")
	}
	switch *rf.Type {
	case "text":
		return false, nil
	case "json_object":
		return true, nil
	case "json_schema":
		return false, invalid("response_format", "response_format json_schema is not supported; json_object is")
	}
	return false, invalid("response_format", "response_format type %q is not one of text, json_object", *rf.Type)
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
