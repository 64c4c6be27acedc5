package kv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"kvq/internal/attnref"
	"kvq/quant"
)

// This file is the cache conformance suite: every cache type × head sizes × GQA
// ratios × lengths. For each case the Store's fused attention is compared with a
// plain float64 reference over an independent simulation of what the cache type
// keeps (full precision or a codec round trip, per (query, token) pair), and a
// prefill of k tokens is compared with k single-token steps.

// refRow is the per-token codec a part uses for rows of d values, built here from
// the spec grammar, independently of the Store.
func refRow(t *testing.T, p Part, d int) quant.RowCodec {
	g := min(p.G, d)
	switch p.Type {
	case TypeF32:
		return quant.F32{}
	case TypeF16:
		return quant.F16{}
	case TypeBF16:
		return quant.BF16{}
	case TypeQ8:
		return quant.Int8{}
	case TypeFP8E4M3:
		return quant.FP8{Format: quant.E4M3}
	case TypeFP8E5M2:
		return quant.FP8{Format: quant.E5M2}
	case TypeQ4, TypeKIVI4:
		return quant.Affine{Bits: 4, Group: g}
	case TypeQ3, TypeKIVI3:
		return quant.Affine{Bits: 3, Group: g}
	case TypeQ2, TypeKIVI2:
		return quant.Affine{Bits: 2, Group: g}
	case TypeKIVI8:
		return quant.Affine{Bits: 8, Group: g}
	}
	t.Fatalf("no reference codec for %v", p.Type)
	return nil
}

// sim is the reference model of a cache's contents for one layer.
type sim struct {
	sp       Spec
	d, kvh   int
	k, v     [][]float32 // rows as read in full precision: the f16 round trip of the originals
	kq, vq   [][]float32 // rows after the compressed form's round trip
	kiviKeys bool
	vChan    bool       // values stored per channel over blocks of sp.V.G tokens
	kblocks  [][][]byte // KIVI keys: the encoded block of tokens [iG, (i+1)G) of head h at [i][h]
	// Keys stored before RoPE: kpos[j] is the decoded pre-RoPE key of position j
	// rotated to j in float64 with angles formed directly (refRoPE).
	rope *quant.RoPE
	// window, when positive, is the layer's attention window: the query at p sees
	// positions > p − window only.
	window int
	kpos   [][]float64
}

// refRoPE rotates x (heads of d values) to position pos in float64, the reference of
// keys stored before RoPE: pairs (2j, 2j+1), or (j, j+d/2) with neox, at angles
// pos·base^(−2j/d) formed directly.
func refRoPE(x []float32, d, pos int, neox bool) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	h := d / 2
	for hd := 0; hd < len(x); hd += d {
		for j := range h {
			s, c := math.Sincos(float64(pos) * math.Pow(ropeBase, -2*float64(j)/float64(d)))
			i0, i1 := hd+2*j, hd+2*j+1
			if neox {
				i0, i1 = hd+j, hd+j+h
			}
			a, b := out[i0], out[i1]
			out[i0], out[i1] = a*c-b*s, a*s+b*c
		}
	}
	return out
}

const ropeBase = 10000

