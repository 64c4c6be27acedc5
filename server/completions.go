package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"kvq/engine"
	"kvq/model"
	"kvq/tokenizer"
)

// Response bodies, shaped as OpenAI's.

type usageDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type usage struct {
	PromptTokens        int          `json:"prompt_tokens"`
	CompletionTokens    int          `json:"completion_tokens"`
	TotalTokens         int          `json:"total_tokens"`
	PromptTokensDetails usageDetails `json:"prompt_tokens_details"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	// Usage is a *usage, or in a stream with include_usage, JSON null on every chunk
	// but the last (as OpenAI sends it); nil omits it.
	Usage any `json:"usage,omitempty"`
}

type chatMessageOut struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int              `json:"index"`
	Message      *chatMessageOut  `json:"message,omitempty"`
	Delta        *chatDelta       `json:"delta,omitempty"`
	Logprobs     *chatLogprobsOut `json:"logprobs"`
	FinishReason *string          `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   any          `json:"usage,omitempty"` // as completionResponse.Usage
}

// defaultCompletionMaxTokens is max_tokens when a /v1/completions request omits it,
// as in OpenAI's API; chat requests default to the rest of the context.
const defaultCompletionMaxTokens = 16

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	status := s.generate(w, r, false)
	s.metrics.request(status)
	setStatus(r, status)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	status := s.generate(w, r, true)
	s.metrics.request(status)
	setStatus(r, status)
}

// job is one validated request on its way through the engine.
type job struct {
	chat    bool
	id      string
	created int64
	model   string
	p       genParams
}

