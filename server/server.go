// Package server is kvq's OpenAI-compatible HTTP API over the batching engine:
//
//   - POST /v1/completions and POST /v1/chat/completions, streamed as Server-Sent
//     Events (stream: true; one "data: {json}\n\n" chunk per token that brings text,
//     then "data: [DONE]\n\n") or answered in one JSON body;
//   - GET /v1/models, the one model served, and GET /v1/models/{id};
//   - GET /health: 503 until Start has attached the model (and again while shutting
//     down), 503 "overloaded" while the engine's queue is full, else 200;
//   - GET /metrics: Prometheus text format, metric names prefixed kvq_;
//   - POST /tokenize and POST /detokenize, in llama-server's and vLLM's shapes.
//
// With Options.AllowedOrigins, browsers on those origins may call it (CORS). Routes
// it does not serve are answered 404 (405 for another method) with a JSON body.
//
// Concurrency comes from the engine's continuous batching over the paged KV cache;
// the server only translates. Requests are bounded by the engine's queue (429 with
// Retry-After when it is full; 400 when a request could never be admitted), bodies
// by Options.MaxBodyBytes and the parsing gates (limits.go: prompts too long for the
// context are refused before tokenizing), connections by deadlines and a cap, and
// every request's life by its HTTP request context and Options.RequestTimeout: a
// client that goes away, or stops reading, cancels its request and the engine frees
// its cache blocks before its next step.
//
// Request fields: model, prompt (a string, token ids, or an array of up to 32 of
// either, each answered by its own n choices) or messages, max_tokens (chat also
// max_completion_tokens; default 16 for completions, the rest of the context for
// chat), temperature (default 1; 0 is greedy), top_p, seed (random when absent),
// stop (a string or up to 4), n, stream and stream_options.include_usage;
// presence_penalty, frequency_penalty, logit_bias, top_k and min_p; logprobs (on
// completions the number of alternatives, with echo the prompt's tokens first; on
// chat a boolean with top_logprobs), the model's own log-softmax; response_format
// text, json_object or json_schema (sampling constrained by grammar.JSONObject or
// grammar.SchemaObject: the answer always parses, as one JSON object the schema
// accepts); user (accepted, no effect). Every other field, and tools, is refused
// with 400 naming it (fields.go): a request is never served with a field ignored.
// usage.completion_tokens counts every sampled token, a final EOS included.
//
// A choice ends at EOS or a stop string ("stop"), or at max_tokens or the context
// ("length"). A token the tokenizer reports as ending a turn (e.g. <|im_end|>,
// <|eot_id|>) ends its choice with "stop" too; once every choice of a request has
// ended, the request is cancelled in the engine.
//
// Errors are answered as OpenAI does: {"error":{"message","type","param","code"}},
// with param naming the request field at fault.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

// Defaults of Options fields.
const (
	DefaultMaxBodyBytes = 4 << 20 // bytes
	DefaultMaxN         = 16
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// ModelName is the model id reported by /v1/models and in responses; "" uses the
	// model's general.name, or "kvq" if it has none. Requests may name the model by
	// this id, by its general.name, or as "default"; an absent model field means the
	// served model too.
	ModelName string
	// APIKey, if not empty, is required as "Authorization: Bearer <key>" on /v1/
	// routes (401 otherwise). /health and /metrics stay open.
	APIKey string
	// MaxBodyBytes bounds request bodies, in bytes (413 beyond it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxN is the largest n (choices per prompt) accepted; 0 means DefaultMaxN.
	MaxN int
	// ChatTemplate is the model's Jinja chat template (GGUF tokenizer.chat_template,
	// see ReadChatTemplate); its family is recognised by DetectChatFormat. "" uses the
	// plain fallback (ChatPlain).
	ChatTemplate string
	// Logger receives one record per request (and shutdown notes); nil discards them.
	Logger *slog.Logger
	// AllowedOrigins are the browser origins allowed to call the API (CORS); "*"
	// allows all; empty sends no CORS headers.
	AllowedOrigins []string

	// Connection deadlines (0 means the Default of the same name; < 0 none):
	// ReadHeaderTimeout bounds reading a request's headers, ReadBodyTimeout its body,
	// WriteTimeout each write of a response (one streamed event, or a whole body: a
	// client that stops reading is dropped and its request's cache blocks freed), and
	// IdleTimeout a kept-alive connection between requests.
	ReadHeaderTimeout, ReadBodyTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns caps the open connections of Serve (0: DefaultMaxConns); a connection
	// beyond it is answered 503 and closed at once.
	MaxConns int
	// MaxParsing is the most request bodies larger than 64 KiB decoded and tokenized
	// at once (0: half the CPUs, at least 1); more wait their turn.
	MaxParsing int
	// RequestTimeout, if > 0, bounds a completion request's life from its arrival: one
	// still queued or generating then is cancelled, its blocks freed, and answered
	// 504 (or a final SSE error event).
	RequestTimeout time.Duration
	// AllowedHosts lists the Host names accepted besides addresses, localhost and this
	// machine's name ("*": any); see checkHost. Without an API key, requests naming
	// another host get 421, against DNS rebinding.
	AllowedHosts []string
}

