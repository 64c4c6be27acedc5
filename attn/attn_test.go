package attn

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/attnref"
	"kvq/quant"
)

// refAttend is the plain reference (package attnref): keys and values as float32
// matrices (token-major, kvHeads·d per token), naive softmax in float64.
func refAttend(q []float32, keys, vals [][]float32, sh Shape) []float32 {
	return attnref.Attend(q, keys, vals, sh.Heads, sh.KVHeads, sh.HeadDim)
}

// refAttendAs is refAttend for keys stored as kk, with the query the kernels score
// kk's rows against (quant.ScoredQuery: for 4-bit and 2-bit keys in groups of 32,
// its int8 round trip; for Int8 keys, its int16 round trip).
func refAttendAs(kk sideKind, q []float32, keys, vals [][]float32, sh Shape) []float32 {
	if kk.kind == Rows {
		q = quant.ScoredQuery(kk.row, q, sh.HeadDim)
	}
	return refAttend(q, keys, vals, sh)
}

// refAttendHist is refAttendAs over the first n tokens of h, for every key kind:
// keys of a Channel kind are scored as the kernels score their blocks
// (quant.ChannelScores, with the query scaled by 1/√d first, as Decode does).
func refAttendHist(kk sideKind, q []float32, h built, n int, sh Shape) []float32 {
	if kk.kind != Channel {
		return refAttendAs(kk, q, h.keys[:n], h.vals[:n], sh)
	}
	d, group := sh.HeadDim, sh.Heads/sh.KVHeads
	scale := float32(1 / math.Sqrt(float64(d)))
	qs := make([]float32, len(q))
	for i, x := range q {
		qs[i] = x * scale
	}
	logit := make([][]float64, sh.Heads)
	for i := range logit {
		logit[i] = make([]float64, n)
	}
	blk := make([]float64, kk.g)
	base := 0
	for _, s := range h.spans {
		k := &s.K
		bb := k.Chan.BlockBytes(k.G, d)
		for hq := range sh.Heads {
			kh := hq / group
			for i := 0; i < s.N && base+i < n; i++ {
				pos := k.Off + i
				if i == 0 || pos%k.G == 0 {
					block := k.Bytes[kh*k.HeadStride+pos/k.G*k.Stride:][:bb]
					quant.ChannelScores(k.Chan, blk, qs[hq*d:(hq+1)*d], block, k.G, d)
				}
				logit[hq][base+i] = blk[pos%k.G]
			}
		}
		base += s.N
	}
	return attnref.AttendScored(func(h, t int) float64 { return logit[h][t] }, h.vals[:n], sh.Heads, sh.KVHeads, d)
}

func randVec(r *rand.Rand, n int, amp float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * amp)
	}
	return x
}

// built is a history stored as spans, with what each token decodes to.
type built struct {
	spans      []Span
	keys, vals [][]float32 // dequantized, token-major
}

// storage kinds a test history can use for one side.
type sideKind struct {
	name string
	kind Kind
	row  quant.RowCodec
	ch   quant.ChannelCodec
	g    int
}

// buildHistory lays n random tokens out as spans of at most maxSpan tokens,
// head-major inside each span, with keys stored as kk and values as vk.
func buildHistory(r *rand.Rand, sh Shape, n, maxSpan int, kk, vk sideKind) built {
	d, kvh := sh.HeadDim, sh.KVHeads
	var b built
	for a := 0; a < n; {
		m := min(n-a, 1+r.IntN(maxSpan))
		if kk.kind == Channel {
			// Whole blocks of G tokens, the span starting at a random offset in the first.
			m = min(n-a, kk.g*(1+r.IntN(max(1, maxSpan/kk.g))))
		}
		raw := make([][]float32, m) // token-major
		for i := range raw {
			raw[i] = randVec(r, kvh*d, 1)
			// a few outlier channels, as real keys have
			raw[i][r.IntN(kvh*d)] *= 6
		}
		rawV := make([][]float32, m)
		for i := range rawV {
			rawV[i] = randVec(r, kvh*d, 1)
		}
		sp := Span{Pos: a, N: m}
		var kdec, vdec [][]float32
		sp.K, kdec = store(raw, kk, sh)
		sp.V, vdec = store(rawV, vk, sh)
		if kk.kind == Channel && m > 1 {
			// Drop a random number of leading tokens to exercise Off.
			off := r.IntN(min(m, kk.g))
			sp.K.Off = off
			sp.N = m - off
			sp.V = shift(sp.V, off, vk)
			kdec, vdec = kdec[off:], vdec[off:]
		}
		b.spans = append(b.spans, sp)
		b.keys = append(b.keys, kdec...)
		b.vals = append(b.vals, vdec...)
		a += m
	}
	return b
}

