// Command kvqext uses kvq's cache as another engine would, from outside the
// repository, through its exported API only: it reads back every cached row of every
// cache type and compares it with its own reference, grows sequences without token
// ids and checks that they are never matched by prefix, and checks that a NaN or
// infinite row is refused with the cache unchanged. It prints "ok" and exits 0, or
// prints what failed and exits 1. kv's TestExternalModule runs it.
package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"kvq/kv"
	"kvq/quant"
)

const (
	layers  = 2
	heads   = 4
	kvHeads = 2
	headDim = 32
	block   = 16
)

var failures int

func fail(format string, args ...any) {
	failures++
	if failures <= 20 {
		fmt.Printf("FAIL: "+format+"\n", args...)
	}
}

func main() {
	specs := []string{"f32", "f16", "bf16", "q8", "fp8e4m3", "fp8e5m2", "fp8e4m3:s=0.02", "fp8e5m2:s=0.5", "q4", "q2:g=8",
		"kivi8", "kivi4", "kivi2", "kivi4:g=8,r=5", "kivi2:g=4/kivi4:g=16,r=1", "q8:sinks=3", "q4/f16:sinks=2", "f32/kivi2:r=9"}
	// Every type the cache offers, each alone and with non-default parameters;
	// a type this program has no reference for fails in rowCodec.
	for _, t := range kv.Types() {
		specs = append(specs, t.String())
		if t.HasGroup() {
			specs = append(specs, t.String()+":g=8")
		}
	}
	for _, s := range specs {
		sp, err := kv.ParseSpec(s)
		if err != nil {
			fail("%s: %v", s, err)
			continue
		}
		readback(s, sp)
		adopted(s, sp)
		nonFinite(s, sp)
	}
	noPrefix()
	if failures > 0 {
		fmt.Printf("%d failures\n", failures)
		os.Exit(1)
	}
	fmt.Printf("ok: %d cache specs read back and refused non-finite rows; rows without token ids were never matched\n", len(specs))
}

// rowCodec is this program's own idea of what stores a row of a part: by name,
// f32 f16 bf16 q8 fp8e4m3 fp8e5m2 as themselves, qN and kiviN values as N-bit
// min/max groups of g (clipped to the head size).
func rowCodec(p kv.Part) quant.RowCodec {
	g := min(p.G, headDim)
	switch name := p.Type.String(); {
	case name == "f32":
		return quant.F32{}
	case name == "f16":
		return quant.F16{}
	case name == "bf16":
		return quant.BF16{}
	case name == "q8":
		return quant.Int8{}
	case name == "fp8e4m3":
		return quant.FP8{Format: quant.E4M3, TensorScale: p.Scale}
	case name == "fp8e5m2":
		return quant.FP8{Format: quant.E5M2, TensorScale: p.Scale}
	case strings.HasPrefix(name, "kivi"), name[0] == 'q':
		return quant.Affine{Bits: p.Type.Bits(), Group: g}
	}
	fail("no reference for cache type %v", p.Type)
	return quant.F32{}
}

func roundTrip(c quant.RowCodec, x []float32) []float32 {
	b := make([]byte, c.RowBytes(len(x)))
	c.Encode(b, x)
	out := make([]float32, len(x))
	c.Decode(out, b)
	return out
}

// history is the rows this program appended: [layer][pos] → kvHeads·headDim values.
type history struct{ k, v [layers][][]float32 }

// reference is what the next query (at position n) should read for key or value
// (layer, pos, head), by the rules kv documents.
func (h *history) reference(sp kv.Spec, keys bool, layer, pos, head, n int) []float32 {
	// Rows kept in full precision are kept as f16 (the cache's tail codec): what is
	// read is their f16 round trip, and KIVI key blocks are encoded from it.
	row := func(x [][]float32, p int) []float32 {
		return roundTrip(quant.F16{}, x[p][head*headDim:(head+1)*headDim])
	}
	if keys {
		if pos < sp.Sinks && sp.K.Type != kv.TypeF32 {
			return row(h.k[layer], pos)
		}
		if sp.K.Type.IsKIVI() {
			if out := h.block(sp.K, sp.Sinks, h.k[layer], pos, head, n); out != nil {
				return out
			}
			return row(h.k[layer], pos) // unfinished key block: full precision
		}
		return roundTrip(rowCodec(sp.K), h.k[layer][pos][head*headDim:(head+1)*headDim])
	}
	if pos < sp.Sinks && sp.V.Type != kv.TypeF32 {
		return row(h.v[layer], pos)
	}
	if sp.V.Type.ValuesPerChannel() {
		if out := h.block(sp.V, sp.Sinks, h.v[layer], pos, head, n); out != nil {
			return out
		}
		return row(h.v[layer], pos) // unfinished value block: full precision
	}
	if sp.V.Type.IsKIVI() && sp.V.R > 0 && pos > n-sp.V.R {
		return row(h.v[layer], pos) // residual: full precision
	}
	return roundTrip(rowCodec(sp.V), h.v[layer][pos][head*headDim:(head+1)*headDim])
}