// orDefault is d when v is 0, and 0 (no deadline) when v < 0.
func orDefault(v, d time.Duration) time.Duration {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	}
	return v
}

// Server serves one model through one engine.
type Server struct {
	opts    Options
	format  ChatFormat
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	gates   *gates

	mu       sync.Mutex
	m        *model.Model
	eng      *engine.Engine
	names    []string      // accepted model names
	cacheMet metricsWriter // the cache's own metrics (KV tiers), if it has any
	closing  bool
	httpSrvs []*http.Server

	ready atomic.Bool
}

// New returns a server without a model: /health answers 503 and completion routes
// 503 until Start.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxN <= 0 {
		opts.MaxN = DefaultMaxN
	}
	opts.ReadHeaderTimeout = orDefault(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	opts.ReadBodyTimeout = orDefault(opts.ReadBodyTimeout, DefaultReadBodyTimeout)
	opts.WriteTimeout = orDefault(opts.WriteTimeout, DefaultWriteTimeout)
	opts.IdleTimeout = orDefault(opts.IdleTimeout, DefaultIdleTimeout)
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, format: DetectChatFormat(opts.ChatTemplate), log: log, metrics: newMetrics(), mux: http.NewServeMux(),
		gates: newGates(opts.MaxBodyBytes, opts.MaxParsing)}
	s.mux.HandleFunc("POST /v1/completions", s.auth(s.handleCompletions))
	s.mux.HandleFunc("POST /v1/chat/completions", s.auth(s.handleChat))
	s.mux.HandleFunc("GET /v1/models", s.auth(s.handleModels))
	s.mux.HandleFunc("GET /v1/models/{id...}", s.auth(s.handleModel))
	s.mux.HandleFunc("GET /health", s.handleHealth)
	s.mux.HandleFunc("GET /metrics", s.handleMetrics)
	s.mux.HandleFunc("POST /tokenize", s.auth(s.handleTokenize))
	s.mux.HandleFunc("POST /detokenize", s.auth(s.handleDetokenize))
	s.mux.HandleFunc("/v1/", s.auth(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	}))
	return s
}

// ChatFormat is the chat layout the server renders messages with.
func (s *Server) ChatFormat() ChatFormat { return s.format }

// ModelName is the id of the served model ("" before Start).
func (s *Server) ModelName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.names) == 0 {
		return ""
	}
	return s.names[0]
}

// Start attaches the model and its cache: it starts an engine over them (which owns
// both until Shutdown returns) and marks the server ready.
func (s *Server) Start(m *model.Model, c kv.Cache, cfg engine.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.eng != nil {
		return errors.New("server: already started")
	}
	if s.closing {
		return errors.New("server: shut down")
	}
	e, err := engine.New(m, c, cfg)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.m, s.eng = m, e
	s.cacheMet, _ = c.(metricsWriter)
	name := s.opts.ModelName
	if name == "" {
		name = m.Name
	}
	if name == "" {
		name = "kvq"
	}
	s.names = []string{name, "default"}
	if m.Name != "" && m.Name != name {
		s.names = append(s.names, m.Name)
	}
	s.ready.Store(true)
	return nil
}

// Handler is the server's HTTP handler, with request logging and the Host check.
func (s *Server) Handler() http.Handler {
	return s.logRequests(s.checkHost(s.cors(s.jsonNotFound(s.mux))))
}

// Serve accepts connections on ln until Shutdown, at most Options.MaxConns at once,
// with the Options' deadlines; it returns nil after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.opts.ReadHeaderTimeout, IdleTimeout: s.opts.IdleTimeout,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	ln = newLimitListener(ln, s.opts.MaxConns)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return errors.New("server: shut down")
	}
	s.httpSrvs = append(s.httpSrvs, hs)
	s.mu.Unlock()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server gracefully: listeners close at once and /health turns