func shift(s Src, off int, k sideKind) Src {
	switch s.Kind {
	case F32:
		s.F = s.F[off*s.Stride:]
	case Rows:
		s.Bytes = s.Bytes[off*s.Stride:]
	}
	return s
}

// store encodes m tokens of one side head-major and returns the Src and the
// dequantized tokens.
func store(raw [][]float32, k sideKind, sh Shape) (Src, [][]float32) {
	d, kvh, m := sh.HeadDim, sh.KVHeads, len(raw)
	dec := make([][]float32, m)
	for i := range dec {
		dec[i] = make([]float32, kvh*d)
	}
	switch k.kind {
	case F32:
		// head-major with padding between heads, to exercise strides
		hs := m*d + 3
		f := make([]float32, kvh*hs)
		for h := 0; h < kvh; h++ {
			for i := 0; i < m; i++ {
				copy(f[h*hs+i*d:], raw[i][h*d:(h+1)*d])
				copy(dec[i][h*d:], raw[i][h*d:(h+1)*d])
			}
		}
		return Src{Kind: F32, F: f, HeadStride: hs, Stride: d}, dec
	case Rows:
		rb := k.row.RowBytes(d)
		buf := make([]byte, kvh*m*rb)
		for h := 0; h < kvh; h++ {
			for i := 0; i < m; i++ {
				row := buf[(h*m+i)*rb:][:rb]
				k.row.Encode(row, raw[i][h*d:(h+1)*d])
				k.row.Decode(dec[i][h*d:(h+1)*d], row)
			}
		}
		return Src{Kind: Rows, Row: k.row, Bytes: buf, HeadStride: m * rb, Stride: rb}, dec
	case Channel:
		G := k.g
		blocks := (m + G - 1) / G
		bb := k.ch.BlockBytes(G, d)
		buf := make([]byte, kvh*blocks*bb)
		tmp := make([]float32, G*d)
		out := make([]float32, G*d)
		for h := 0; h < kvh; h++ {
			for j := 0; j < blocks; j++ {
				clear(tmp)
				for i := 0; i < G && j*G+i < m; i++ {
					copy(tmp[i*d:], raw[j*G+i][h*d:(h+1)*d])
				}
				blk := buf[(h*blocks+j)*bb:][:bb]
				k.ch.Encode(blk, tmp, G, d)
				k.ch.Decode(out, blk, G, d)
				for i := 0; i < G && j*G+i < m; i++ {
					copy(dec[j*G+i][h*d:], out[i*d:(i+1)*d])
				}
			}
		}
		return Src{Kind: Channel, Chan: k.ch, G: G, Bytes: buf, HeadStride: blocks * bb, Stride: bb}, dec
	}
	return Src{}, nil
}

var sideKinds = []sideKind{
	{name: "f32", kind: F32},
	{name: "rowf32", kind: Rows, row: quant.F32{}},
	{name: "f16", kind: Rows, row: quant.F16{}},
	{name: "q8", kind: Rows, row: quant.Int8{}},
	{name: "q4g32", kind: Rows, row: quant.Affine{Bits: 4, Group: 32}},
	{name: "q2", kind: Rows, row: quant.Affine{Bits: 2}},
	{name: "fp8", kind: Rows, row: quant.FP8{Format: quant.E4M3}},
	{name: "kivi4", kind: Channel, ch: quant.Channel{Bits: 4}, g: 8},
	{name: "kivi2", kind: Channel, ch: quant.Channel{Bits: 2}, g: 32},
}