// generate serves one completion request and returns the HTTP status it ended with
// (499 when the client went away first).
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) int {
	t0 := time.Now()
	if r.ContentLength > s.opts.MaxBodyBytes {
		return s.fail(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
			message: fmt.Sprintf("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, s.opts.MaxBodyBytes)})
	}
	e, m, names := s.engine()
	if e == nil || !s.ready.Load() {
		return s.fail(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", message: "the model is not loaded (the server is starting or shutting down)"})
	}
	// The body and what is parsed from it are held, under the parsing gates, until the
	// request is tokenized.
	body, release, aerr := s.gates.readBody(w, r, s.opts.MaxBodyBytes, s.opts.ReadBodyTimeout)
	j := &job{chat: chat, created: time.Now().Unix(), model: names[0]}
	if aerr == nil {
		if chat {
			aerr = s.parseChat(body, m, names, j)
		} else {
			aerr = s.parseCompletion(body, m, names, j)
		}
	}
	release()
	if aerr != nil {
		if aerr.status == 499 {
			return 499 // nobody to answer
		}
		logRejection(r, aerr)
		return s.fail(w, aerr)
	}
	if chat {
		j.id = "chatcmpl-" + rand.Text()
	} else {
		j.id = "cmpl-" + rand.Text()
	}
	w.Header().Set("X-Request-Id", j.id) // as OpenAI's x-request-id; the same id as the body's
	addLog(r, slog.String("id", j.id), slog.Int("prompts", len(j.p.prompts)), slog.Int("max_tokens", j.p.maxTokens),
		slog.Int("n", j.p.n), slog.Bool("stream", j.p.stream))
	return s.run(w, r, e, m, j, t0)
}

// fail answers err and returns its status.
func (s *Server) fail(w http.ResponseWriter, err *apiError) int {
	writeError(w, err)
	return err.status
}

// checkModel accepts an absent model or one of the served names.
func checkModel(name *string, names []string) *apiError {
	if name == nil {
		return nil
	}
	for _, n := range names {
		if *name == n {
			return nil
		}
	}
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "model",
		message: fmt.Sprintf("the model %q does not exist; this server serves %q (also accepted as \"default\")", *name, names[0])}
}

func (s *Server) limits(m *model.Model) limits {
	return limits{ctx: m.Ctx, maxN: s.opts.MaxN, vocab: m.Vocab, tok: m.Tok}
}

// checkLength rejects, before tokenizing, text that must encode to more tokens than
// the model's context holds: no token stands for more than Tok.MaxTokenBytes bytes.
// It bounds what tokenizing may cost by the context rather than by the body.
func checkLength(m *model.Model, bytes int, param string) *apiError {
	mt := m.Tok.MaxTokenBytes()
	if mt <= 0 {
		return nil
	}
	if least := (bytes + mt - 1) / mt; least > m.Ctx-1 {
		return invalid(param, "the %s is %d bytes, at least %d tokens (no token covers more than %d bytes); the model's context of %d tokens leaves no room to generate", param, bytes, least, mt, m.Ctx)
	}
	return nil
}

func (s *Server) parseCompletion(body []byte, m *model.Model, names []string, j *job) *apiError {
	var req completionRequest
	if err := decodeBody(body, &req, completionFields); err != nil {
		return err
	}
	if err := checkModel(req.Model, names); err != nil {
		return err
	}
	parts, err := parsePrompt(req.Prompt, m.Vocab)
	if err != nil {
		return err
	}
	echo := req.Echo != nil && *req.Echo
	for _, pp := range parts {
		if err := checkLength(m, len(pp.text), "prompt"); err != nil {
			return err
		}
	}
	for _, pp := range parts {
		ids, text := pp.ids, pp.text
		if ids == nil {
			ids = m.Tok.Encode(pp.text, m.Tok.AddBOS())
		} else {
			text = m.Tok.Decode(ids)
		}
		j.p.prompts = append(j.p.prompts, ids)
		if echo {
			j.p.echo = append(j.p.echo, text)
		}
	}
	if err := parseCompletionLogprobs(req.Logprobs, &j.p); err != nil {
		return err
	}
	if err := req.common(&j.p, s.limits(m), req.MaxTokens, "max_tokens", defaultCompletionMaxTokens, "prompt"); err != nil {
		return err
	}
	if echo && j.p.logprobs && j.p.stream {
		return invalid("echo", "echo with logprobs is only supported without stream (the prompt's log-probabilities come with the whole response)")
	}
	return nil
}

// chatRoles are the message roles accepted, mapped to the role rendered.
var chatRoles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}

func (s *Server) parseChat(body []byte, m *model.Model, names []string, j *job) *apiError {
	var req chatRequest
	if err := decodeBody(body, &req, chatFields); err != nil {
		return err
	}
	if err := checkModel(req.Model, names); err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return invalid("messages", "messages must hold at least one message")
	}
	msgs := make([]message, len(req.Messages))
	for i, cm := range req.Messages {
		if len(cm.unknown) > 0 {
			k := cm.unknown[0]
			return invalid(fmt.Sprintf("messages[%d].%s", i, k), "messages[%d].%s is not supported (a message holds role and content)", i, k)
		}
		if cm.Role == nil {
			return invalid(fmt.Sprintf("messages[%d].role", i), "messages[%d] has no role", i)
		}
		role, ok := chatRoles[*cm.Role]
		if !ok {
			return invalid(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is %q; expected system, developer, user, assistant or tool", i, *cm.Role)
		}
		text, err := messageText(cm.Content, i)
		if err != nil {
			return err
		}
		msgs[i] = message{role: role, content: text}
	}
	segs := renderChat(s.format, msgs)
	n := 0
	for _, sg := range segs {
		n += len(sg.Text)
	}
	if err := checkLength(m, n, "messages"); err != nil {
		return err
	}
	// Message content is plain text: control-token text in it stays text.
	j.p.prompts = [][]int32{m.Tok.EncodeSegments(segs, m.Tok.AddBOS())}
	maxTokens, param := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		maxTokens, param = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if err := parseChatLogprobs(req.Logprobs, req.TopLogprobs, &j.p); err != nil {
		return err
	}
	return req.common(&j.p, s.limits(m), maxTokens, param, 0, "messages")
}

// tokenQueue receives a request's events on the engine's goroutine (never blocking
// it) and hands them to the handler.
type tokenQueue struct {
	mu     sync.Mutex
	evs    []engine.Event
	notify chan struct{}
}

func (q *tokenQueue) push(ev engine.Event) {
	q.mu.Lock()
	q.evs = append(q.evs, ev)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *tokenQueue) take() []engine.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}