// block is what a side stored per channel over blocks of p.G tokens (KIVI keys,
// values of the types that store them so) reads for (pos, head) of rows x, the
// block encoded per channel from the rows' f16 round trips with the sink positions
// taking the block's first other row; nil while pos's block is unfinished at n
// tokens.
func (h *history) block(p kv.Part, sinks int, x [][]float32, pos, head, n int) []float32 {
	G := p.G
	gs := pos - pos%G
	if gs+G > n {
		return nil
	}
	blk := make([]float32, 0, G*headDim)
	for q := gs; q < gs+G; q++ {
		src := q
		if q < sinks && sinks < gs+G {
			src = sinks // sink rows are stored as the block's first other row
		}
		blk = append(blk, roundTrip(quant.F16{}, x[src][head*headDim:(head+1)*headDim])...)
	}
	c := quant.Channel{Bits: p.Type.Bits()}
	b := make([]byte, c.BlockBytes(G, headDim))
	c.Encode(b, blk, G, headDim)
	out := make([]float32, G*headDim)
	c.Decode(out, b, G, headDim)
	return out[(pos-gs)*headDim : (pos-gs+1)*headDim]
}

func newStore(sp kv.Spec) *kv.Store {
	st, err := kv.New(kv.Config{Layers: layers, Heads: heads, KVHeads: kvHeads, HeadDim: headDim, Spec: sp, BlockTokens: block})
	if err != nil {
		fail("%v: %v", sp, err)
		return nil
	}
	return st
}

func randRows(r *rand.Rand, n int) []float32 {
	x := make([]float32, n*kvHeads*headDim)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if i%97 == 5 {
			x[i] *= 9 // outliers
		}
	}
	return x
}

// step grows seq by n rows (without token ids when ids is nil), appends random
// rows on every layer, attends, and records the rows in h.
func step(st *kv.Store, id kv.SeqID, r *rand.Rand, n int, ids []int32, h *history) error {
	var err error
	if ids == nil {
		err = st.GrowWithoutTokens(id, n)
	} else {
		err = st.Grow(id, ids)
	}
	if err != nil {
		return err
	}
	rl := kvHeads * headDim
	for l := range layers {
		k, v := randRows(r, n), randRows(r, n)
		if err := st.Append(l, id, k, v); err != nil {
			return err
		}
		q := make([]float32, n*heads*headDim)
		out := make([]float32, len(q))
		if err := st.Attend(l, id, q, out); err != nil {
			return err
		}
		if h != nil {
			for i := range n {
				h.k[l] = append(h.k[l], k[i*rl:(i+1)*rl])
				h.v[l] = append(h.v[l], v[i*rl:(i+1)*rl])
			}
		}
	}
	return nil
}

