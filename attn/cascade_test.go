package attn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"kvq/quant"
)

// cutAtBatches splits spans at every multiple of BatchTokens positions, as package
// kv cuts them.
func cutAtBatches(spans []Span) []Span {
	var out []Span
	for _, s := range spans {
		for s.N > 0 {
			n := min(s.N, (s.Pos/BatchTokens+1)*BatchTokens-s.Pos)
			a := s
			a.N = n
			out = append(out, a)
			s.Pos += n
			s.N -= n
			s.K, s.V = advance(s.K, n), advance(s.V, n)
		}
	}
	return out
}

// advance returns src moved on by n tokens.
func advance(c Src, n int) Src {
	switch c.Kind {
	case F32:
		c.F = c.F[min(len(c.F), n*c.Stride):]
	case Rows:
		c.Bytes = c.Bytes[min(len(c.Bytes), n*c.Stride):]
	case Channel:
		c.Off += n
		c.Bytes = c.Bytes[min(len(c.Bytes), c.Off/c.G*c.Stride):]
		c.Off %= c.G
	}
	return c
}

// moved returns spans with their positions moved on by d.
func moved(spans []Span, d int) []Span {
	out := append([]Span(nil), spans...)
	for i := range out {
		out[i].Pos += d
	}
	return out
}

// TestDecodeBatchIsDecode: views sharing a stored prefix (the same spans, then each
// its own), computed together, give each query the bits of its own Decode, for every
// storage kind, grouped-query shapes, chunk lengths and worker counts, under the SIMD
// and the scalar kernels (whose calls may take every sharer's queries at once); the
// shared part is read once for all queries of a group. A view over other storage
// is decoded alone beside them.
func TestDecodeBatchIsDecode(t *testing.T) {
	defer SetSIMD(KernelName() != "scalar")
	for _, simd := range []bool{true, false} {
		SetSIMD(simd)
		r := rand.New(rand.NewPCG(7, 3))
		shapes := []Shape{{Heads: 4, KVHeads: 4, HeadDim: 64}, {Heads: 6, KVHeads: 2, HeadDim: 16}}
		for si, sh := range shapes {
			for ki, kk := range sideKinds {
				vk := sideKinds[(ki+si)%7]
				name := fmt.Sprintf("%s/%dx%dx%d/%s-%s", KernelName(), sh.Heads, sh.KVHeads, sh.HeadDim, kk.name, vk.name)
				t.Run(name, func(t *testing.T) {
					testDecodeBatch(t, r, sh, kk, vk)
				})
			}
		}
	}
}

func testDecodeBatch(t *testing.T, r *rand.Rand, sh Shape, kk, vk sideKind) {
	hd := sh.Heads * sh.HeadDim
	long := 512 + 1 + r.IntN(200) // stored in common; shared up to 512
	common := cutAtBatches(buildHistory(r, sh, long, 48, kk, vk).spans)
	const sharers = 5
	var views [][]Span
	for j := range sharers {
		own := cutAtBatches(buildHistory(r, sh, 1+r.IntN(300), 48, kk, vk).spans)
		v := append([]Span(nil), common...)
		if j == sharers-1 {
			v = v[:batchCut(v, len(v))] // no own spans past the shared part
		} else {
			v = append(v, cutAtBatches(moved(own, long))...)
		}
		views = append(views, v)
	}
	views = append(views, cutAtBatches(buildHistory(r, sh, 300, 48, kk, vk).spans)) // alone
	n := len(views)
	q, out, want := make([][]float32, n), make([][]float32, n), make([][]float32, n)
	for _, ct := range []int{0, 256, 512} {
		opt := Options{ChunkTokens: ct, Workers: 1}
		wantRows := int64(0)
		for i := range views {
			q[i] = randVec(r, hd, 1)
			want[i] = make([]float32, hd)
			if err := Decode(want[i], q[i], sh, views[i], opt, nil); err != nil {
				t.Fatal(err)
			}
			wantRows += int64(viewTokens(views[i]) * sh.KVHeads)
		}
		// The part shared: the common spans up to the last multiple of BatchTokens
		// one ends at (512, unless a channel codec's span leaves positions out).
		shared := views[sharers-1]
		sharedRows, wantShared := int64(viewTokens(shared)*sh.KVHeads), sharers
		if len(shared) == 0 {
			wantShared = 0
		}
		wantRows -= (sharers - 1) * sharedRows
		for _, workers := range []int{1, 2, 3} {
			var sc BatchScratch
			for i := range out {
				out[i] = make([]float32, hd)
			}
			opt.Workers = workers
			if err := DecodeBatch(out, q, sh, views, opt, &sc); err != nil {
				t.Fatal(err)
			}
			for i := range out {
				for c := range out[i] {
					if math.Float32bits(out[i][c]) != math.Float32bits(want[i][c]) {
						t.Fatalf("chunks %d, workers %d: query %d value %d: %v, its Decode %v", ct, workers, i, c, out[i][c], want[i][c])
					}
				}
			}
			st := sc.Stats()
			attended := wantRows + (sharers-1)*sharedRows
			if st.Queries != int64(n) || st.SharedQueries != int64(wantShared) || st.Rows != wantRows || st.SharedRows != sharedRows || st.AttendedRows != attended {
				t.Errorf("chunks %d, workers %d: stats %+v, want %d queries, %d shared, %d rows attended, %d read of which %d shared",
					ct, workers, st, n, wantShared, attended, wantRows, sharedRows)
			}
		}
	}
}

