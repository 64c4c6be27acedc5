// Package kv is kvq's key/value cache: per-layer K and V codecs chosen by a spec
// string, per-sequence storage in fixed-size blocks, exact memory accounting, and
// attention computed on the compressed bytes.
//
// The cache is split in two interfaces, as a model and an engine see it:
//
//   - Layers is what a model's forward pass uses: append this step's keys and values,
//     attend these queries over the sequence's history.
//   - Sequences is what a caller that owns sequences uses (a CLI loop, the evaluator,
//     the batching engine): create, drop, fork, grow, truncate, memory figures.
//
// One forward step serves a batch of sequences of different lengths: the model calls
// Grow once per sequence in the batch, then, layer by layer, Append and Attend for each
// sequence. A Cache is safe for use by one forward step at a time; Sequences methods
// may be called between steps from any goroutine.
//
// For an engine that embeds the cache, Store adds: ReadKey and ReadValue (one row of
// a sequence, layer, position and head, dequantized exactly as attention reads it),
// ReadBlock and Layout (a block's bytes and what they hold), GrowWithoutTokens (rows
// without token ids, which the prefix cache never shares), and a NaN/Inf policy:
// Append refuses such rows with ErrNonFinite before writing anything. Calibrator
// computes per-layer FP8 scales (spec parameter s) from a calibration run.
package kv

import "errors"

// SeqID names a sequence within one cache.
type SeqID int32

// The sentinel errors of the package carry no "kv:" prefix: they are always
// returned wrapped by the failing operation, whose message starts with "kv:" once
// ("kv: drop: sequence 5: unknown sequence"). Match them with errors.Is.

// ErrNoSpace is returned (wrapped) when the cache's byte budget cannot hold what an
// operation needs. The operation has then changed nothing.
var ErrNoSpace = errors.New("out of cache memory")

// ErrUnknownSeq is returned (wrapped) for a SeqID the cache does not hold.
var ErrUnknownSeq = errors.New("unknown sequence")

// Layers is the part of a cache that a model uses during a forward step. Append and
// Attend of different sequences may be called concurrently (a model attends the
// sequences of a step in parallel); calls for one sequence must not overlap.
//
// Shapes: a token's keys or values for one layer are kvHeads·headDim float32 laid out
// head after head; its queries are heads·headDim. Keys arrive after RoPE at the
// sequence's logical position (see Sequences.Len).
type Layers interface {
	// Append stores the keys and values of the n tokens reserved by the last Grow of
	// seq, for one layer. k and v hold n·kvHeads·headDim values, token after token.
	// Every layer must be appended exactly once per Grow, before Attend of that layer,
	// and a layer's Attend must come before the Append of another layer of the same
	// sequence (the order of a forward pass): a cache may keep the step's
	// full-precision rows for one layer at a time. Rows holding a NaN or an infinity
	// are refused with ErrNonFinite before anything is written.
	Append(layer int, seq SeqID, k, v []float32) error

	// Attend computes causal attention for the n queries of the tokens reserved by the
	// last Grow of seq, over the sequence's history including those n tokens: query i
	// (position Len−n+i) sees positions ≤ its own. q holds n·heads·headDim values and out
	// receives n·heads·headDim. Scores are scaled by 1/sqrt(headDim). The result equals
	// n single-token steps: a token that a codec keeps in full precision only while it
	// is recent is seen by each query as it was at that query's position.
	Attend(layer int, seq SeqID, q, out []float32) error
}

// Sequences is the part of a cache that an owner of sequences uses between forward steps.
type Sequences interface {
	// NewSeq creates an empty sequence.
	NewSeq() (SeqID, error)
	// Drop frees a sequence and its memory. Dropping an unknown sequence is an error.
	Drop(seq SeqID) error
	// Fork creates a sequence whose history equals src's, sharing its memory where the
	// layout allows (copy-on-write); later writes to either do not affect the other.
	Fork(src SeqID) (SeqID, error)
	// Grow reserves room for the given new tokens of seq (their ids identify full blocks
	// for prefix sharing; Store.GrowWithoutTokens grows rows that have none). The next
	// forward step must Append and Attend exactly len(tokens) rows per layer for seq.
	// On ErrNoSpace nothing is reserved.
	Grow(seq SeqID, tokens []int32) error
	// Truncate shortens seq to its first n tokens (n ≤ Len). Except while a step is
	// half appended (some layers have appended its rows, others not: an error), it is
	// always possible right after Grow, before any Append, which undoes that Grow, and
	// to 0. A cache that keeps recent tokens in full precision may refuse other
	// lengths whose full-precision rows it no longer holds (an error; nothing changed).
	Truncate(seq SeqID, n int) error
	// Len is the number of tokens in seq's history, counting those reserved by Grow.
	Len(seq SeqID) int
	// Usage reports memory figures.
	Usage() Usage
}

// Cache is a complete KV cache.
type Cache interface {
	Layers
	Sequences
}

// Usage is a cache's memory state, in bytes unless stated otherwise.
type Usage struct {
	Sequences   int   // live sequences
	Tokens      int   // tokens held across live sequences (shared tokens counted per sequence)
	AllocBytes  int64 // bytes of storage allocated for K and V (codes, scales, zeros, residual)
	BudgetBytes int64 // byte budget; 0 means unlimited
	// BytesPerToken is the steady-state storage of one token over all layers (codes,
	// scales and zeros), without the fixed per-sequence full-precision residual.
	BytesPerToken float64
}
