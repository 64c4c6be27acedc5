package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"unicode/utf8"

	"kvq/engine"
	"kvq/model"
	"kvq/tokenizer"
)

// Request bodies. Optional fields are pointers so that absent and null differ from
// zero; fields that take several JSON shapes are kept raw and parsed by hand. Fields
// not listed in fields.go are refused (400 naming them), never ignored.

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
	unknown      []string
}

func (o *streamOptions) UnmarshalJSON(b []byte) error {
	type plain streamOptions
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*o = streamOptions(p)
	o.unknown = unknownKeys(b, "include_usage")
	return nil
}

// commonRequest holds the fields shared by both endpoints.
type commonRequest struct {
	Model         *string         `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Seed          *int64          `json:"seed"`
	Stop          json.RawMessage `json:"stop"`
	N             *int            `json:"n"`
	Stream        *bool           `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Logprobs      json.RawMessage `json:"logprobs"`
	// CacheSalt (vLLM's cache_salt) keeps the request to prefixes cached by requests
	// with the same salt: tenants that do not share a salt cannot learn from
	// cached_tokens whether another's prompt is cached.
	CacheSalt *string `json:"cache_salt"`

	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	TopK             *int               `json:"top_k"`
	MinP             *float64           `json:"min_p"`
	User             *string            `json:"user"`
	ResponseFormat   json.RawMessage    `json:"response_format"`
}

type completionRequest struct {
	commonRequest
	Prompt json.RawMessage `json:"prompt"`
	Echo   *bool           `json:"echo"`
}

