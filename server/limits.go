package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Defaults of the Options fields that bound connections and the work done before a
// request reaches the engine.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadBodyTimeout   = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConns          = 1024
)

// smallBody is the body size below which a request skips the parsing gates: its
// decoding and tokenizing cost little whatever it holds.
const smallBody = 64 << 10

// gates bound what requests with large bodies may do at once before admission: the
// bytes of bodies being read and parsed (memory), and the number of bodies parsed and
// tokenized (CPU), so that a flood of large prompts leaves memory bounded and cores
// free for the engine and for small requests.
type gates struct {
	bytes *weighted
	parse chan struct{}
}

func newGates(maxBody int64, parsing int) *gates {
	if parsing <= 0 {
		parsing = max(1, runtime.GOMAXPROCS(0)/2)
	}
	return &gates{bytes: newWeighted(max(16*maxBody, 64<<20)), parse: make(chan struct{}, parsing)}
}

// readBody reads r's body whole (at most limit bytes, within timeout) and returns it.
// Bodies that may exceed smallBody first wait for room among the bytes being parsed;
// release gives it back once the caller is done with the body and what it parsed.
func (g *gates) readBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) (body []byte, release func(), aerr *apiError) {
	release = func() {}
	size := r.ContentLength
	if size < 0 || size > limit {
		size = limit
	}
	if size > smallBody {
		if err := g.bytes.acquire(r.Context(), size); err != nil {
			return nil, release, gone(err)
		}
		release = func() { g.bytes.release(size) }
	}
	rc := http.NewResponseController(w)
	if timeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(timeout)) // not every writer supports deadlines (tests)
	}
	buf := make([]byte, 0, min(max(r.ContentLength, 512), limit)+1)
	body, err := readAllInto(buf, http.MaxBytesReader(w, r.Body, limit))
	if err == nil && timeout > 0 {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		// The rest of the body is not worth waiting for: close the connection after
		// the answer instead of reading on.
		w.Header().Set("Connection", "close")
		var big *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &big):
			return nil, release, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
				message: fmt.Sprintf("request body is larger than the limit of %d bytes", big.Limit), err: err}
		case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
			return nil, release, &apiError{status: http.StatusRequestTimeout, typ: "invalid_request_error",
				message: fmt.Sprintf("the request body was not received within %v", timeout), err: err}
		}
		return nil, release, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error",
			message: fmt.Sprintf("reading the request body: %v", err), err: err}
	}
	if len(body) > smallBody {
		select {
		case g.parse <- struct{}{}:
		case <-r.Context().Done():
			return nil, release, gone(r.Context().Err())
		}
		bytesRelease := release
		release = func() { <-g.parse; bytesRelease() }
	}
	return body, release, nil
}

// gone is the error of a client that left while its request waited.
func gone(err error) *apiError {
	return &apiError{status: 499, typ: "invalid_request_error", message: "the client went away", err: err}
}

// readAllInto is io.ReadAll into buf's spare capacity.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// weighted is a FIFO semaphore over n units.
type weighted struct {
	mu      sync.Mutex
	free    int64
	waiters []*waiter
}

type waiter struct {
	n     int64
	ready chan struct{}
}

func newWeighted(n int64) *weighted { return &weighted{free: n} }

// acquire takes n units, waiting in arrival order until they are free or ctx ends.
func (s *weighted) acquire(ctx context.Context, n int64) error {
	s.mu.Lock()
	if len(s.waiters) == 0 && s.free >= n {
		s.free -= n
		s.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			s.free += n
		default:
			for i, x := range s.waiters {
				if x == w {
					s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
					break
				}
			}
		}
		s.grant()
		s.mu.Unlock()
		return ctx.Err()
	}
}

func (s *weighted) release(n int64) {
	s.mu.Lock()
	s.free += n
	s.grant()
	s.mu.Unlock()
}

// grant wakes waiters in order while their units are free. s.mu is held.
func (s *weighted) grant() {
	for len(s.waiters) > 0 && s.free >= s.waiters[0].n {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		s.free -= w.n
		close(w.ready)
	}
}

// limitListener accepts at most max connections at once; beyond that it answers a
// new connection with a 503 and closes it at once, so that connections that never
// finish (slow or stalled clients) cannot exhaust file descriptors, and new clients
// hear at once that the server is full.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func newLimitListener(ln net.Listener, max int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max)}
}

// fullResponse is what a connection beyond the cap is told.
var fullResponse = func() string {
	body := `{"error":{"message":"the server has too many open connections; retry later","type":"server_error","param":null,"code":null}}` + "\n"
	return fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c, fullResponse)
			_ = c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// checkHost answers 421 to requests whose Host header names none of the allowed
// hosts: a web page on another origin that has rebound its own DNS name to this
// server's address (DNS rebinding) sends its own name as Host, and without an API key
// nothing else would stop it. Allowed: IP addresses (only names can be rebound),
// localhost and *.localhost, this machine's host name, and Options.AllowedHosts
// ("*" allows any). With an API key and no list, every Host is accepted: a page that
// rebinds a name does not know the key.
func (s *Server) checkHost(h http.Handler) http.Handler {
	if s.opts.APIKey != "" && len(s.opts.AllowedHosts) == 0 {
		return h
	}
	allowed := map[string]bool{}
	for _, a := range s.opts.AllowedHosts {
		allowed[strings.ToLower(a)] = true
	}
	if hn, err := os.Hostname(); err == nil && hn != "" {
		allowed[strings.ToLower(hn)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host, allowed) {
			writeError(w, &apiError{status: http.StatusMisdirectedRequest, typ: "invalid_request_error",
				message: fmt.Sprintf("the Host %q is not served here (see --allowed-hosts)", r.Host)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(host string, allowed map[string]bool) bool {
	if allowed["*"] {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if allowed[name] || allowed[strings.ToLower(host)] {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	// An address is never a rebound name; only names can be rebound.
	return net.ParseIP(name) != nil
}