// testRoPE is the rotation a conformance case with keys stored before RoPE uses:
// all d values rotated, NeoX pairs for head sizes of 16.
func testRoPE(t *testing.T, d int) *quant.RoPE {
	f := make([]float64, d/2)
	for j := range f {
		f[j] = math.Pow(ropeBase, -2*float64(j)/float64(d))
	}
	r, err := quant.NewRoPE(f, d == 16)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newSim(t *testing.T, sp Spec, d, kvh int, k, v [][]float32, rope *quant.RoPE) *sim {
	s := &sim{sp: sp, d: d, kvh: kvh, kiviKeys: sp.K.Type.IsKIVI(), vChan: sp.V.Type.ValuesPerChannel(), rope: rope}
	n := len(k)
	for j := range n {
		s.k = append(s.k, roundTrip(quant.F16{}, k[j], d))
		s.v = append(s.v, roundTrip(quant.F16{}, v[j], d))
	}
	s.kq = make([][]float32, n)
	s.vq = make([][]float32, n)
	if s.vChan {
		s.vq = blockRoundTrip(sp.V.Type.entry().Value(), s.v, sp.V.G, sp.Sinks, kvh, d)
	} else {
		vr := refRow(t, sp.V, d)
		for j := 0; j < n; j++ {
			s.vq[j] = roundTrip(vr, v[j], d)
		}
	}
	if !s.kiviKeys {
		kr := refRow(t, sp.K, d)
		for j := 0; j < n; j++ {
			s.kq[j] = roundTrip(kr, k[j], d)
		}
		return s
	}
	G := sp.K.G
	ch := quant.Channel{Bits: sp.K.Type.Bits()}
	buf := make([]byte, ch.BlockBytes(G, d))
	blk := make([]float32, G*d)
	out := make([]float32, G*d)
	for gs := 0; gs+G <= n; gs += G {
		for j := gs; j < gs+G; j++ {
			s.kq[j] = make([]float32, kvh*d)
		}
		for h := 0; h < kvh; h++ {
			for i := 0; i < G; i++ {
				src := gs + i
				if S := sp.Sinks; src < S && S < gs+G {
					src = S // sink keys are read in f32; their slots copy the first other key
				}
				copy(blk[i*d:], s.k[src][h*d:(h+1)*d]) // KIVI keys are encoded from their f16 rows
				if rope != nil {
					// Stored before RoPE: the Store's rotation back defines the codes.
					rope.Rotate(blk[i*d:(i+1)*d], 1, d, -src, 0)
				}
			}
			ch.Encode(buf, blk, G, d)
			ch.Decode(out, buf, G, d)
			if h == 0 {
				s.kblocks = append(s.kblocks, make([][]byte, kvh))
			}
			s.kblocks[gs/G][h] = append([]byte(nil), buf...)
			for i := 0; i < G; i++ {
				copy(s.kq[gs+i][h*d:], out[i*d:(i+1)*d])
			}
		}
		if rope != nil {
			for j := gs; j < gs+G; j++ {
				s.kpos = append(s.kpos, refRoPE(s.kq[j], d, j, rope.NeoX()))
			}
		}
	}
	return s
}

// blockRoundTrip returns the rows (kvh heads of d values, f16 round trips) of every
// whole block of G tokens as read back from their per-channel encoding by c, the
// positions below sinks in a block that also holds others encoded as its first
// other row (they are read in f16); rows of an unfinished block are nil.
func blockRoundTrip(c quant.ChannelCodec, rows [][]float32, G, sinks, kvh, d int) [][]float32 {
	out := make([][]float32, len(rows))
	buf := make([]byte, c.BlockBytes(G, d))
	blk, dec := make([]float32, G*d), make([]float32, G*d)
	for gs := 0; gs+G <= len(rows); gs += G {
		for j := gs; j < gs+G; j++ {
			out[j] = make([]float32, kvh*d)
		}
		for h := range kvh {
			for i := range G {
				src := gs + i
				if src < sinks && sinks < gs+G {
					src = sinks
				}
				copy(blk[i*d:], rows[src][h*d:(h+1)*d])
			}
			c.Encode(buf, blk, G, d)
			c.Decode(dec, buf, G, d)
			for i := range G {
				copy(out[gs+i][h*d:], dec[i*d:(i+1)*d])
			}
		}
	}
	return out
}

func roundTrip(c quant.RowCodec, x []float32, d int) []float32 {
	out := make([]float32, len(x))
	buf := make([]byte, c.RowBytes(d))
	for h := 0; h*d < len(x); h++ {
		c.Encode(buf, x[h*d:(h+1)*d])
		c.Decode(out[h*d:(h+1)*d], buf)
	}
	return out
}

// view returns the keys and values the query at position p sees, and for each key
// whether it is read coded (not in f32).
func (s *sim) view(p int) (keys, vals [][]float32, coded []bool) {
	S := s.sp.Sinks
	for j := s.first(p); j <= p; j++ {
		key := s.kq[j]
		f32 := j < S || (s.kiviKeys && j-j%s.sp.K.G+s.sp.K.G > p+1)
		if f32 {
			key = s.k[j]
		}
		coded = append(coded, !f32)
		val := s.vq[j]
		if j < S || (s.vChan && j-j%s.sp.V.G+s.sp.V.G > p+1) || (!s.vChan && s.sp.V.Type.IsKIVI() && j > p-s.sp.V.R) {
			val = s.v[j]
		}
		keys = append(keys, key)
		vals = append(vals, val)
	}
	return keys, vals, coded
}

// first is the first position the query at p attends to: p+1−window with an
// attention window, else 0. view's lists start there.
func (s *sim) first(p int) int {
	if s.window > 0 {
		return max(0, p+1-s.window)
	}
	return 0
}

// attend is the reference attention of the query q (heads·d values) at position p:
// coded Rows keys are scored against the query the kernels use for them
// (quant.ScoredQuery), coded KIVI keys as the kernels score their blocks
// (quant.ChannelScores, the query scaled by 1/√d first, as attention does), f32 ones
// against q.
func (s *sim) attend(t *testing.T, q []float32, p, heads int) []float32 {
	keys, vals, coded := s.view(p)
	lo := s.first(p) // view's index i is position lo+i
	if s.kiviKeys {
		d, G, group := s.d, s.sp.K.G, heads/s.kvh
		ch := quant.Channel{Bits: s.sp.K.Type.Bits()}
		scale := float32(1 / math.Sqrt(float64(d)))
		qs := make([]float32, len(q))
		for i, x := range q {
			qs[i] = x * scale
		}
		blk, lastH, lastB := make([]float64, G), -1, -1 // the scores of block lastB for head lastH
		intBlk := false                                 // whether the kernels score that block in integers
		qf := quant.ScoredQuery(quant.F16{}, q, d)
		return attnref.AttendScored(func(h, i int) float64 {
			kh, j := h/group, lo+i
			if coded[i] && s.rope != nil {
				// One query per KV head: the integer pair kernel's figures where it
				// takes the block (quant.ChannelScoresRoPE).
				if group == 1 {
					if h != lastH || j/G != lastB {
						intBlk = quant.ChannelScoresRoPE(ch, s.rope, blk, qs[h*d:(h+1)*d], s.kblocks[j/G][kh], G, d, j/G*G)
						lastH, lastB = h, j/G
					}
					if intBlk {
						return blk[j%G]
					}
				}
				var sum float64
				for c := range d {
					sum += float64(qs[h*d+c]) * s.kpos[j][kh*d+c]
				}
				return sum
			}
			if coded[i] {
				if h != lastH || j/G != lastB {
					quant.ChannelScores(ch, blk, qs[h*d:(h+1)*d], s.kblocks[j/G][kh], G, d)
					lastH, lastB = h, j/G
				}
				return blk[j%G]
			}
			var sum float64
			for c := range d {
				sum += float64(qf[h*d+c]) * float64(keys[i][kh*d+c])
			}
			return sum / math.Sqrt(float64(d))
		}, vals, heads, s.kvh, d)
	}
	qc := quant.ScoredQuery(refRow(t, s.sp.K, s.d), q, s.d)
	qf := quant.ScoredQuery(quant.F16{}, q, s.d)
	qFor := func(j int) []float32 {
		if coded[j] {
			return qc
		}
		return qf
	}
	return attnref.AttendWith(qFor, keys, vals, heads, s.kvh, s.d)
}

func randRows(r *rand.Rand, n, w int, outliers bool) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, w)
		for c := range rows[i] {
			rows[i][c] = float32(r.NormFloat64())
		}
		if outliers {
			rows[i][c0(w)] += 5 // a fixed outlier channel, as real keys have
		}
	}
	return rows
}