// submitError maps an error of engine.Submit (or of a request that failed before
// any output was sent) to an API error.
func submitError(err error, promptParam string) *apiError {
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", message: "the server is at capacity (request queue full); retry later", err: err}
	case errors.Is(err, engine.ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", message: "the server is shutting down", err: err}
	case errors.Is(err, engine.ErrTooLarge):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "max_tokens", message: err.Error(), err: err}
	case errors.Is(err, engine.ErrBadRequest):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: promptParam, message: err.Error(), err: err}
	}
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", message: err.Error(), err: err}
}

// run submits j to the engine and answers it, streamed or whole.
func (s *Server) run(w http.ResponseWriter, r *http.Request, e *engine.Engine, m *model.Model, j *job, t0 time.Time) int {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if d := s.opts.RequestTimeout; d > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithDeadline(ctx, t0.Add(d))
		defer tcancel()
	}
	if st := e.Stats(); len(j.p.prompts) > st.MaxQueue {
		param := "prompt"
		if j.chat {
			param = "messages"
		}
		return s.fail(w, invalid(param, "the request holds %d prompts, but at most %d requests may wait in this server's queue (--max-queue): it could never be admitted", len(j.p.prompts), st.MaxQueue))
	}

	q := &tokenQueue{notify: make(chan struct{}, 1)}
	n := j.p.n
	choices := len(j.p.prompts) * n
	promptParam := "prompt"
	if j.chat {
		promptParam = "messages"
	}
	// State touched only by OnToken, which runs on the engine's goroutine, token by
	// token, in order per choice.
	first := true
	last := make([]time.Time, choices)
	// One engine request per prompt, each under its own context; its choices are
	// numbered from prompt index × n.
	type part struct {
		st     *engine.Stream
		cancel context.CancelFunc
	}
	parts := make([]*part, len(j.p.prompts))
	for pi, prompt := range j.p.prompts {
		base := pi * n
		pctx, pcancel := context.WithCancel(ctx)
		defer pcancel()
		pt := &part{cancel: pcancel}
		onToken := func(ev engine.Event) {
			ev.Choice += base
			now := time.Now()
			if first {
				first = false
				s.metrics.observeTTFT(now.Sub(t0))
			}
			if !last[ev.Choice].IsZero() {
				s.metrics.observeITL(now.Sub(last[ev.Choice]))
			}
			last[ev.Choice] = now
			q.push(ev)
		}
		st, err := e.Submit(pctx, engine.Request{
			Prompt:         prompt,
			MaxTokens:      j.p.maxTokens,
			Sampling:       j.p.sampling,
			Stop:           j.p.stop,
			N:              n,
			OnToken:        onToken,
			Logprobs:       j.p.logprobs,
			TopLogprobs:    j.p.topLogprobs,
			PromptLogprobs: j.p.logprobs && len(j.p.echo) > 0,
			Constraint:     j.p.constraint,
			CacheSalt:      j.p.cacheSalt,
		})
		if err != nil {
			cancel() // ends the prompts already submitted
			for _, p := range parts[:pi] {
				<-p.st.Done()
			}
			return s.fail(w, submitError(err, promptParam))
		}
		pt.st = st
		parts[pi] = pt
	}
	// allDone closes when every prompt's request has ended; a prompt that fails
	// cancels the others, whose answer could not be complete anyway.
	allDone := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			<-p.st.Done()
			if _, err := p.st.Wait(); err != nil {
				cancel()
			}
		})
	}
	go func() {
		wg.Wait()
		close(allDone)
	}()

	out := newOutput(w, j, m.Tok, s.opts.WriteTimeout)
	if j.p.stream {
		out.startStream()
	}
	handle := func(evs []engine.Event) {
		for _, ev := range evs {
			out.token(ev)
		}
	}