// checkAll reads back every row of seq and compares it with the reference; it
// returns the number of rows compared.
func checkAll(name string, st *kv.Store, sp kv.Spec, id kv.SeqID, h *history) int {
	n := st.Len(id)
	got := make([]float32, headDim)
	rows := 0
	for l := range layers {
		for pos := range n {
			for hd := range kvHeads {
				for _, keys := range []bool{true, false} {
					read, what := st.ReadValue, "value"
					if keys {
						read, what = st.ReadKey, "key"
					}
					if err := read(id, l, pos, hd, got); err != nil {
						fail("%s: read %s layer %d pos %d head %d: %v", name, what, l, pos, hd, err)
						continue
					}
					want := h.reference(sp, keys, l, pos, hd, n)
					if !sameBits(got, want) {
						fail("%s: %s layer %d pos %d head %d (len %d): read %v…, reference %v…", name, what, l, pos, hd, n, got[:3], want[:3])
					}
					rows++
				}
			}
		}
	}
	return rows
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func readback(name string, sp kv.Spec) {
	st := newStore(sp)
	if st == nil {
		return
	}
	r := rand.New(rand.NewPCG(1, uint64(len(name))))
	id, _ := st.NewSeq()
	h := &history{}
	tok := int32(0)
	ids := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			tok++
			out[i] = tok
		}
		return out
	}
	rows := 0
	// Prefill, decode steps across key-group and block ends, a chunk, more steps;
	// every row is compared after each step.
	for i, n := range []int{7, 1, 1, 12, 1, 3, 20, 1, 1, 1, 5, 1} {
		var err error
		if i%3 == 2 {
			err = step(st, id, r, n, nil, h)
		} else {
			err = step(st, id, r, n, ids(n), h)
		}
		if err != nil {
			fail("%s: step %d: %v", name, i, err)
			return
		}
		rows += checkAll(name, st, sp, id, h)
	}
	// A fork reads back the same rows.
	c, err := st.Fork(id)
	if err != nil {
		fail("%s: fork: %v", name, err)
		return
	}
	checkAll(name+" fork", st, sp, c, h)
	// Block bytes and layout: a per-token value row decoded from ReadBlock equals
	// ReadValue where the value is not held in full precision.
	lay := st.Layout()
	B := lay.BlockTokens // 16: a KIVI key group of 32 spans two blocks
	if B != st.Config().BlockTokens || B%block != 0 || len(lay.Layers) != layers {
		fail("%s: layout %+v", name, lay)
		return
	}
	ll := lay.Layers[1]
	pos, hd := 19, 1
	blk, err := st.ReadBlock(id, pos/B, nil)
	if err != nil || len(blk) != lay.BlockBytes {
		fail("%s: read block: %d bytes, %v", name, len(blk), err)
		return
	}
	fromBlock := make([]float32, headDim)
	var want []float32
	if sp.V.Type.ValuesPerChannel() {
		// Values per channel: laid out as KIVI key blocks.
		G := ll.VGroup
		if ll.VChannel == nil || ll.VRow != nil || G != sp.V.G || ll.VGroupBytes != (quant.Channel{Bits: sp.V.Type.Bits()}).BlockBytes(G, headDim) {
			fail("%s: layout of values per channel: %+v", name, ll)
			return
		}
		dec := make([]float32, G*headDim)
		ll.VChannel.Decode(dec, blk[ll.VOffset+hd*ll.VHeadStride+(pos%B)/G*ll.VGroupBytes:][:ll.VGroupBytes], G, headDim)
		copy(fromBlock, dec[(pos%G)*headDim:])
		want = h.block(sp.V, sp.Sinks, h.v[1], pos, hd, st.Len(id))
	} else {
		if ll.VRow == nil || ll.VRow.Name() != rowCodec(sp.V).Name() {
			fail("%s: layout value codec %v, want %s", name, ll.VRow, rowCodec(sp.V).Name())
			return
		}
		ll.VRow.Decode(fromBlock, blk[ll.VOffset+hd*ll.VHeadStride+(pos%B)*ll.VRowBytes:][:ll.VRowBytes])
		want = roundTrip(rowCodec(sp.V), h.v[1][pos][hd*headDim:(hd+1)*headDim])
	}
	if !sameBits(fromBlock, want) {
		fail("%s: value decoded from ReadBlock differs from the reference", name)
	}
	if _, err := st.ReadBlock(id, 99, nil); err == nil {
		fail("%s: ReadBlock past the table: no error", name)
	}
	if err := st.ReadKey(id, 0, st.Len(id), 0, make([]float32, headDim)); err == nil {
		fail("%s: ReadKey at Len: no error", name)
	}
	if rows == 0 {
		fail("%s: no rows compared", name)
	}
}

// adopted: a sequence that adopts another's cached blocks (NewSeqWithPrefix) reads
// back what a sequence computed to that length would: the same rows, by the same
// rules, at its own length.
func adopted(name string, sp kv.Spec) {
	st := newStore(sp)
	if st == nil || !st.PrefixCaching() {
		return
	}
	r := rand.New(rand.NewPCG(7, uint64(len(name))))
	id, _ := st.NewSeq()
	h := &history{}
	var all []int32
	for _, n := range []int{20, 1, 30, 1, 40, 1} {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(len(all) + i + 1)
		}
		all = append(all, ids...)
		if err := step(st, id, r, n, ids, h); err != nil {
			fail("%s adopted: %v", name, err)
			return
		}
	}
	c, cached, err := st.NewSeqWithPrefix(all)
	if err != nil || cached == 0 {
		fail("%s: nothing adopted of %d tokens (%v)", name, len(all), err)
		return
	}
	checkAll(name+" adopted", st, sp, c, h)
}