// valueRounding is how far the value kernels' rounding may move an attention output
// over the values vals stored as vk (quant.AddRowsRounding): f times the largest
// group range, at most twice the largest magnitude (2.01: the scale's f16 rounding).
func valueRounding(vk sideKind, d int, vals [][]float32) float64 {
	if vk.kind != Rows {
		return 0
	}
	var m float64
	for _, v := range vals {
		for _, x := range v {
			m = math.Max(m, math.Abs(float64(x)))
		}
	}
	return quant.AddRowsRounding(vk.row, d) * 2.01 * m
}

func maxDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// TestDecodeMatchesReference: the fused kernel over stored bytes equals the float64
// reference over the dequantized history, for every storage kind, head size, GQA
// ratio, chunking and worker count.
func TestDecodeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var sc Scratch
	for _, d := range []int{8, 16, 64, 128} {
		for _, ratio := range []int{1, 2, 4, 7} {
			for _, n := range []int{1, 31, 33, 300} {
				for ki, kk := range sideKinds {
					vk := sideKinds[(ki+d+ratio)%len(sideKinds)]
					if vk.kind == Channel {
						vk = sideKinds[2]
					}
					sh := Shape{Heads: 2 * ratio, KVHeads: 2, HeadDim: d}
					if testing.Short() && d == 128 && n == 300 {
						continue
					}
					h := buildHistory(r, sh, n, 40, kk, vk)
					q := randVec(r, sh.Heads*d, 1)
					want := refAttendHist(kk, q, h, len(h.keys), sh)
					// Workers 2 with one chunk splits the KV heads between the workers.
					for _, opt := range []Options{{}, {ChunkTokens: 17}, {ChunkTokens: 50, Workers: 3}, {Workers: 2}} {
						got := make([]float32, len(want))
						if err := Decode(got, q, sh, h.spans, opt, &sc); err != nil {
							t.Fatalf("d=%d ratio=%d n=%d K=%s V=%s: %v", d, ratio, n, kk.name, vk.name, err)
						}
						if e := maxDiff(got, want); e > 2e-5+valueRounding(vk, d, h.vals) {
							t.Errorf("d=%d ratio=%d n=%d K=%s V=%s opt=%+v: max |fused−ref| = %.3g", d, ratio, n, kk.name, vk.name, opt, e)
						}
						// The rows' codecs resolved once (Src.Plan): the same bits.
						planned := make([]float32, len(want))
						if err := Decode(planned, q, sh, withPlans(t, h.spans, d), opt, &sc); err != nil {
							t.Fatalf("d=%d ratio=%d n=%d K=%s V=%s with plans: %v", d, ratio, n, kk.name, vk.name, err)
						}
						for i := range got {
							if math.Float32bits(planned[i]) != math.Float32bits(got[i]) {
								t.Fatalf("d=%d ratio=%d n=%d K=%s V=%s opt=%+v: out[%d] with plans %v, without %v", d, ratio, n, kk.name, vk.name, opt, i, planned[i], got[i])
							}
						}
					}
				}
			}
		}
	}
}

// withPlans returns a copy of spans whose Rows sources carry their codec's plan for
// head size d, one plan per codec shared by the spans, as a cache layer's are.
func withPlans(t *testing.T, spans []Span, d int) []Span {
	out := append([]Span(nil), spans...)
	plans := map[quant.RowCodec]*quant.RowPlan{}
	for i := range out {
		for _, src := range []*Src{&out[i].K, &out[i].V} {
			if src.Kind != Rows {
				continue
			}
			p := plans[src.Row]
			if p == nil {
				var err error
				if p, err = quant.NewRowPlan(src.Row, d); err != nil {
					t.Fatal(err)
				}
				plans[src.Row] = p
			}
			src.Plan = p
		}
	}
	return out
}

