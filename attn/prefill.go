package attn

import (
	"errors"
	"fmt"
)

// Prefill computes causal attention for n consecutive queries: query i (q and out
// rows i, Heads·HeadDim values each) attends over the spans that spans(i, dst)
// appends to dst — the history as that query sees it, its own token included. With
// Options.Workers > 1 the queries are spread over that many goroutines (spans is
// then called concurrently and must be safe for it). Each query is a Decode; a cache whose storage of a token depends on the querying
// position (full-precision windows) describes each query's view exactly, which makes
// a prefill of n tokens equal to n single-token steps.
func Prefill(out, q []float32, n int, sh Shape, spans func(i int, dst []Span) []Span, opt Options, sc *Scratch) error {
	if err := checkShape(sh); err != nil {
		return err
	}
	hd := sh.Heads * sh.HeadDim
	if n < 0 || len(q) != n*hd || len(out) != n*hd {
		return fmt.Errorf("%w: prefill of %d queries: len(q)=%d len(out)=%d, want %d", ErrShape, n, len(q), len(out), n*hd)
	}
	if sc == nil {
		sc = new(Scratch)
	}
	workers := min(opt.Workers, n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			sc.spans = spans(i, sc.spans[:0])
			if err := Decode(out[i*hd:(i+1)*hd], q[i*hd:(i+1)*hd], sh, sc.spans, opt, sc); err != nil {
				return fmt.Errorf("query %d: %w", i, err)
			}
		}
		return nil
	}
	// Queries are independent: spread them over the workers, each with its own
	// scratch, one query per worker at a time (no chunk parallelism inside).
	for len(sc.sub) < workers {
		sc.sub = append(sc.sub, new(Scratch))
	}
	one := opt
	one.Workers = 1
	errs := make([]error, workers)
	parallelFor(workers, workers, func(w int) {
		ws := sc.sub[w]
		for i := w; i < n; i += workers {
			ws.spans = spans(i, ws.spans[:0])
			if err := Decode(out[i*hd:(i+1)*hd], q[i*hd:(i+1)*hd], sh, ws.spans, one, ws); err != nil {
				errs[w] = fmt.Errorf("query %d: %w", i, err)
				return
			}
		}
	})
	return errors.Join(errs...)
}