// nonFinite appends rows holding NaN or ±Inf on each layer and checks the refusal
// and that the cache is unchanged, then appends finite rows.
func nonFinite(name string, sp kv.Spec) {
	st := newStore(sp)
	if st == nil {
		return
	}
	r := rand.New(rand.NewPCG(2, 3))
	id, _ := st.NewSeq()
	h := &history{}
	if err := step(st, id, r, 20, nil, h); err != nil {
		fail("%s: %v", name, err)
		return
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		if err := st.GrowWithoutTokens(id, 2); err != nil {
			fail("%s: %v", name, err)
			return
		}
		before := st.Usage()
		rl := kvHeads * headDim
		for l := range layers {
			for _, keys := range []bool{true, false} {
				k, v := randRows(r, 2), randRows(r, 2)
				x := v
				if keys {
					x = k
				}
				x[rl+37] = bad
				err := st.Append(l, id, k, v)
				if !errors.Is(err, kv.ErrNonFinite) {
					fail("%s: layer %d append with %v (keys %v): %v, want ErrNonFinite", name, l, bad, keys, err)
				}
			}
			// Nothing was written: the layer can still be appended, finite.
			k, v := randRows(r, 2), randRows(r, 2)
			if err := st.Append(l, id, k, v); err != nil {
				fail("%s: finite append after the refusal: %v", name, err)
				return
			}
			q := make([]float32, 2*heads*headDim)
			out := make([]float32, len(q))
			if err := st.Attend(l, id, q, out); err != nil {
				fail("%s: attend: %v", name, err)
				return
			}
			for i := range 2 {
				h.k[l] = append(h.k[l], k[i*rl:(i+1)*rl])
				h.v[l] = append(h.v[l], v[i*rl:(i+1)*rl])
			}
			for _, o := range out {
				if o != o {
					fail("%s: NaN in attention output after a refused append", name)
					break
				}
			}
		}
		if after := st.Usage(); after != before {
			fail("%s: usage changed by the refused appends: %+v → %+v", name, before, after)
		}
		checkAll(name+" after refusal", st, sp, id, h)
	}
}

// noPrefix: rows grown without token ids are never registered or matched.
func noPrefix() {
	sp, _ := kv.ParseSpec("q8")
	st := newStore(sp)
	r := rand.New(rand.NewPCG(4, 5))
	// Positive control: rows with ids are matched by a later sequence.
	a, _ := st.NewSeq()
	ids := make([]int32, 2*block)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	if err := step(st, a, r, len(ids), ids, nil); err != nil {
		fail("prefix: %v", err)
		return
	}
	if err := st.Grow(a, []int32{99}); err != nil { // registers a's full blocks
		fail("prefix: %v", err)
		return
	}
	probe, got, _ := st.NewSeqWithPrefix(ids)
	if got != 2*block {
		fail("prefix control: a sequence with the same ids adopted %d tokens, want %d", got, 2*block)
	}
	_ = st.Drop(probe)
	// Rows without ids, then ids: nothing from the first opaque block on is matched.
	b, _ := st.NewSeq()
	if err := step(st, b, r, block, ids[:block], nil); err != nil {
		fail("prefix: %v", err)
		return
	}
	if err := step(st, b, r, 3*block, nil, nil); err != nil {
		fail("prefix: %v", err)
		return
	}
	if err := st.Grow(b, []int32{7}); err != nil {
		fail("prefix: %v", err)
		return
	}
	toks, _ := st.Tokens(b)
	if toks[block] != kv.OpaqueToken {
		fail("prefix: Tokens reports %d for a row without id, want OpaqueToken", toks[block])
	}
	for _, try := range [][]int32{toks[:4*block], append(slices.Clone(ids[:block]), make([]int32, 3*block)...)} {
		c, got, err := st.NewSeqWithPrefix(try)
		if err != nil || got > block {
			fail("prefix: a sequence matched %d tokens of one grown without ids (want ≤ %d, the block with ids): %v", got, block, err)
		}
		_ = st.Drop(c)
	}
	// A sequence grown without ids from the start adopts nothing either.
	c, _ := st.NewSeq()
	if err := step(st, c, r, 2*block, nil, nil); err != nil {
		fail("prefix: %v", err)
		return
	}
	if toks, _ := st.Tokens(c); len(toks) != 2*block {
		fail("prefix: %d tokens", len(toks))
	}
	if ps := st.PoolStats(); ps.PrefixHitBlocks != 2+1+1 {
		fail("prefix: %d blocks hit, want 4 (2 of the control, 1 with ids per probe)", ps.PrefixHitBlocks)
	}
}