// TestRotateDelta: a span with Delta scores the rotated query; here Rotate scales
// by a factor, so the result must equal the reference with those keys scaled.
func TestRotateDelta(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sh := Shape{Heads: 4, KVHeads: 2, HeadDim: 16}
	h := buildHistory(r, sh, 64, 16, sideKinds[0], sideKinds[0])
	for i := range h.spans {
		if i%2 == 1 {
			h.spans[i].Delta = 2
		}
	}
	rot := func(x []float32, delta int) {
		for i := range x {
			x[i] *= float32(delta)
		}
	}
	keys := make([][]float32, len(h.keys))
	tok := 0
	for i, s := range h.spans {
		for j := 0; j < s.N; j++ {
			keys[tok] = append([]float32(nil), h.keys[tok]...)
			if i%2 == 1 {
				for c := range keys[tok] {
					keys[tok][c] *= 2
				}
			}
			tok++
		}
	}
	q := randVec(r, sh.Heads*sh.HeadDim, 1)
	want := refAttend(q, keys, h.vals, sh)
	got := make([]float32, len(want))
	for _, opt := range []Options{{Rotate: rot, ChunkTokens: 20}, {Rotate: rot, Workers: 2}} {
		if err := Decode(got, q, sh, h.spans, opt, nil); err != nil {
			t.Fatal(err)
		}
		if e := maxDiff(got, want); e > 1e-5 {
			t.Errorf("%+v: max diff %.3g", opt, e)
		}
	}
	if err := Decode(got, q, sh, h.spans, Options{}, nil); !errors.Is(err, ErrShape) {
		t.Errorf("delta without Rotate: got %v, want ErrShape", err)
	}

	// q4 keys whose plan prepares the queries (int8 per group of 32): the spans
	// with a Delta must be scored with the rotated query's preparation, so Decode
	// with plans equals Decode without, bit for bit.
	sh = Shape{Heads: 8, KVHeads: 2, HeadDim: 64}
	h = buildHistory(r, sh, 200, 16, sideKinds[4], sideKinds[4])
	for i := range h.spans {
		h.spans[i].Delta = i % 3
	}
	q = randVec(r, sh.Heads*sh.HeadDim, 1)
	want, got = make([]float32, len(q)), make([]float32, len(q))
	planned := withPlans(t, h.spans, sh.HeadDim)
	if planned[0].K.Plan.QueryFloats(sh.Heads/sh.KVHeads) == 0 && quant.KernelName() != "scalar" {
		t.Fatal("q4 keys in groups of 32: no prepared queries")
	}
	for _, opt := range []Options{{Rotate: rot, ChunkTokens: 64}, {Rotate: rot, Workers: 2}} {
		if err := Decode(want, q, sh, h.spans, opt, nil); err != nil {
			t.Fatal(err)
		}
		if err := Decode(got, q, sh, planned, opt, nil); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: out[%d] with plans %v, without %v", opt, i, got[i], want[i])
			}
		}
	}
}

// TestDecodeRejectsBadInput: bad shapes and spans that point outside their storage
// are errors, never panics.
func TestDecodeRejectsBadInput(t *testing.T) {
	sh := Shape{Heads: 4, KVHeads: 2, HeadDim: 8}
	q := make([]float32, 32)
	out := make([]float32, 32)
	ok := Span{N: 2, K: Src{Kind: F32, F: make([]float32, 32), HeadStride: 16, Stride: 8}, V: Src{Kind: F32, F: make([]float32, 32), HeadStride: 16, Stride: 8}}
	if err := Decode(out, q, sh, []Span{ok}, Options{}, nil); err != nil {
		t.Fatalf("valid span: %v", err)
	}
	short := ok
	short.N = 3
	chanV := ok
	chanV.V = Src{Kind: Channel, Chan: quant.Channel{Bits: 4}, G: 2, Bytes: make([]byte, 1000)}
	badOff := ok
	badOff.K = Src{Kind: Channel, Chan: quant.Channel{Bits: 4}, G: 2, Off: 2, Bytes: make([]byte, 1000)}
	plan16, err := quant.NewRowPlan(quant.Int8{}, 16)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		sh    Shape
		q     []float32
		spans []Span
	}{
		{"heads not multiple", Shape{Heads: 3, KVHeads: 2, HeadDim: 8}, q[:24], nil},
		{"zero dim", Shape{Heads: 4, KVHeads: 2}, q[:0], nil},
		{"short q", sh, q[:31], nil},
		{"span beyond storage", sh, q, []Span{short}},
		{"empty span", sh, q, []Span{{}}},
		{"channel values", sh, q, []Span{chanV}},
		{"offset ≥ G", sh, q, []Span{badOff}},
		{"no codec", sh, q, []Span{{N: 1, K: Src{Kind: Rows, Bytes: make([]byte, 100)}, V: ok.V}}},
		{"huge stride", sh, q, []Span{{N: 2, K: Src{Kind: F32, F: make([]float32, 32), HeadStride: 16, Stride: 1 << 62}, V: ok.V}}},
		{"huge head stride", sh, q, []Span{{N: 1, K: Src{Kind: Rows, Row: quant.Int8{}, Bytes: make([]byte, 100), HeadStride: 1 << 62}, V: ok.V}}},
		{"plan for another head size", sh, q, []Span{{N: 1, K: Src{Kind: Rows, Row: quant.Int8{}, Plan: plan16, Bytes: make([]byte, 100)}, V: ok.V}}},
	}
	for _, c := range cases {
		o := make([]float32, len(c.q))
		if err := Decode(o, c.q, c.sh, c.spans, Options{}, nil); !errors.Is(err, ErrShape) {
			t.Errorf("%s: got %v, want ErrShape", c.name, err)
		}
	}
}