func c0(w int) int { return w / 3 }

func flat(rows [][]float32) []float32 {
	var out []float32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// grow reserves and appends tokens [a, b) of the history on every layer of seq.
func appendRange(t *testing.T, st *Store, id SeqID, k, v [][]float32, a, b int) {
	t.Helper()
	if err := st.Grow(id, make([]int32, b-a)); err != nil {
		t.Fatalf("grow [%d,%d): %v", a, b, err)
	}
	for l := 0; l < st.g.cfg.Layers; l++ {
		if err := st.Append(l, id, flat(k[a:b]), flat(v[a:b])); err != nil {
			t.Fatalf("append [%d,%d) layer %d: %v", a, b, l, err)
		}
	}
}

func attendRange(t *testing.T, st *Store, id SeqID, q [][]float32, a, b int) [][]float32 {
	t.Helper()
	hq := st.g.cfg.Heads * st.g.cfg.HeadDim
	out := make([]float32, (b-a)*hq)
	if err := st.Attend(0, id, flat(q[a:b]), out); err != nil {
		t.Fatalf("attend [%d,%d): %v", a, b, err)
	}
	res := make([][]float32, b-a)
	for i := range res {
		res[i] = out[i*hq : (i+1)*hq]
	}
	return res
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// conformanceSpecs: every type of the codec registry with default parameters, and
// variants that store keys before RoPE or move the full-precision windows into the
// tested positions.
var conformanceSpecs = func() []string {
	var specs []string
	for _, t := range Types() {
		specs = append(specs, t.String())
	}
	return append(specs, "kivi4/kivi2", "kivi2:rope=pre/kivi2", "kivi3:rope=pre,g=16/kivi2:r=8,sinks=3", "kivi2:rope=pre/chan2:g=16,sinks=3",
		"kivi2:g=16,r=8,sinks=3", "q4:g=8,sinks=2", "q8/kivi4:r=5", "kivi8/q8")
}()

func TestConformance(t *testing.T) {
	full := os.Getenv("KVQ_CONFORMANCE_FULL") == "1"
	lengths := []int{1, 31, 32, 33, 1000}
	for si, spec := range conformanceSpecs {
		sp, err := ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{8, 16, 64, 128} {
			for _, ratio := range []int{1, 2, 4, 7} {
				for _, L := range lengths {
					// Keep the suite fast: the longest history runs for every spec at
					// a rotating quarter of the (head size, ratio) pairs, all of them
					// with KVQ_CONFORMANCE_FULL=1; -short also drops head size 128.
					if L == 1000 && !full && ((d+ratio+si)%4 != 0 || testing.Short() && d == 128) {
						continue
					}
					name := fmt.Sprintf("%s/d%d/gqa%d/L%d", spec, d, ratio, L)
					runConformance(t, name, sp, d, ratio, L, 0, int64(si*1000+d*10+ratio+L))
				}
			}
		}
	}
}

// TestConformanceWindow is the suite for layers with an attention window: windows
// shorter than a block and than a KIVI group, ones that start mid-block, and one
// longer than the history.
func TestConformanceWindow(t *testing.T) {
	for si, spec := range conformanceSpecs {
		sp, err := ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 5, 37, 130, 400} {
			for _, d := range []int{16, 64} {
				name := fmt.Sprintf("%s/window%d/d%d", spec, w, d)
				runConformance(t, name, sp, d, 2, 300, w, int64(si*1000+w*10+d))
			}
		}
	}
}

func runConformance(t *testing.T, name string, sp Spec, d, ratio, L, window int, seed int64) {
	const kvh = 2
	heads := kvh * ratio
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	k := randRows(r, L, kvh*d, true)
	v := randRows(r, L, kvh*d, false)
	q := randRows(r, L, heads*d, false)
	var rope *quant.RoPE
	if sp.K.PreRoPE {
		rope = testRoPE(t, d)
	}
	cfg := Config{Layers: 1, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: sp, RoPE: rope}
	if window > 0 {
		cfg.Windows = []int{window}
	}
	st, err := New(cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ref := newSim(t, sp, d, kvh, k, v, rope)
	ref.window = window
	n := min(L, 37) // queries checked at the end of the history
	// Where the kernels round the products of the values' sums (AddRowsRounding), an
	// output may move by f times the largest group range of the values it averages.
	var vmax float64
	for _, rows := range [][][]float32{ref.v, ref.vq} {
		for _, row := range rows {
			for _, x := range row {
				vmax = math.Max(vmax, math.Abs(float64(x)))
			}
		}
	}
	var vround float64 // per-channel values are summed in float
	if !ref.vChan {
		vround = quant.AddRowsRounding(refRow(t, sp.V, d), d) * 2.01 * vmax
	}
	start := L - n

	// A: the history before start in one prefill, then one prefill step of n tokens.
	a, _ := st.NewSeq()
	if start > 0 {
		appendRange(t, st, a, k, v, 0, start)
	}
	appendRange(t, st, a, k, v, start, L)
	outA := attendRange(t, st, a, q, start, L)
	for i, o := range outA {
		p := start + i
		if L > 64 && i%6 != 0 && i != n-1 {
			continue // a sample of the long history's queries; steps vs prefill covers all
		}
		want := ref.attend(t, q[p], p, heads)
		if e := maxAbsDiff(o, want); e > 1e-4+vround {
			t.Errorf("%s: prefill query %d: max |fused − reference| = %.3g", name, p, e)
			break
		}
	}

	// B: the history before start in random chunks, then n single-token steps: the
	// same bits as A (a prompt split into steps attends as one prefill).
	b, _ := st.NewSeq()
	for x := 0; x < start; {
		y := min(start, x+1+r.IntN(70))
		appendRange(t, st, b, k, v, x, y)
		x = y
	}
	for p := start; p < L; p++ {
		appendRange(t, st, b, k, v, p, p+1)
		o := attendRange(t, st, b, q, p, p+1)[0]
		if e := maxAbsDiff(o, outA[p-start]); !bitsEqual(o, outA[p-start]) {
			t.Errorf("%s: query %d: single step differs from prefill by %.3g", name, p, e)
			break
		}
	}
	checkAccounting(t, name, st)
}

// checkAccounting compares Usage().AllocBytes with the memory the Store really
// references: every used block's slice and every ring and sink slice.
func checkAccounting(t *testing.T, name string, st *Store) {
	t.Helper()
	var bytes int64
	refs := map[int32]int32{}
	tokens := 0
	for _, s := range st.seqs {
		for _, tb := range s.tables {
			for _, b := range tb {
				if b >= 0 { // −1: evicted or out of the window
					refs[b]++
				}
			}
			if len(tb) != s.nblocks() {
				t.Errorf("%s: block tables of %d and %d blocks", name, len(tb), s.nblocks())
			}
		}
		for _, tl := range s.tails {
			bytes += int64(cap(tl.k.buf) + cap(tl.v.buf) + cap(tl.sk) + cap(tl.sv))
		}
		bytes += int64(cap(s.work.k) + cap(s.work.v) + cap(s.gath))
		tokens += s.kept()
		if want := (s.n + st.g.B - 1) / st.g.B; s.nblocks() != want {
			t.Errorf("%s: sequence of %d tokens has %d blocks, want %d", name, s.n, s.nblocks(), want)
		}
	}
	for b, n := range refs {
		if st.pool.refs[b] != n {
			t.Errorf("%s: block %d has ref count %d, %d tables refer to it", name, b, st.pool.refs[b], n)
		}
		bytes += int64(st.g.blockBytes)
	}
	if st.pool.used != len(refs) {
		t.Errorf("%s: pool counts %d used blocks, tables refer to %d", name, st.pool.used, len(refs))
	}
	u := st.Usage()
	if u.AllocBytes != bytes {
		t.Errorf("%s: Usage().AllocBytes = %d, storage referenced = %d", name, u.AllocBytes, bytes)
	}
	if u.Tokens != tokens || u.Sequences != len(st.seqs) {
		t.Errorf("%s: Usage tokens/sequences = %d/%d, want %d/%d", name, u.Tokens, u.Sequences, tokens, len(st.seqs))
	}
}