type chatRequest struct {
	commonRequest
	Messages            []chatMessage `json:"messages"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	TopLogprobs         *int          `json:"top_logprobs"`
}

type chatMessage struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
	unknown []string        // other keys with non-null values (name, tool_calls, ...): refused
}

func (m *chatMessage) UnmarshalJSON(b []byte) error {
	type plain chatMessage
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = chatMessage(p)
	m.unknown = unknownKeys(b, "role", "content")
	return nil
}

// unknownKeys lists, sorted, the keys of JSON object b other than known whose
// values are not null (nil if b is not an object).
func unknownKeys(b []byte, known ...string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []string
	for k, v := range m {
		if !slices.Contains(known, k) && string(bytes.TrimSpace(v)) != "null" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// genParams is a validated request, ready for the engine.
type genParams struct {
	prompts      [][]int32 // one engine request each; chat has one
	n            int       // choices per prompt
	maxTokens    int
	sampling     model.SamplerConfig
	stop         []string
	stream       bool
	includeUsage bool
	logprobs     bool                     // per-token log-probabilities of the generated tokens
	topLogprobs  int                      // alternatives per token
	echo         []string                 // completions with echo: each prompt's text, put before its choices' text
	constraint   func() engine.Constraint // response_format json_object or json_schema
	maxParam     string                   // the field that set maxTokens (for errors)
	cacheSalt    string                   // cache_salt
}

// decodeBody reads one JSON object from body into v, after checking that every
// field it holds is one the endpoint accepts.
func decodeBody(body []byte, v any, accept fieldSet) *apiError {
	if aerr := checkFields(body, accept); aerr != nil {
		return aerr
	}
	if json.Unmarshal(body, v) == nil {
		return nil
	}
	// Unmarshal's errors do not tell trailing data from a malformed object: decode
	// again, on this slow path only, to say which.
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return invalid("", "the request body is empty; it must be a JSON object")
		}
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return decodeError(err)
		}
		return invalid("", "the request body holds data after its JSON object")
	}
	return nil
}

// limits are the bounds a request is checked against.
type limits struct {
	ctx   int // model context, tokens
	maxN  int // largest n accepted
	vocab int // tokens in the vocabulary
	tok   *tokenizer.Tokenizer
}

// common validates the shared fields; the prompts must already be set in p.
// maxTokens is the requested max_tokens (nil if absent) and maxParam its field name;
// defaultMax is used when it is absent (0: the rest of the context).
func (c *commonRequest) common(p *genParams, lim limits, maxTokens *int, maxParam string, defaultMax int, promptParam string) *apiError {
	if c.CacheSalt != nil {
		if len(*c.CacheSalt) == 0 || len(*c.CacheSalt) > maxCacheSalt {
			return invalid("cache_salt", "cache_salt must be a string of 1 to %d bytes, got %d", maxCacheSalt, len(*c.CacheSalt))
		}
		p.cacheSalt = *c.CacheSalt
	}
	longest := 0
	for _, pr := range p.prompts {
		longest = max(longest, len(pr))
	}
	if longest > lim.ctx-1 {
		return invalid(promptParam, "the prompt is %d tokens; the model's context of %d tokens leaves no room to generate", longest, lim.ctx)
	}
	room := lim.ctx - longest
	p.maxParam = maxParam
	switch {
	case maxTokens == nil:
		p.maxTokens = room
		if defaultMax > 0 {
			p.maxTokens = min(defaultMax, room)
		}
	case *maxTokens <= 0:
		return invalid(maxParam, "%s must be ≥ 1, got %d", maxParam, *maxTokens)
	case *maxTokens > room:
		return invalid(maxParam, "%s is %d, but the prompt's %d tokens leave room for %d in the model's context of %d tokens", maxParam, *maxTokens, longest, room, lim.ctx)
	default:
		p.maxTokens = *maxTokens
	}
	p.sampling = model.SamplerConfig{Temp: 1, TopP: 1}
	if c.Temperature != nil {
		t := *c.Temperature
		if math.IsNaN(t) || t < 0 || t > 2 {
			return invalid("temperature", "temperature must be in [0, 2], got %v", t)
		}
		p.sampling.Temp = float32(t)
	}
	if c.TopP != nil {
		t := *c.TopP
		if math.IsNaN(t) || t < 0 || t > 1 {
			return invalid("top_p", "top_p must be in [0, 1], got %v", t)
		}
		p.sampling.TopP = float32(t)
		if t == 0 {
			p.sampling.Temp = 0 // the smallest nucleus: the most likely token alone
		}
	}
	if c.Seed != nil {
		p.sampling.Seed = uint64(*c.Seed)
	} else {
		p.sampling.Seed = rand.Uint64()
	}
	p.n = 1
	if c.N != nil {
		if *c.N < 1 || *c.N > lim.maxN {
			return invalid("n", "n must be in [1, %d], got %d", lim.maxN, *c.N)
		}
		if len(p.prompts)**c.N > maxChoices {
			return invalid("n", "%d prompts × n = %d would make %d choices; at most %d are allowed", len(p.prompts), *c.N, len(p.prompts)**c.N, maxChoices)
		}
		p.n = *c.N
	}
	stop, err := parseStop(c.Stop)
	if err != nil {
		return err
	}
	p.stop = stop
	p.stream = c.Stream != nil && *c.Stream
	if c.StreamOptions != nil {
		if len(c.StreamOptions.unknown) > 0 {
			k := c.StreamOptions.unknown[0]
			return invalid("stream_options."+k, "stream_options.%s is not supported (only include_usage is)", k)
		}
		if !p.stream {
			return invalid("stream_options", "stream_options is only allowed with stream: true")
		}
		p.includeUsage = c.StreamOptions.IncludeUsage != nil && *c.StreamOptions.IncludeUsage
	}
	return c.options(p, lim)
}

// options validates the sampling options beyond temperature and top_p.
func (c *commonRequest) options(p *genParams, lim limits) *apiError {
	for _, f := range []struct {
		name string
		v    *float64
		dst  *float32
	}{{"presence_penalty", c.PresencePenalty, &p.sampling.PresencePenalty}, {"frequency_penalty", c.FrequencyPenalty, &p.sampling.FrequencyPenalty}} {
		if f.v == nil {
			continue
		}
		if !(*f.v >= -2 && *f.v <= 2) {
			return invalid(f.name, "%s must be in [-2, 2], got %v", f.name, *f.v)
		}
		*f.dst = float32(*f.v)
	}
	if c.TopK != nil {
		if *c.TopK < -1 {
			return invalid("top_k", "top_k must be ≥ 1, or 0 or -1 for all tokens; got %d", *c.TopK)
		}
		p.sampling.TopK = max(0, *c.TopK)
	}
	if c.MinP != nil {
		if !(*c.MinP >= 0 && *c.MinP <= 1) {
			return invalid("min_p", "min_p must be in [0, 1], got %v", *c.MinP)
		}
		p.sampling.MinP = float32(*c.MinP)
	}
	bias, aerr := parseLogitBias(c.LogitBias, lim.vocab)
	if aerr != nil {
		return aerr
	}
	p.sampling.LogitBias = bias
	var minTokens int
	if p.constraint, minTokens, aerr = responseFormat(c.ResponseFormat, lim.tok); aerr != nil {
		return aerr
	}
	if p.constraint != nil && p.maxTokens < minTokens {
		return invalid(p.maxParam, "%s is %d; the response_format's shortest answer may need %d tokens", p.maxParam, p.maxTokens, minTokens)
	}
	if p.constraint != nil && len(p.stop) > 0 {
		return invalid("stop", "stop strings could cut a JSON response short of valid JSON; they cannot be combined with response_format")
	}
	return nil
}

// parseCompletionLogprobs reads a completion's logprobs: absent, null or false for none,
// or the number of alternatives per token (0 to engine.MaxTopLogprobs).
func parseCompletionLogprobs(raw json.RawMessage, p *genParams) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("false")) {
		return nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > engine.MaxTopLogprobs {
		return invalid("logprobs", "logprobs must be an integer in [0, %d] (alternatives per token)", engine.MaxTopLogprobs)
	}
	p.logprobs, p.topLogprobs = true, n
	return nil
}

// parseChatLogprobs reads a chat request's logprobs (a boolean) and top_logprobs.
func parseChatLogprobs(raw json.RawMessage, top *int, p *genParams) *apiError {
	raw = bytes.TrimSpace(raw)
	on := false
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &on); err != nil {
			return invalid("logprobs", "logprobs must be a boolean")
		}
	}
	if top != nil {
		if !on {
			return invalid("top_logprobs", "top_logprobs needs logprobs: true")
		}
		if *top < 0 || *top > engine.MaxTopLogprobs {
			return invalid("top_logprobs", "top_logprobs must be in [0, %d], got %d", engine.MaxTopLogprobs, *top)
		}
		p.topLogprobs = *top
	}
	p.logprobs = on
	return nil
}

// maxCacheSalt bounds cache_salt, in bytes.
const maxCacheSalt = 1024

// maxStops is the largest number of stop strings accepted, as in OpenAI's API.
const maxStops = 4

// parseStop reads stop: absent, null, a string, or an array of up to 4 strings.
func parseStop(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, invalid("stop", "stop must be a string or an array of strings")
	}
	if len(many) > maxStops {
		return nil, invalid("stop", "stop holds %d strings; at most %d are allowed", len(many), maxStops)
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Bounds on prompt arrays: prompts per request and choices (prompts × n) per request.
const (
	maxPrompts = 32
	maxChoices = 64
)

// promptPart is one element of a completion prompt: text to tokenize, or token ids.
type promptPart struct {
	text string
	ids  []int32
}

// parsePrompt reads a completion prompt: a string, an array of strings, an array of
// token ids, or an array of arrays of token ids. Each string or id array is one
// prompt, answered by its own n choices.
func parsePrompt(raw json.RawMessage, vocab int) ([]promptPart, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, invalid("prompt", "prompt is required")
	}
	ids := func(toks []int64, which string) ([]int32, *apiError) {
		if len(toks) == 0 {
			return nil, invalid("prompt", "%s is empty", which)
		}
		out := make([]int32, len(toks))
		for i, t := range toks {
			if t < 0 || t >= int64(vocab) {
				return nil, invalid("prompt", "%s: token %d is %d, outside the vocabulary of %d tokens", which, i, t, vocab)
			}
			out[i] = int32(t)
		}
		return out, nil
	}
	// Each shape is tried on a fresh value: a failed Unmarshal may fill part of it.
	var (
		parts []promptPart
		ss    []string
	)
	var s string
	if plain, ok := plainString(raw); ok {
		ss = []string{plain}
	} else if json.Unmarshal(raw, &s) == nil {
		ss = []string{s}
	} else if err := json.Unmarshal(raw, &ss); err != nil {
		ss = nil
		var toks []int64
		var tokss [][]int64
		switch {
		case json.Unmarshal(raw, &toks) == nil:
			one, perr := ids(toks, "prompt")
			if perr != nil {
				return nil, perr
			}
			return []promptPart{{ids: one}}, nil
		case json.Unmarshal(raw, &tokss) == nil:
			for i, t := range tokss {
				one, perr := ids(t, fmt.Sprintf("prompt %d", i))
				if perr != nil {
					return nil, perr
				}
				parts = append(parts, promptPart{ids: one})
			}
		default:
			return nil, invalid("prompt", "prompt must be a string, an array of strings, an array of token ids or an array of such arrays")
		}
	}
	for i, t := range ss {
		if t == "" {
			return nil, invalid("prompt", "prompt %d is empty", i)
		}
		parts = append(parts, promptPart{text: t})
	}
	switch {
	case len(parts) == 0:
		return nil, invalid("prompt", "prompt is an empty array")
	case len(parts) > maxPrompts:
		return nil, invalid("prompt", "prompt holds %d prompts; at most %d are allowed", len(parts), maxPrompts)
	}
	return parts, nil
}

// plainString decodes a JSON string without escapes and of valid UTF-8 (every
// prompt of ordinary text) by slicing it: the body has been validated as JSON
// already, and a large prompt is spared two more passes of the JSON decoder.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') >= 0 || bytes.IndexByte(in, '"') >= 0 || !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// messageText reads a chat message's content: a string, null, or an array of
// {"type":"text","text":...} parts, which are concatenated.
func messageText(raw json.RawMessage, i int) (string, *apiError) {
	param := fmt.Sprintf("messages[%d].content", i)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if plain, ok := plainString(raw); ok {
		return plain, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type *string `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param, "%s must be a string or an array of text parts", param)
	}
	var b bytes.Buffer
	for j, p := range parts {
		if p.Type == nil || *p.Type != "text" || p.Text == nil {
			return "", invalid(fmt.Sprintf("%s[%d]", param, j), "only content parts of type \"text\" with a text field are supported")
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}