// TestSharedSpans: only identical leading spans are shared, cut back to a multiple
// of BatchTokens positions.
func TestSharedSpans(t *testing.T) {
	buf := make([]byte, 4096)
	mk := func(pos, n, off int) Span {
		return Span{Pos: pos, N: n, K: Src{Kind: Rows, Row: quant.Int8{}, Bytes: buf[off:], Stride: 1}, V: Src{Kind: Rows, Row: quant.Int8{}, Bytes: buf[off+1:], Stride: 1}}
	}
	a0, a1, a2 := mk(0, 256, 0), mk(256, 100, 256), mk(356, 156, 356)
	other := mk(356, 156, 999)
	rot := a1
	rot.Delta = -3
	cases := []struct {
		name string
		a, b []Span
		want int
	}{
		{"same", []Span{a0, a1, a2}, []Span{a0, a1, a2}, 3},
		{"cut back to 256", []Span{a0, a1, a2}, []Span{a0, a1, other}, 1},
		{"first differs", []Span{a0}, []Span{mk(0, 256, 1)}, 0},
		{"delta differs", []Span{a0, a1}, []Span{a0, rot}, 1},
		{"short of 256", []Span{mk(0, 100, 0)}, []Span{mk(0, 100, 0)}, 0},
		{"one ends", []Span{a0}, []Span{a0, a1}, 1},
		{"empty", nil, []Span{a0}, 0},
	}
	for _, c := range cases {
		if got := SharedSpans(c.a, c.b); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestDecodeBatchFirstError: of the views computed alone, the first whose query
// fails is the one DecodeBatch reports, whichever worker took it, on every call.
func TestDecodeBatchFirstError(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	sh := Shape{Heads: 2, KVHeads: 2, HeadDim: 16}
	hd := sh.Heads * sh.HeadDim
	const n = 8
	views, q, out := make([][]Span, n), make([][]float32, n), make([][]float32, n)
	for i := range views {
		views[i] = buildHistory(r, sh, 64+16*i, 48, sideKinds[2], sideKinds[2]).spans
		q[i], out[i] = randVec(r, hd, 1), make([]float32, hd)
	}
	views[3][0].Delta, views[6][0].Delta = 1, 2 // a delta with no Options.Rotate
	var sc BatchScratch
	for range 200 {
		err := DecodeBatch(out, q, sh, views, Options{Workers: 2}, &sc)
		if !errors.Is(err, ErrShape) || !strings.HasPrefix(err.Error(), "query 3: ") {
			t.Fatalf("DecodeBatch: %v, want query 3's ErrShape", err)
		}
	}

	// The same for the queries of one group, over their own spans past the shared
	// ones.
	const long = 513 // shared up to 512
	common := cutAtBatches(buildHistory(r, sh, long, 48, sideKinds[2], sideKinds[2]).spans)
	for i := range views {
		own := cutAtBatches(buildHistory(r, sh, 40+8*i, 48, sideKinds[2], sideKinds[2]).spans)
		views[i] = append(append([]Span(nil), common...), cutAtBatches(moved(own, long))...)
	}
	views[3][len(common)].Delta, views[6][len(common)].Delta = 1, 2
	for range 200 {
		err := DecodeBatch(out, q, sh, views, Options{Workers: 2}, &sc)
		if !errors.Is(err, ErrShape) || !strings.HasPrefix(err.Error(), "query 3: ") {
			t.Fatalf("DecodeBatch of a group: %v, want query 3's ErrShape", err)
		}
		if st := sc.Stats(); st.SharedQueries != n {
			t.Fatalf("%d of %d queries in a group, want all", st.SharedQueries, n)
		}
	}
}