loop:
	for {
		select {
		case <-q.notify:
			handle(q.take())
		case <-allDone:
			handle(q.take())
			break loop
		case <-ctx.Done():
			<-allDone // the engine ends the requests before its next step
			handle(q.take())
			break loop
		}
		if out.writeErr != nil {
			cancel() // the client cannot be written to: free the request's blocks now
		}
	}
	gone := r.Context().Err() != nil || out.writeErr != nil
	var (
		u        usage
		err      error
		ttft     time.Duration
		preempts int
	)
	for pi, p := range parts {
		res, rerr := p.st.Wait()
		if len(j.p.echo) > 0 && j.p.logprobs {
			out.promptLP[pi] = res.PromptLogprobs
		}
		u.PromptTokens += res.Usage.PromptTokens
		u.CompletionTokens += res.Usage.CompletionTokens
		u.PromptTokensDetails.CachedTokens += res.Usage.CachedPromptTokens
		preempts += res.Preemptions
		if ttft == 0 || res.TimeToFirstToken > 0 && res.TimeToFirstToken < ttft {
			ttft = res.TimeToFirstToken
		}
		// Report the failure that ended the request rather than the cancellations
		// it caused.
		if rerr != nil && (err == nil || errors.Is(err, context.Canceled) && !errors.Is(rerr, context.Canceled)) {
			err = rerr
		}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	addLog(r, slog.Int("prompt_tokens", u.PromptTokens), slog.Int("completion_tokens", u.CompletionTokens),
		slog.Int("cached_tokens", u.PromptTokensDetails.CachedTokens), slog.Duration("ttft", ttft), slog.Int("preemptions", preempts))
	if err != nil {
		if gone {
			addLog(r, slog.String("outcome", "client gone"))
			return 499
		}
		ae := submitError(err, promptParam)
		if errors.Is(err, context.DeadlineExceeded) {
			ae = &apiError{status: http.StatusGatewayTimeout, typ: "timeout_error", message: fmt.Sprintf("the request did not finish within the server's request timeout of %v", s.opts.RequestTimeout), err: err}
		}
		addLog(r, slog.String("error", err.Error()))
		if j.p.stream {
			out.streamError(ae)
			return ae.status
		}
		return s.fail(w, ae)
	}
	if j.p.stream {
		out.endStream(u)
		if out.writeErr != nil {
			return 499
		}
		return http.StatusOK
	}
	out.whole(u)
	if out.writeErr != nil {
		return 499
	}
	return http.StatusOK
}

// output writes a request's answer: SSE chunks as tokens arrive, or one body at
// the end from the accumulated texts.
type output struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// writeTimeout bounds each write; 0: none.
	writeTimeout time.Duration
	j            *job
	tok          *tokenizer.Tokenizer
	texts        []strings.Builder
	finish       []string
	writeErr     error

	// With logprobs: per choice, the generated tokens' log-probabilities; per
	// prompt, the prompt's (echo).
	lps      []choiceLogprobs
	promptLP [][]engine.Logprob
}

func newOutput(w http.ResponseWriter, j *job, tok *tokenizer.Tokenizer, writeTimeout time.Duration) *output {
	choices := len(j.p.prompts) * j.p.n
	o := &output{w: w, rc: http.NewResponseController(w), writeTimeout: writeTimeout, j: j, tok: tok, texts: make([]strings.Builder, choices), finish: make([]string, choices),
		lps: make([]choiceLogprobs, choices), promptLP: make([][]engine.Logprob, len(j.p.prompts))}
	for i := range choices {
		pr := j.p.prompts[i/j.p.n]
		o.lps[i].prev = pr[len(pr)-1]
		if len(j.p.echo) > 0 {
			o.texts[i].WriteString(j.p.echo[i/j.p.n])
		}
		o.lps[i].next = o.texts[i].Len()
	}
	return o
}

