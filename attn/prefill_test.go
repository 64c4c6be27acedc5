package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// prefixView appends to dst the spans of the first n tokens of spans (the last one
// cut short), the view a causal query at token n−1 has of a cache.
func prefixView(dst, spans []Span, n int) []Span {
	for _, s := range spans {
		if n <= 0 {
			break
		}
		s.N = min(s.N, n)
		n -= s.N
		dst = append(dst, s)
	}
	return dst
}

// TestPrefillTiles: queries scored together in tiles (views that are prefixes of
// each other) agree with the plain reference and with one Decode per query, for
// every storage kind, grouped-query shapes, tile sizes and worker counts; views
// that are not prefixes (a copy of the storage per query) take the per-query path
// and agree too.
func TestPrefillTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	shapes := []Shape{{Heads: 4, KVHeads: 4, HeadDim: 64}, {Heads: 6, KVHeads: 2, HeadDim: 16}, {Heads: 2, KVHeads: 1, HeadDim: 8}}
	for si, sh := range shapes {
		for ki, kk := range sideKinds {
			vk := sideKinds[(ki+si)%7] // values: any row kind
			ctx, n := 37+r.IntN(80), 1+r.IntN(35)
			name := fmt.Sprintf("%dx%dx%d/%s-%s/n%d", sh.Heads, sh.KVHeads, sh.HeadDim, kk.name, vk.name, n)
			t.Run(name, func(t *testing.T) {
				h := buildHistory(r, sh, ctx+n, 16, kk, vk)
				total := len(h.keys)
				base := total - n
				hd := sh.Heads * sh.HeadDim
				q := randVec(r, n*hd, 1)
				view := func(i int, dst []Span) []Span { return prefixView(dst, h.spans, base+i+1) }
				var ref []float32
				for i := 0; i < n; i++ {
					ref = append(ref, refAttendHist(kk, q[i*hd:(i+1)*hd], h, base+i+1, sh)...)
				}
				perQuery := make([]float32, n*hd)
				for i := 0; i < n; i++ {
					if err := Decode(perQuery[i*hd:(i+1)*hd], q[i*hd:(i+1)*hd], sh, view(i, nil), Options{Workers: 1}, nil); err != nil {
						t.Fatal(err)
					}
				}
				for _, workers := range []int{1, 2, 3} {
					out := make([]float32, n*hd)
					// Prefix views take the masked tile pass, which asks each query's
					// view once; the per-query path asks again to run its Decode.
					var calls atomic.Int64
					counted := func(i int, dst []Span) []Span { calls.Add(1); return view(i, dst) }
					if err := Prefill(out, q, n, sh, counted, Options{Workers: workers}, nil); err != nil {
						t.Fatal(err)
					}
					// A shared pass asks each query's view once; a last tile of one query is
					// a Decode, asked twice. Without a shared pass (storage whose kernels
					// depend on the queries sharing a call) a tile asks its last view, then
					// every query's for its Decode.
					shared := queriesIndependent(h.spans)
					want := int64(n)
					switch {
					case n > 1 && !shared:
						want = int64(n + (n+PrefillTile-1)/PrefillTile)
					case n > 1 && n%PrefillTile == 1:
						want++
					}
					if got := calls.Load(); got != want {
						t.Errorf("workers %d: %d view calls for %d queries, want %d (shared pass: %v)", workers, got, n, want, shared)
					}
					if !shared {
						// Each query is its own Decode: the same bits as alone.
						for i := range out {
							if math.Float32bits(out[i]) != math.Float32bits(perQuery[i]) {
								t.Fatalf("workers %d: value %d: %v, per-query Decode %v", workers, i, out[i], perQuery[i])
							}
						}
					}
					vr := valueRounding(vk, sh.HeadDim, h.vals)
					if e := maxDiff(out, ref); e > 5e-5+vr {
						t.Errorf("workers %d: max diff from reference %.3g", workers, e)
					}
					if e := maxDiff(out, perQuery); e > 1e-5+2*vr {
						t.Errorf("workers %d: max diff from per-query Decode %.3g", workers, e)
					}
				}
				// Views over private copies are not prefixes of each other: per-query path.
				copied := func(i int, dst []Span) []Span {
					dst = prefixView(dst, h.spans, base+i+1)
					for j := range dst {
						dst[j].K, dst[j].V = cloneSrc(dst[j].K), cloneSrc(dst[j].V)
					}
					return dst
				}
				out := make([]float32, n*hd)
				if err := Prefill(out, q, n, sh, copied, Options{Workers: 2}, nil); err != nil {
					t.Fatal(err)
				}
				if e := maxDiff(out, perQuery); e > 1e-5 {
					t.Errorf("private views: max diff from per-query Decode %.3g", e)
				}
			})
		}
	}
}

func cloneSrc(s Src) Src {
	s.F = append([]float32(nil), s.F...)
	s.Bytes = append([]byte(nil), s.Bytes...)
	return s
}

func TestPrefixOf(t *testing.T) {
	buf := make([]byte, 64)
	a := Span{Pos: 0, N: 16, K: Src{Kind: Rows, Bytes: buf, Stride: 4}, V: Src{Kind: Rows, Bytes: buf[32:], Stride: 4}}
	b := a
	b.Pos, b.N = 16, 5
	last := []Span{a, b}
	short := b
	short.N = 2
	moved := b
	moved.K.Bytes = buf[1:]
	rot := b
	rot.Delta = 3
	cases := []struct {
		name   string
		view   []Span
		tokens int
		ok     bool
	}{
		{"same", []Span{a, b}, 21, true},
		{"last shorter", []Span{a, short}, 18, true},
		{"first only", []Span{a}, 16, true},
		{"first cut", []Span{{Pos: 0, N: 3, K: a.K, V: a.V}}, 3, true},
		{"middle cut", []Span{{Pos: 0, N: 3, K: a.K, V: a.V}, b}, 0, false},
		{"other storage", []Span{a, moved}, 0, false},
		{"other delta", []Span{a, rot}, 0, false},
		{"longer", []Span{a, b, b}, 0, false},
		{"empty", nil, 0, false},
	}
	for _, c := range cases {
		tokens, ok := prefixOf(c.view, last)
		if ok != c.ok || (ok && tokens != c.tokens) {
			t.Errorf("%s: got (%d, %v), want (%d, %v)", c.name, tokens, ok, c.tokens, c.ok)
		}
	}
}
