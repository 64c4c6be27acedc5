package kv

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestErrorsNamePackageOnce: every failing call of the package returns one line
// that starts with "kv: " and names the package nowhere else, with the sentinel
// still found by errors.Is.
func TestErrorsNamePackageOnce(t *testing.T) {
	const layers, heads, kvh, d = 2, 4, 2, 8
	rowLen := kvh * d
	st := newFixture(t, "q8", layers, heads, kvh, d, 4, 0).st
	B := st.Config().BlockTokens

	// A store whose budget holds two blocks, one taken by a live sequence.
	small := newFixture(t, "q8", layers, heads, kvh, d, 4, 2*int64(st.BlockBytes())).st
	held, _ := small.NewSeq()
	fill(t, small, held, make([]int32, B))

	// A block of st to import into small while small has no block to free.
	toks := make([]int32, B)
	for i := range toks {
		toks[i] = int32(i + 1)
	}
	src, _ := st.NewSeq()
	fill(t, st, src, toks)
	other, _ := small.NewSeq()
	fill(t, small, other, make([]int32, 1)) // the second block
	blk, ok := st.ExportPrefixBlock(BlockHash(st.RootHash(), toks))
	if !ok {
		t.Fatal("the filled block is not exportable")
	}

	live, _ := st.NewSeq()
	if err := st.Grow(live, []int32{7}); err != nil {
		t.Fatal(err)
	}
	row := make([]float32, rowLen)
	nan := make([]float32, rowLen)
	nan[3] = float32(math.NaN())
	q := make([]float32, heads*d)
	dst := make([]float32, d)
	const unknown = SeqID(99)

	cases := []struct {
		name string
		err  error
		is   error // nil: no sentinel to find
	}{
		{"Drop unknown", st.Drop(unknown), ErrUnknownSeq},
		{"Fork unknown", second(st.Fork(unknown)), ErrUnknownSeq},
		{"Grow unknown", st.Grow(unknown, []int32{1}), ErrUnknownSeq},
		{"GrowWithoutTokens unknown", st.GrowWithoutTokens(unknown, 1), ErrUnknownSeq},
		{"GrowCost unknown", second(st.GrowCost(unknown, 1)), ErrUnknownSeq},
		{"Truncate unknown", st.Truncate(unknown, 0), ErrUnknownSeq},
		{"Tokens unknown", second(st.Tokens(unknown)), ErrUnknownSeq},
		{"Append unknown", st.Append(0, unknown, row, row), ErrUnknownSeq},
		{"Attend unknown", st.Attend(0, unknown, q, q), ErrUnknownSeq},
		{"ReadKey unknown", st.ReadKey(unknown, 0, 0, 0, dst), ErrUnknownSeq},
		{"ReadValue unknown", st.ReadValue(unknown, 0, 0, 0, dst), ErrUnknownSeq},
		{"ReadBlock unknown", second(st.ReadBlock(unknown, 0, nil)), ErrUnknownSeq},
		{"Evict unknown", second(st.Evict(unknown, 0, 4)), ErrUnknownSeq},
		{"LayerSpec bad layer", second(st.LayerSpec(layers)), nil},
		{"Append bad layer", st.Append(layers, live, row, row), nil},
		{"ReadKey bad layer", st.ReadKey(src, layers, 0, 0, dst), nil},
		{"Append short k", st.Append(0, live, row[:rowLen-1], row), nil},
		{"Append NaN", st.Append(0, live, row, nan), ErrNonFinite},
		{"Attend short out", st.Attend(0, src, q, q[:1]), nil},
		{"Grow beyond budget", small.Grow(held, make([]int32, 4*B)), ErrNoSpace},
		{"ImportPrefixBlock beyond budget", small.ImportPrefixBlock(blk), ErrNoSpace},
		{"New bad scale", second(New(Config{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8, Spec: Spec{K: Part{Type: TypeQ8, Scale: 2}, V: Part{Type: TypeQ8}}})), nil},
		{"ParseSpec", second(ParseSpec("q8:g=x")), nil},
		{"ParseLayerOverrides", second(ParseLayerOverrides("0=nope", 2)), nil},
		{"FP8Scale", second(FP8Scale(TypeQ8, 1)), nil},
		{"Calibrator.LayerSpecs", second(calibrated(t).LayerSpecs(TypeQ8, TypeFP8E4M3, 0)), nil},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		msg := c.err.Error()
		if !strings.HasPrefix(msg, "kv: ") || strings.Count(msg, "kv:") != 1 || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q: want one line naming \"kv:\" once, at the start", c.name, msg)
		}
		if c.is != nil && !errors.Is(c.err, c.is) {
			t.Errorf("%s: %q is not %v", c.name, msg, c.is)
		}
	}
	// A refused Grow changes nothing.
	if small.Len(held) != B {
		t.Errorf("held sequence has %d tokens after the refused Grow, want %d", small.Len(held), B)
	}
}

// fill grows id by toks and appends zero rows on every layer.
func fill(t *testing.T, st *Store, id SeqID, toks []int32) {
	t.Helper()
	if err := st.Grow(id, toks); err != nil {
		t.Fatal(err)
	}
	cfg := st.Config()
	rows := make([]float32, len(toks)*cfg.KVHeads*cfg.HeadDim)
	for l := range cfg.Layers {
		if err := st.Append(l, id, rows, rows); err != nil {
			t.Fatal(err)
		}
	}
}

// calibrated is a calibrator that saw one row of ones on each of two layers.
func calibrated(t *testing.T) *Calibrator {
	st := newFixture(t, "f32", 2, 2, 2, 8, 1, 0).st
	c := NewCalibrator(st, 2)
	id, _ := st.NewSeq()
	if err := st.Grow(id, []int32{1}); err != nil {
		t.Fatal(err)
	}
	ones := make([]float32, 16)
	for i := range ones {
		ones[i] = 1
	}
	for l := range 2 {
		if err := c.Append(l, id, ones, ones); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func second[T any](_ T, err error) error { return err }