func (o *output) startStream() {
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	o.deadline()
	o.w.WriteHeader(http.StatusOK)
	if o.j.chat {
		// OpenAI opens every chat choice with a role-only delta.
		empty := ""
		for i := range o.texts {
			o.chunk(chatResponse{ID: o.j.id, Object: "chat.completion.chunk", Created: o.j.created, Model: o.j.model,
				Choices: []chatChoice{{Index: i, Delta: &chatDelta{Role: "assistant", Content: &empty}}}})
		}
	} else {
		for i := range o.texts {
			if len(o.j.p.echo) > 0 {
				o.chunk(completionResponse{ID: o.j.id, Object: "text_completion", Created: o.j.created, Model: o.j.model,
					Choices: []completionChoice{{Index: i, Text: o.j.p.echo[i/o.j.p.n]}}})
			}
		}
		o.flush()
	}
}

// token takes one event: its text, finish reason and log-probability.
func (o *output) token(ev engine.Event) {
	i, text, finish := ev.Choice, ev.Text, ev.Finish
	o.texts[i].WriteString(text)
	if finish != "" {
		o.finish[i] = finish
	}
	var shown []tokenLogprob
	if ev.Logprob != nil {
		cl := &o.lps[i]
		if !(finish == engine.FinishStop && o.tok.IsEOG(ev.Token)) {
			cl.take(o.tok, *ev.Logprob)
		}
		shown = cl.release(o.texts[i].String(), finish != "")
	}
	if !o.j.p.stream {
		return
	}
	if text != "" || len(shown) > 0 {
		if o.j.chat {
			c := chatChoice{Index: i, Delta: &chatDelta{Content: &text}}
			if len(shown) > 0 {
				c.Logprobs = &chatLogprobsOut{Content: []chatTokenLogprob{}}
				for k := range shown {
					c.Logprobs.Content = append(c.Logprobs.Content, chatEntry(shown[k].text, &shown[k].lp, o.tok))
				}
			}
			o.chunk(chatResponse{ID: o.j.id, Object: "chat.completion.chunk", Created: o.j.created, Model: o.j.model,
				Choices: []chatChoice{c}})
		} else {
			c := completionChoice{Index: i, Text: text}
			if len(shown) > 0 {
				c.Logprobs = &completionLogprobs{}
				for k := range shown {
					c.Logprobs.add(shown[k].text, &shown[k].lp, o.j.p.topLogprobs, o.tok, shown[k].offset)
				}
			}
			o.chunk(completionResponse{ID: o.j.id, Object: "text_completion", Created: o.j.created, Model: o.j.model,
				Choices: []completionChoice{c}})
		}
	}
	if finish != "" {
		f := finish
		if o.j.chat {
			o.chunk(chatResponse{ID: o.j.id, Object: "chat.completion.chunk", Created: o.j.created, Model: o.j.model,
				Choices: []chatChoice{{Index: i, Delta: &chatDelta{}, FinishReason: &f}}})
		} else {
			o.chunk(completionResponse{ID: o.j.id, Object: "text_completion", Created: o.j.created, Model: o.j.model,
				Choices: []completionChoice{{Index: i, FinishReason: &f}}})
		}
	}
}

// jsonNull is the usage of every chunk but the last when include_usage is set.
var jsonNull = json.RawMessage("null")

