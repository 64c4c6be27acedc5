package model

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"kvq/kv"
)

// runPassBatch runs, with pass size pass on a fresh cache for spec, a batch that
// mixes a continued sequence, spans with all logits and a span with the last logits
// only, then one decode step per sequence. It returns the logits of both calls
// (copied), the cache and the sequences.
func runPassBatch(t *testing.T, m *Model, spec string, pass int) ([][]float32, kv.Cache, []kv.SeqID) {
	t.Helper()
	cfg, err := m.CacheConfig(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]kv.SeqID, 3)
	for i := range seqs {
		if seqs[i], err = c.NewSeq(); err != nil {
			t.Fatal(err)
		}
	}
	m.PassTokens = pass
	defer func() { m.PassTokens = 0 }()
	// Sequence 2 has a history before the batch.
	if _, err := m.Forward(c, []Span{{Seq: seqs[2], Tokens: tokensFrom(m, 11, 3)}}); err != nil {
		t.Fatal(err)
	}
	batch := []Span{
		{Seq: seqs[0], Tokens: tokensFrom(m, 50, 1), AllLogits: true},
		{Seq: seqs[1], Tokens: tokensFrom(m, 23, 2)},
		{Seq: seqs[2], Tokens: tokensFrom(m, 37, 4), AllLogits: true},
	}
	out, err := m.Forward(c, batch)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]float32
	for _, o := range out {
		got = append(got, append([]float32(nil), o...))
	}
	// One decode step of each sequence after the batch reads what the passes stored.
	dec := []Span{{Seq: seqs[0], Tokens: []int32{7}}, {Seq: seqs[1], Tokens: []int32{8}}, {Seq: seqs[2], Tokens: []int32{9}}}
	if out, err = m.Forward(c, dec); err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		got = append(got, append([]float32(nil), o...))
	}
	return got, c, seqs
}

func tokensFrom(m *Model, n, seed int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32((i*7919 + seed*104729 + 13) % m.Vocab)
	}
	return t
}

// TestPassesEqualOneStep checks that a batch run in passes of any size gives the
// logits of the same batch run as one step, and leaves a cache from which the next
// decode step gives the same logits, for exact and lossy caches.
func TestPassesEqualOneStep(t *testing.T) {
	m := loadDefault(t)
	// kivi4/kivi2 with r=128 keeps these short histories' values in full precision:
	// with a shorter window, a pass's different summation order may move a value
	// across a 2-bit rounding boundary, which the tolerance below is not for.
	for _, spec := range []string{"f32", "f16", "q8", "q4", "kivi4/kivi2:r=128"} {
		want, wc, wseqs := runPassBatch(t, m, spec, 1<<20)
		for _, pass := range []int{1, 3, 16, 49, 64} {
			t.Run(fmt.Sprintf("%s/pass%d", spec, pass), func(t *testing.T) {
				got, c, seqs := runPassBatch(t, m, spec, pass)
				if len(got) != len(want) {
					t.Fatalf("%d logits slices, want %d", len(got), len(want))
				}
				for i := range want {
					if len(got[i]) != len(want[i]) {
						t.Fatalf("slice %d: %d logits, want %d", i, len(got[i]), len(want[i]))
					}
					var worst float64
					for j := range want[i] {
						worst = max(worst, math.Abs(float64(got[i][j]-want[i][j])))
					}
					// Passes change only the summation order of a few products.
					if worst > 1e-3 {
						t.Errorf("slice %d: logits differ by up to %g", i, worst)
					}
				}
				for i := range seqs {
					if c.Len(seqs[i]) != wc.Len(wseqs[i]) {
						t.Errorf("sequence %d: Len %d, want %d", i, c.Len(seqs[i]), wc.Len(wseqs[i]))
					}
				}
			})
		}
	}
}

