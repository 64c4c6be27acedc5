package server

import (
	"net/http"
	"slices"
	"strings"
)

// CORS: with Options.AllowedOrigins set, browsers on those origins may call the
// API. A preflight (OPTIONS with Access-Control-Request-Method) from an allowed
// origin is answered 204 before authentication, as browsers send it without
// credentials; other requests get Access-Control-Allow-Origin and go on. "*"
// allows every origin. Without AllowedOrigins no CORS header is ever sent.

func (s *Server) cors(h http.Handler) http.Handler {
	allowed := s.opts.AllowedOrigins
	if len(allowed) == 0 {
		return h
	}
	every := slices.Contains(allowed, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !every && !slices.Contains(allowed, origin) {
			h.ServeHTTP(w, r)
			return
		}
		hd := w.Header()
		hd.Add("Vary", "Origin")
		if every {
			hd.Set("Access-Control-Allow-Origin", "*")
		} else {
			hd.Set("Access-Control-Allow-Origin", origin)
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			req := r.Header.Get("Access-Control-Request-Headers")
			if req == "" {
				req = "Authorization, Content-Type"
			}
			hd.Set("Access-Control-Allow-Headers", req)
			hd.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		hd.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
		h.ServeHTTP(w, r)
	})
}

// jsonNotFound answers, as JSON, the requests the routes do not match (404, or 405
// with Allow for a path served under another method), which the standard mux
// would answer in plain text.
func (s *Server) jsonNotFound(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := s.mux.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		status := probe.status
		if status == 0 {
			status = http.StatusNotFound
		}
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		msg := "no route " + r.Method + " " + r.URL.Path
		if status == http.StatusMethodNotAllowed {
			msg = "method " + r.Method + " is not allowed on " + r.URL.Path + " (allowed: " + strings.ReplaceAll(probe.header.Get("Allow"), ",", ", ") + ")"
		}
		writeError(w, &apiError{status: status, typ: "invalid_request_error", message: msg})
	})
}

// statusProbe records what the mux's own not-found handler would answer.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.status = code }