// 503; requests in flight (running or queued) may finish until ctx ends, then the
// rest are cancelled and their clients get an error (a final SSE error event, or a
// 503). It returns once every handler has returned (at most a few seconds after
// ctx ends), with ctx's error if requests had to be cancelled. Afterwards the model
// and cache belong to the caller again.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	e, srvs := s.eng, s.httpSrvs
	s.mu.Unlock()
	s.ready.Store(false)

	// Handlers end soon after the engine is closed; give them a short grace beyond ctx.
	grace := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		grace, cancel = context.WithDeadline(grace, d.Add(5*time.Second))
		defer cancel()
	}
	errs := make(chan error, len(srvs))
	for _, hs := range srvs {
		go func() { errs <- hs.Shutdown(grace) }()
	}
	var err error
	if e != nil {
		err = e.Close(ctx)
		if err != nil {
			s.log.Warn("shutdown: requests still in flight were cancelled", "err", err)
		}
	}
	for range srvs {
		if herr := <-errs; herr != nil && err == nil {
			err = fmt.Errorf("server: closing HTTP connections: %w", herr)
		}
	}
	return err
}

// engine returns the running engine, or nil before Start.
func (s *Server) engine() (*engine.Engine, *model.Model, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng, s.m, s.names
}

// auth requires the API key, when one is set, as a bearer token (the scheme's case
// does not matter, as RFC 9110 says).
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.opts.APIKey == "" {
		return h
	}
	want := []byte(s.opts.APIKey)
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, got, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			if isCompletion(r) {
				s.metrics.request(http.StatusUnauthorized)
			}
			writeError(w, &apiError{status: http.StatusUnauthorized, typ: "authentication_error",
				message: "missing or invalid API key: send it as the header \"Authorization: Bearer <key>\""})
			return
		}
		h(w, r)
	}
}

func isCompletion(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/chat/completions")
}

// handleHealth answers readiness: 200 {"status":"ok"} while requests are accepted,
// 503 {"status":"unavailable"} before Start and while shutting down, and 503
// {"status":"overloaded"} while the engine's queue is full (a new request would get
// 429), so that a load balancer sends work elsewhere.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return
	}
	if e, _, _ := s.engine(); e != nil {
		if st := e.Stats(); st.Queued >= st.MaxQueue {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "overloaded", "queued": st.Queued, "max_queue": st.MaxQueue})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// metricsWriter is implemented by caches with metrics of their own (kv/tier.Cache:
// kvq_kv_tier_*), appended to /metrics.
type metricsWriter interface{ WriteMetrics(io.Writer) }

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	e, _, _ := s.engine()
	var st *engine.Stats
	if e != nil {
		x := e.Stats()
		st = &x
	}
	s.mu.Lock()
	cm := s.cacheMet
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.write(w, st, s.ready.Load())
	if cm != nil {
		cm.WriteMetrics(w)
	}
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	_, _, names := s.engine()
	list := modelList{Object: "list", Data: []modelObject{}}
	if len(names) > 0 {
		list.Data = append(list.Data, modelObject{ID: names[0], Object: "model", Created: time.Now().Unix(), OwnedBy: "kvq"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	_, _, names := s.engine()
	id := r.PathValue("id")
	if err := checkModel(&id, names); err != nil || len(names) == 0 {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model",
			message: fmt.Sprintf("the model %q does not exist", id)})
		return
	}
	writeJSON(w, http.StatusOK, modelObject{ID: names[0], Object: "model", Created: time.Now().Unix(), OwnedBy: "kvq"})
}

// statusWriter records the status and size of a response for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logKey carries a request's log attributes from its handler to the logger.
type logKey struct{}

type logAttrs struct {
	attrs  []slog.Attr
	status int // the request's outcome when it differs from the status sent (499)
}

// setStatus records the outcome of a request whose status line was already sent: a
// stream whose client stopped reading is logged as 499, as the metrics count it.
func setStatus(r *http.Request, status int) {
	if la, ok := r.Context().Value(logKey{}).(*logAttrs); ok {
		la.status = status
	}
}

func addLog(r *http.Request, attrs ...slog.Attr) {
	if la, ok := r.Context().Value(logKey{}).(*logAttrs); ok {
		la.attrs = append(la.attrs, attrs...)
	}
}

func (s *Server) logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		la := &logAttrs{}
		r = r.WithContext(context.WithValue(r.Context(), logKey{}, la))
		h.ServeHTTP(sw, r)
		status := sw.status
		if la.status != 0 {
			status = la.status
		}
		attrs := append([]slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
			slog.Int64("bytes", sw.bytes), slog.Duration("duration", time.Since(t0)), slog.String("remote", r.RemoteAddr),
		}, la.attrs...)
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelWarn
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}
