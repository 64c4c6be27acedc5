package kv

import (
	"fmt"
	"sync"

	"kvq/attn"
)

// BatchAttender is a cache that attends the sequences of one step together
// (Store): a model calls AttendBatch once per layer, after every sequence's Append
// of that layer, instead of Attend per sequence.
type BatchAttender interface {
	// AttendBatch is Attend for each seqs[i] with queries q[i] into out[i]; each
	// sequence's result is the bits Attend gives it. The sequences must differ.
	AttendBatch(layer int, seqs []SeqID, q, out [][]float32) error
}

var _ BatchAttender = (*Store)(nil)

// batchState is AttendBatch's scratch and counters, guarded by mu.
type batchState struct {
	mu        sync.Mutex
	sc        attn.BatchScratch
	views     [][]attn.Span
	q, out    [][]float32
	stats     attn.BatchStats // AttendBatch's decode queries since the Store was made
	decodeIDs []SeqID
}

// AttendStats returns the work of AttendBatch's one-token queries (decode steps)
// since the Store was made: the sum of the statistics of its attn.DecodeBatch calls.
func (st *Store) AttendStats() attn.BatchStats {
	st.batch.mu.Lock()
	defer st.batch.mu.Unlock()
	return st.batch.stats
}

// AttendBatch implements BatchAttender. Sequences attending one token each (decode)
// go through attn.DecodeBatch: sequences whose block tables begin with the same
// blocks, read in place (forks, an adopted prefix), have that part of their
// history computed once for all of them (cascade attention, see there); the others,
// and sequences with several tokens this step, are attended as Attend does.
func (st *Store) AttendBatch(layer int, ids []SeqID, q, out [][]float32) error {
	if len(q) != len(ids) || len(out) != len(ids) {
		return fmt.Errorf("kv: attend batch layer %d: %d sequences, %d queries, %d outputs", layer, len(ids), len(q), len(out))
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	b := &st.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	b.views, b.q, b.out, b.decodeIDs = b.views[:0], b.q[:0], b.out[:0], b.decodeIDs[:0]
	for i, id := range ids {
		for _, other := range ids[:i] {
			if other == id {
				return fmt.Errorf("kv: attend batch layer %d: sequence %d given twice", layer, id)
			}
		}
		s, err := st.attendSeq(layer, id, q[i], out[i])
		if err != nil {
			return err
		}
		if s.pending != 1 {
			if err := attn.Prefill(out[i], q[i], s.pending, st.shape, s.view, st.opts, &s.sc); err != nil {
				return fmt.Errorf("kv: attend sequence %d layer %d at position %d: %w", id, layer, s.base, err)
			}
			continue
		}
		k := len(b.views)
		if k < cap(b.views) {
			b.views = b.views[:k+1]
		} else {
			b.views = append(b.views, nil)
		}
		b.views[k] = st.spans(b.views[k][:0], s, layer, s.base)
		b.q, b.out, b.decodeIDs = append(b.q, q[i]), append(b.out, out[i]), append(b.decodeIDs, id)
	}
	if len(b.views) == 0 {
		return nil
	}
	if err := attn.DecodeBatch(b.out, b.q, st.shape, b.views, st.opts, &b.sc); err != nil {
		return fmt.Errorf("kv: attend batch layer %d (sequences %v): %w", layer, b.decodeIDs, err)
	}
	b.stats.Add(b.sc.Stats())
	return nil
}