// TestEmptyHistory gives zeros.
func TestEmptyHistory(t *testing.T) {
	sh := Shape{Heads: 2, KVHeads: 1, HeadDim: 4}
	out := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	if err := Decode(out, make([]float32, 8), sh, nil, Options{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, x := range out {
		if x != 0 {
			t.Fatalf("out = %v, want zeros", out)
		}
	}
}

// TestPrefillIsDecodePerQuery: Prefill gives each query the spans its callback
// returns; here query i sees the first i+1 tokens.
func TestPrefillIsDecodePerQuery(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	sh := Shape{Heads: 6, KVHeads: 3, HeadDim: 16}
	const n = 20
	h := buildHistory(r, sh, n, 1, sideKinds[3], sideKinds[4]) // one token per span
	q := randVec(r, n*sh.Heads*sh.HeadDim, 1)
	out := make([]float32, len(q))
	view := func(i int, dst []Span) []Span { return append(dst, h.spans[:i+1]...) }
	if err := Prefill(out, q, n, sh, view, Options{}, nil); err != nil {
		t.Fatal(err)
	}
	hd := sh.Heads * sh.HeadDim
	for i := 0; i < n; i++ {
		want := refAttendAs(sideKinds[3], q[i*hd:(i+1)*hd], h.keys[:i+1], h.vals[:i+1], sh)
		if e := maxDiff(out[i*hd:(i+1)*hd], want); e > 2e-5 {
			t.Errorf("query %d: max diff %.3g", i, e)
		}
	}
	par := make([]float32, len(out))
	if err := Prefill(par, q, n, sh, view, Options{Workers: 3}, nil); err != nil {
		t.Fatal(err)
	}
	if e := maxDiff(par, out); e != 0 {
		t.Errorf("parallel prefill differs by %.3g", e)
	}
	if err := Prefill(out, q[:hd], n, sh, view, Options{}, nil); !errors.Is(err, ErrShape) {
		t.Errorf("short q: %v, want ErrShape", err)
	}
}

func TestExp32(t *testing.T) {
	var worst float64
	for x := -87.0; x <= 0; x += 0.0137 {
		got := float64(exp32(float32(x)))
		want := math.Exp(float64(float32(x)))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Errorf("exp32 worst relative error %.3g on [-87, 0]", worst)
	}
	if exp32(0) != 1 || exp32(-100) != 0 || exp32(float32(math.Inf(-1))) != 0 {
		t.Errorf("exp32(0)=%v exp32(-100)=%v exp32(-Inf)=%v", exp32(0), exp32(-100), exp32(float32(math.Inf(-1))))
	}
}

// TestScaleTo: scaleTo gives every value the bits of x·s one at a time, for lengths
// below, at and past its eight-value step, and leaves dst past len(src) alone.
func TestScaleTo(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	for n := range 20 {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * 5)
		}
		s := float32(r.Float64() + 0.1)
		dst := make([]float32, n+3)
		for i := range dst {
			dst[i] = -7
		}
		scaleTo(dst, src, s)
		for i, x := range src {
			if want := x * s; math.Float32bits(dst[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], want)
			}
		}
		for i := n; i < len(dst); i++ {
			if dst[i] != -7 {
				t.Fatalf("n=%d: dst[%d] = %v written past src", n, i, dst[i])
			}
		}
	}
}
