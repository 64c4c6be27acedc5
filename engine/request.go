package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"kvq/model"
)

// Errors returned (wrapped) by Submit and by Stream.Wait.
var (
	// ErrQueueFull: the bounded queue of requests not yet started is full; retry later.
	ErrQueueFull = errors.New("engine: request queue is full")
	// ErrClosed: the engine is closed or closing and accepts no new requests, or it was
	// closed before the request finished.
	ErrClosed = errors.New("engine: engine closed")
	// ErrTooLarge: the request can never fit: its prompt plus its maximum number of new
	// tokens exceeds the model's context, or the cache's whole byte budget cannot hold
	// it even with no other request running.
	ErrTooLarge = errors.New("engine: request can never fit")
	// ErrBadRequest: the request itself is invalid (empty prompt, token out of range, ...).
	ErrBadRequest = errors.New("engine: invalid request")
)

// Finish reasons of a Choice.
const (
	FinishStop   = "stop"   // EOS token or a stop string
	FinishLength = "length" // MaxTokens reached, or the model's context is full
)

// Request is one completion request: a prompt and how to continue it.
type Request struct {
	// Prompt is the token ids of the prompt (BOS included if the model wants one).
	Prompt []int32
	// MaxTokens is the maximum number of tokens generated per choice; ≤ 0 means up to
	// the model's context. len(Prompt)+MaxTokens must not exceed the model's context.
	MaxTokens int
	// Sampling chooses how tokens are drawn. Choice i of a request with N > 1 uses
	// Seed+i, so that choices differ under temperature sampling.
	Sampling model.SamplerConfig
	// Stop lists stop strings: generation of a choice ends when its text contains one;
	// the text is cut before it. Text that could still be the start of a stop string is
	// held back from the stream until it cannot.
	Stop []string
	// CacheSalt, if not empty, confines the request to prefixes cached by requests
	// with the same salt (see kv.Store.NewSeqWithPrefixSalt): requests of different
	// salts never share cache blocks, so one cannot learn what another's prompt was.
	// With a cache that cannot salt, a salted request takes no cached prefix.
	CacheSalt string
	// IgnoreEOS keeps generating past the EOS token (for benchmarks).
	IgnoreEOS bool
	// N is the number of choices (parallel samples) generated from the prompt; ≤ 0
	// means 1. The prompt is computed once and its cache sequence forked N-1 times.
	N int
	// OnToken, if not nil, is called on the scheduler goroutine for every generated
	// token, in order per choice. It must return quickly and must not call the Engine.
	OnToken func(Event)
	// Logprobs asks every Event for its token's log-probability (Event.Logprob), with
	// the TopLogprobs (≤ MaxTopLogprobs) most likely tokens at its position.
	Logprobs    bool
	TopLogprobs int
	// PromptLogprobs asks for the log-probabilities of the prompt's tokens after the
	// first (Result.PromptLogprobs, with TopLogprobs alternatives each). The whole
	// prompt is then computed, without prefix-cache reuse.
	PromptLogprobs bool
	// Constraint, if not nil, is called once per choice for the constraint its
	// tokens must satisfy (e.g. grammar.JSONObject). Log-probabilities stay the
	// model's own, before the constraint.
	Constraint func() Constraint
}

// Constraint restricts which tokens a choice may sample next.
type Constraint interface {
	// Mask sets to −Inf the logits of the tokens that may not come next, given that
	// at most remaining tokens (this one included) can still be generated.
	Mask(logits []float32, remaining int)
	// Accept advances the constraint past the sampled token.
	Accept(token int32)
}

// Event is one generated token of one choice, as streamed.
type Event struct {
	Choice int   // index of the choice, < Request.N
	Token  int32 // the token id (EOS included when it ends the choice)
	// Text is the text that became safe to show with this token: possibly "", possibly
	// text held back from earlier tokens (incomplete UTF-8, possible stop-string start).
	Text string
	// Finish is "" while the choice goes on, else its finish reason (this is its last event).
	Finish string
	// Logprob is the token's log-probability when Request.Logprobs is set, else nil.
	Logprob *Logprob
}

// Choice is one finished completion.
type Choice struct {
	Tokens       []int32 // generated tokens, without a final EOS
	Text         string  // their text, cut before a stop string
	FinishReason string  // FinishStop or FinishLength; "" if the request failed
}

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens       int // len(Prompt)
	CompletionTokens   int // tokens sampled across all choices, final EOS included
	CachedPromptTokens int // prompt tokens taken from the prefix cache at first admission
}

// Result is a finished request.
type Result struct {
	Choices []Choice
	Usage   Usage
	// Preemptions is how many times the request was preempted and recomputed.
	Preemptions int
	// TimeToFirstToken is the time from Submit to the first sampled token.
	TimeToFirstToken time.Duration
	// PromptLogprobs holds, with Request.PromptLogprobs, entry i for prompt token
	// i+1 (the first token has no log-probability): len(Prompt)−1 entries once the
	// prompt is computed.
	PromptLogprobs []Logprob
}

// Stream is the handle of a submitted request.
type Stream struct {
	ctx  context.Context
	done chan struct{}

	mu     sync.Mutex
	events []Event // events not yet taken by the Events pump
	notify chan struct{}
	ch     chan Event // created by the first Events call
	res    Result
	err    error
}

func newStream(ctx context.Context) *Stream {
	return &Stream{ctx: ctx, done: make(chan struct{}), notify: make(chan struct{}, 1)}
}

// push queues an event for the Events channel; it never blocks. Events are kept
// from the start (at most one per generated token and choice), so a caller that
// takes the channel after Submit returns still sees every event.
func (s *Stream) push(ev Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// finish records the outcome and releases waiters. Called once.
func (s *Stream) finish(res Result, err error) {
	s.mu.Lock()
	s.res, s.err = res, err
	s.mu.Unlock()
	close(s.done)
}

// Done is closed when the request has finished, failed or been cancelled.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Wait blocks until the request finishes and returns its result. On failure or
// cancellation the error is not nil and the result holds what was generated so far.
func (s *Stream) Wait() (Result, error) {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res, s.err
}

// Events returns a channel that receives all of the request's token events, including
// those produced before the first call, and is closed after the last one or when the
// request's context is cancelled. Delivery never blocks the engine:
// events are buffered until read. The channel must be read until it is closed.
func (s *Stream) Events() <-chan Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		return s.ch
	}
	s.ch = make(chan Event)
	go s.pump()
	return s.ch
}

// pump moves buffered events to the channel until the request is done and the
// buffer is empty.
func (s *Stream) pump() {
	defer close(s.ch)
	for {
		s.mu.Lock()
		evs := s.events
		s.events = nil
		s.mu.Unlock()
		for _, ev := range evs {
			select {
			case s.ch <- ev:
			case <-s.ctx.Done():
				return
			}
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-s.notify:
		case <-s.done:
			s.mu.Lock()
			empty := len(s.events) == 0
			s.mu.Unlock()
			if empty {
				return
			}
		case <-s.ctx.Done():
			return
		}
	}
}