// chunk writes one SSE event and flushes it to the client.
func (o *output) chunk(v any) {
	if o.writeErr != nil {
		return
	}
	if o.j.p.includeUsage {
		switch c := v.(type) {
		case chatResponse:
			if c.Usage == nil {
				c.Usage = jsonNull
				v = c
			}
		case completionResponse:
			if c.Usage == nil {
				c.Usage = jsonNull
				v = c
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.writeErr = err
		return
	}
	o.deadline()
	if _, err := fmt.Fprintf(o.w, "data: %s\n\n", b); err != nil {
		o.writeErr = err
		return
	}
	o.flush()
}

// deadline bounds the next write: a client that does not read within writeTimeout
// makes it fail, which cancels the request.
func (o *output) deadline() {
	if o.writeTimeout > 0 {
		_ = o.rc.SetWriteDeadline(time.Now().Add(o.writeTimeout)) // unsupported by some writers (tests)
	}
}

func (o *output) flush() {
	if err := o.rc.Flush(); err != nil && o.writeErr == nil {
		o.writeErr = err
	}
}

// endStream sends the usage chunk if asked for, then [DONE].
func (o *output) endStream(u usage) {
	if o.j.p.includeUsage {
		if o.j.chat {
			o.chunk(chatResponse{ID: o.j.id, Object: "chat.completion.chunk", Created: o.j.created, Model: o.j.model, Choices: []chatChoice{}, Usage: &u})
		} else {
			o.chunk(completionResponse{ID: o.j.id, Object: "text_completion", Created: o.j.created, Model: o.j.model, Choices: []completionChoice{}, Usage: &u})
		}
	}
	o.done()
}

// streamError reports a failure after the stream has started, then ends it.
func (o *output) streamError(ae *apiError) {
	o.chunk(ae.body())
	o.done()
}

func (o *output) done() {
	if o.writeErr != nil {
		return
	}
	o.deadline()
	if _, err := fmt.Fprint(o.w, "data: [DONE]\n\n"); err != nil {
		o.writeErr = err
		return
	}
	o.flush()
}

// whole writes the non-streamed response.
func (o *output) whole(u usage) {
	if o.j.chat {
		resp := chatResponse{ID: o.j.id, Object: "chat.completion", Created: o.j.created, Model: o.j.model, Usage: &u}
		for i := range o.texts {
			f := o.finish[i]
			c := chatChoice{Index: i, Message: &chatMessageOut{Role: "assistant", Content: o.texts[i].String()}, FinishReason: &f}
			if o.j.p.logprobs {
				c.Logprobs = &chatLogprobsOut{Content: []chatTokenLogprob{}}
				for _, t := range o.lps[i].shown {
					c.Logprobs.Content = append(c.Logprobs.Content, chatEntry(t.text, &t.lp, o.tok))
				}
			}
			resp.Choices = append(resp.Choices, c)
		}
		o.deadline()
		o.writeErr = writeJSON(o.w, http.StatusOK, resp)
		return
	}
	resp := completionResponse{ID: o.j.id, Object: "text_completion", Created: o.j.created, Model: o.j.model, Usage: &u}
	for i := range o.texts {
		f := o.finish[i]
		resp.Choices = append(resp.Choices, completionChoice{Index: i, Text: o.texts[i].String(), Logprobs: o.completionLogprobs(i), FinishReason: &f})
	}
	o.deadline()
	o.writeErr = writeJSON(o.w, http.StatusOK, resp)
}

// completionLogprobs builds choice i's logprobs object (nil without logprobs):
// with echo, the prompt's tokens first (the first without a log-probability).
func (o *output) completionLogprobs(i int) *completionLogprobs {
	if !o.j.p.logprobs {
		return nil
	}
	c := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []*float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	pi := i / o.j.p.n
	if len(o.j.p.echo) > 0 {
		echo := o.j.p.echo[pi]
		var chars charCount
		offset, prev := 0, int32(-1)
		for k, t := range o.j.p.prompts[pi] {
			var lp *engine.Logprob
			if k > 0 && k-1 < len(o.promptLP[pi]) {
				lp = &o.promptLP[pi][k-1]
			}
			s := tokenText(o.tok, prev, t)
			c.add(s, lp, o.j.p.topLogprobs, o.tok, chars.at(echo, min(offset, len(echo))))
			offset += len(s)
			prev = t
		}
	}
	for _, t := range o.lps[i].shown {
		c.add(t.text, &t.lp, o.j.p.topLogprobs, o.tok, t.offset)
	}
	return c
}