// TestPassesRespectBudget checks that on a cache with a budget a batch longer than a
// pass still runs as one step: it fits a budget of exactly its one-step cost (passes
// can need more), and one byte less fails before any change with kv.ErrNoSpace.
func TestPassesRespectBudget(t *testing.T) {
	m := loadDefault(t)
	m.PassTokens = 8
	defer func() { m.PassTokens = 0 }()
	for _, spec := range []string{"f16", "kivi4/kivi2"} {
		t.Run(spec, func(t *testing.T) {
			cfg, err := m.CacheConfig(spec, "")
			if err != nil {
				t.Fatal(err)
			}
			probe, err := kv.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ps, _ := probe.NewSeq()
			// More than one block: one byte short of the cost is still a valid budget.
			toks := tokensFrom(m, kv.DefaultBlockTokens+36, 5)
			cost, err := probe.GrowCost(ps, len(toks))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				budget int64
				ok     bool
			}{{cost, true}, {cost - 1, false}} {
				cfg.BudgetBytes = tc.budget
				c, err := kv.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				seq, _ := c.NewSeq()
				_, err = m.Forward(c, []Span{{Seq: seq, Tokens: toks}})
				switch {
				case tc.ok && err != nil:
					t.Errorf("budget %d: %v", tc.budget, err)
				case !tc.ok && !errors.Is(err, kv.ErrNoSpace):
					t.Errorf("budget %d: err %v, want kv.ErrNoSpace", tc.budget, err)
				case !tc.ok && (c.Len(seq) != 0 || c.Usage().AllocBytes != 0):
					t.Errorf("budget %d: failed step left Len %d, %d bytes", tc.budget, c.Len(seq), c.Usage().AllocBytes)
				case tc.ok && c.Len(seq) != len(toks):
					t.Errorf("budget %d: Len %d, want %d", tc.budget, c.Len(seq), len(toks))
				}
			}
		})
	}
}

// failingCache fails the Grow calls after the first okGrows with kv.ErrNoSpace.
type failingCache struct {
	kv.Cache
	okGrows int
}

func (f *failingCache) Grow(seq kv.SeqID, tokens []int32) error {
	if f.okGrows == 0 {
		return fmt.Errorf("test: %w", kv.ErrNoSpace)
	}
	f.okGrows--
	return f.Cache.Grow(seq, tokens)
}

// TestPassFailureRollsBack checks that when a pass after the first fails, the
// sequences are cut back to their lengths before the call and the error still says
// kv.ErrNoSpace, or, where the cache cannot cut back, that the error does not claim
// that nothing changed.
func TestPassFailureRollsBack(t *testing.T) {
	m := loadDefault(t)
	m.PassTokens = 8
	defer func() { m.PassTokens = 0 }()
	for _, spec := range []string{"f32", "q8", "kivi4/kivi2"} {
		t.Run(spec, func(t *testing.T) {
			c, seq := newCache(t, m, spec)
			if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: tokensFrom(m, 5, 1)}}); err != nil {
				t.Fatal(err)
			}
			fc := &failingCache{Cache: c, okGrows: 3}
			_, err := m.Forward(fc, []Span{{Seq: seq, Tokens: tokensFrom(m, 40, 2)}})
			if err == nil {
				t.Fatal("no error from a failing pass")
			}
			if errors.Is(err, kv.ErrNoSpace) {
				if c.Len(seq) != 5 {
					t.Fatalf("error %v claims nothing changed, but Len is %d, want 5", err, c.Len(seq))
				}
				// The sequence goes on as if the failed call never happened.
				if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: tokensFrom(m, 3, 3)}}); err != nil {
					t.Fatal(err)
				}
			} else if c.Len(seq) == 5 {
				t.Fatalf("rolled back, but error %v does not wrap kv.ErrNoSpace", err)
			}
		})
	}
}

// A batch naming one sequence twice is refused before anything changes (its spans
// would be placed at stale positions).
func TestForwardRejectsRepeatedSequence(t *testing.T) {
	m := loadDefault(t)
	c, seq := newCache(t, m, "f16")
	_, err := m.Forward(c, []Span{{Seq: seq, Tokens: []int32{1, 2, 3}}, {Seq: seq, Tokens: []int32{4, 5}}})
	if err == nil || !strings.Contains(err.Error(), "appears in spans 0 and 1") {
		t.Fatalf("Forward with a repeated sequence: %v, want a refusal naming both spans", err)
	}
	if n := c.Len(seq); n != 0 {
		t.Fatalf("refused batch left %d tokens in the cache", n)
	}
}
