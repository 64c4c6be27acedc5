package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// RoPE is a model's rotary position embedding, for keys stored before it: a head
// vector at position p has each pair (a_j, b_j), j < len(freqs), rotated by the
// angle p·freqs[j] — pairs (2j, 2j+1) (llama) or (j, j+half) with half = len(freqs)
// (NeoX); values past the 2·len(freqs) rotated ones are left alone.
//
// Angles come from two tables of cos and sin, one for offsets b < ropeFine and one
// for multiples of ropeFine, each formed in float64 from the position and rounded
// once; an angle p·θ is their composition (angle addition in float64, then
// float32), so a rotation matches the model's float32 cos and sin within an ulp or
// two. The multiples' table grows on demand, shared by every caller; a RoPE is safe
// for concurrent use.
type RoPE struct {
	freqs []float64
	neox  bool
	fine  []float64 // cos, sin of b·θ_j for b < ropeFine: fine[2(b·h+j)], fine[2(b·h+j)+1]
	// spread is fine in float32, spread over the rotated values for the row kernel:
	// for offset b, 2·Dims values from spread[2·Dims·b]: cos of each value's pair,
	// then its sin signed as the rotation uses it (−sin for a pair's first value,
	// +sin for its second), so that row = row∘cos + partner(row)∘sin.
	spread []float32
	// pairs is fine's cos and sin in Q14 for the integer kernel (pairsTable), or nil;
	// pairsZ the same words per chunk of 64 channels (pairsTableZ), or nil.
	pairs, pairsZ []int16
	mu            sync.Mutex
	// coarse holds cos, sin of a·ropeFine·θ_j for a < len/2h, as fine.
	coarse atomic.Pointer[[]float64]
	// back holds the rotation by −m·ropeBack for m < len/(2·Dims), in spread's form
	// (cos of each value's pair, then its signed sin), grown on demand under backMu.
	back   atomic.Pointer[[]float32]
	backMu sync.Mutex
}

// ropeBack is the spacing of the positions whose inverse angles RoPE keeps (backSpread):
// the first positions of key blocks, which every head and layer rotates queries back
// to.
const ropeBack = 8

// ropeBackMax bounds the kept positions: 2¹⁸ tokens (8 MiB of table for heads of 128).
const ropeBackMax = 1 << 18 / ropeBack

// backSpread returns the rotation by −p in spread's form (2·Dims values: cos of each
// value's pair, then its sin signed as the rotation uses it), formed from Angles(−p):
// for p a multiple of ropeBack from a table kept per RoPE (formed once), else newly
// allocated. Rotating with it (rotateRowsGo, ropeRowsAVX2) gives RotatePairs' values
// with Angles(−p), bit for bit.
func (r *RoPE) backSpread(p int) []float32 {
	m, w := p/ropeBack, 2*r.Dims()
	if p < 0 || p%ropeBack != 0 || m >= ropeBackMax {
		sp := make([]float32, w)
		r.spreadAngles(sp, -p)
		return sp
	}
	t := *r.back.Load()
	if (m+1)*w > len(t) {
		r.backMu.Lock()
		t = *r.back.Load()
		if n := (m + 1) * w; n > len(t) {
			grown := make([]float32, min(max(n, 2*len(t)), ropeBackMax*w))
			copy(grown, t)
			for i := len(t) / w; i < len(grown)/w; i++ {
				r.spreadAngles(grown[w*i:][:w], -i*ropeBack)
			}
			r.back.Store(&grown)
			t = grown
		}
		r.backMu.Unlock()
	}
	return t[w*m:][:w]
}

// spreadAngles writes Angles(·, ·, pos) to sp in spread's form.
func (r *RoPE) spreadAngles(sp []float32, pos int) {
	h := len(r.freqs)
	var buf [2][128]float32
	cos, sin := buf[0][:0], buf[1][:0]
	if h > len(buf[0]) {
		cos, sin = make([]float32, 0, h), make([]float32, 0, h)
	}
	cos, sin = cos[:h], sin[:h]
	r.Angles(cos, sin, pos)
	for j := range h {
		putSpread(sp, h, j, cos[j], sin[j], r.neox)
	}
}

// putSpread writes pair j's cos c and sin s, of h pairs, into sp in spread's form:
// c at both of the pair's values, then −s at its first and s at its second.
func putSpread(sp []float32, h, j int, c, s float32, neox bool) {
	i0, i1 := 2*j, 2*j+1
	if neox {
		i0, i1 = j, j+h
	}
	sp[i0], sp[i1] = c, c
	sp[2*h+i0], sp[2*h+i1] = -s, s
}

// ropeFine is the period of the fine table, in positions: a key block's tokens take
// their angles from it.
const ropeFine = MaxRoPEBlock

// MaxRoPEBlock is the longest key block DotChannelRoPE scores, in tokens.
const MaxRoPEBlock = 1024

// NewRoPE returns the rotation of the given per-pair angular frequencies (radians
// per position); neox selects the pair layout (j, j+len(freqs)).
func NewRoPE(freqs []float64, neox bool) (*RoPE, error) {
	if len(freqs) == 0 {
		return nil, fmt.Errorf("%w: RoPE without frequencies", ErrInvalid)
	}
	for j, f := range freqs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: RoPE frequency %d is %v", ErrInvalid, j, f)
		}
	}
	h := len(freqs)
	r := &RoPE{freqs: append([]float64(nil), freqs...), neox: neox, fine: make([]float64, 2*h*ropeFine), spread: make([]float32, 4*h*ropeFine)}
	for b := range ropeFine {
		sp := r.spread[4*h*b:][:4*h]
		for j, f := range freqs {
			s, c := math.Sincos(float64(b) * f)
			r.fine[2*(b*h+j)], r.fine[2*(b*h+j)+1] = c, s
			putSpread(sp, h, j, float32(c), float32(s), neox)
		}
	}
	r.pairs = pairsTable(r.fine, h, neox)
	r.pairsZ = pairsTableZ(r.pairs, 2*h)
	empty := []float64{}
	r.coarse.Store(&empty)
	r.back.Store(&[]float32{})
	return r, nil
}

// Dims is the number of rotated values per head, 2·len(freqs).
func (r *RoPE) Dims() int { return 2 * len(r.freqs) }

// NeoX reports the pair layout: (j, j+Dims/2) when true, (2j, 2j+1) otherwise.
func (r *RoPE) NeoX() bool { return r.neox }

// coarseAt returns the cos, sin pairs of a·ropeFine·θ_j, growing the table.
func (r *RoPE) coarseAt(a int) []float64 {
	h := len(r.freqs)
	t := *r.coarse.Load()
	if (a+1)*2*h > len(t) {
		r.mu.Lock()
		t = *r.coarse.Load()
		if n := (a + 1) * 2 * h; n > len(t) {
			grown := make([]float64, max(n, 2*len(t)))
			copy(grown, t)
			for i := len(t) / (2 * h); i < len(grown)/(2*h); i++ {
				for j, f := range r.freqs {
					s, c := math.Sincos(float64(i) * ropeFine * f)
					grown[2*(i*h+j)], grown[2*(i*h+j)+1] = c, s
				}
			}
			r.coarse.Store(&grown)
			t = grown
		}
		r.mu.Unlock()
	}
	return t[2*a*h : 2*(a+1)*h]
}

// Angles writes cos and sin of pos·θ_j to cos[j], sin[j] for j < Dims/2; a negative
// pos gives the inverse rotation's.
func (r *RoPE) Angles(cos, sin []float32, pos int) {
	h := len(r.freqs)
	cos, sin = cos[:h], sin[:h]
	neg := pos < 0
	if neg {
		pos = -pos
	}
	a, b := pos/ropeFine, pos%ropeFine
	ca := r.coarseAt(a)
	cb := r.fine[2*b*h : 2*(b+1)*h]
	for j := range cos {
		c1, s1, c2, s2 := ca[2*j], ca[2*j+1], cb[2*j], cb[2*j+1]
		c, s := c1*c2-s1*s2, s1*c2+c1*s2
		if neg {
			s = -s
		}
		cos[j], sin[j] = float32(c), float32(s)
	}
}

// Rotate rotates each of the n head vectors of d values in x (row i at x[i*d:])
// by the angles of position pos+i·step (step 0: all at pos). d must be at least
// Dims. It is the reference of the scoring kernels' rotation.
func (r *RoPE) Rotate(x []float32, n, d, pos, step int) {
	h := len(r.freqs)
	if d < 2*h {
		panic(fmt.Sprintf("quant: RoPE of %d rotated values on rows of %d", 2*h, d))
	}
	var buf [2][128]float32
	cos, sin := buf[0][:0], buf[1][:0]
	if h > len(buf[0]) {
		cos, sin = make([]float32, 0, h), make([]float32, 0, h)
	}
	cos, sin = cos[:h], sin[:h]
	for i := range n {
		r.Angles(cos, sin, pos+i*step)
		RotatePairs(x[i*d:][:2*h], cos, sin, r.neox)
	}
}

// RotatePairs rotates the pairs of x's first 2·len(cos) values by the angles whose
// cos and sin are given: pairs (2j, 2j+1), or (j, j+len(cos)) when neox; x's values
// past them are left alone. It is the scalar reference rotation: RotateHeads (the
// forward pass's query and key heads) and the rotation kernels give its bits.
func RotatePairs(x, cos, sin []float32, neox bool) {
	h := len(cos)
	sin = sin[:h]
	if neox {
		a, b := x[:h], x[h:2*h]
		for j := range h {
			x0, x1 := a[j], b[j]
			a[j] = x0*cos[j] - x1*sin[j]
			b[j] = x0*sin[j] + x1*cos[j]
		}
		return
	}
	x = x[:2*h]
	for j := range h {
		p := x[2*j : 2*j+2 : 2*j+2]
		x0, x1 := p[0], p[1]
		p[0] = x0*cos[j] - x1*sin[j]
		p[1] = x0*sin[j] + x1*cos[j]
	}
}

// RotateHeads rotates each of the n head vectors of d values in x (head i at
// x[i*d:]) by the same angles, as RotatePairs rotates one: the same bits (a pair's
// x0·cos − x1·sin is x0·cos + x1·(−sin), and x1·cos + x0·sin its sum in the other
// order). The SIMD kernel set rotates a head eight values at a time (ropeRowsAsm,
// the angles spread once for all the heads), where RotatePairs takes a pair at a
// time: 12 heads of 64 values took 343–351 ns against 876–884
// (BenchmarkRotateHeads).
func RotateHeads(x []float32, n, d int, cos, sin []float32, neox bool) {
	h := len(cos)
	var buf [512]float32 // on the stack: rotateRowsSIMD does not keep it
	if 4*h > len(buf) || active.Load() != simdKernels {
		for i := range n {
			RotatePairs(x[i*d:(i+1)*d], cos, sin, neox)
		}
		return
	}
	sin = sin[:h]
	sp := buf[:4*h]
	for j := range h {
		putSpread(sp, h, j, cos[j], sin[j], neox)
	}
	for i := range n {
		rotateRowsSIMD(x[i*d:(i+1)*d], 1, d, sp, 2*h, neox)
	}
}

// rotateRowsGo rotates the n rows of d values at x (row i at x[i*d:]) by the spread
// angles at sp[i·2·dims:] (RoPE.spread from some offset): row = row∘cos +
// partner(row)∘sin over the first dims values. It is the scalar twin of rotateRows.
func rotateRowsGo(x []float32, n, d int, sp []float32, dims int, neox bool) {
	h := dims / 2
	for i := range n {
		row := x[i*d:][:dims]
		cs := sp[i*2*dims:][:2*dims]
		c, s := cs[:dims], cs[dims:]
		if neox {
			for j := range h {
				a, b := row[j], row[j+h]
				row[j] = float32(a*c[j]) + float32(b*s[j]) // rounded products: no FMA, as the kernels
				row[j+h] = float32(b*c[j+h]) + float32(a*s[j+h])
			}
			continue
		}
		for j := 0; j+1 < dims; j += 2 {
			a, b := row[j], row[j+1]
			row[j] = float32(a*c[j]) + float32(b*s[j])
			row[j+1] = float32(b*c[j+1]) + float32(a*s[j+1])
		}
	}
}

// DotChannelRoPE is DotChannelSpan for keys stored before RoPE: block j's token b is
// at position pos + j·t + b, and the scores are those of q against the decoded keys
// rotated to their positions, q·R(p)k. Per block, at P = pos + j·t, the queries are
// rotated back by P once (q·R(P+b)k = (R(P)ᵀq)·R(b)k), and each token's decoded row
// (a block's rows in tmp, in cache) is rotated by its offset b from the block's
// table, once for all g queries, then scored by MultiDot. One query whose every value
// is rotated is scored from the codes with no tile: with the SIMD kernels and
// interleaved pairs, 4-, 3- and 2-bit codes and d a multiple of 32, in integers
// (dotRoPEInt1, or with AVX-512 and d a multiple of 64 dotRoPEIntZ, a run of blocks
// at a time: int8 query products, the error bounded at "Integer pair scoring"
// below), else in floats (ropeFoldGo's algebra). tmp holds at least t·d values
// (and 4·d, 6.5·d for the runs of dotRoPEIntZ), qr g·d, lo and s d each; r.Dims()
// must not exceed d.
func DotChannelRoPE(c ChannelCodec, r *RoPE, pos int, scores []float32, ld int, q []float32, g int, src []byte, stride, t, off, n, d int, tmp, qr, lo, s []float32) {
	if n <= 0 || g <= 0 || t <= 0 || d <= 0 || off < 0 {
		return
	}
	dims := r.Dims()
	if dims > d || t > MaxRoPEBlock {
		panic(fmt.Sprintf("quant: DotChannelRoPE: %d rotated values on rows of %d, blocks of %d tokens", dims, d, t))
	}
	blocks := (off + n + t - 1) / t
	bb := c.BlockBytes(t, d)
	_ = src[(blocks-1)*stride+bb-1]
	_ = scores[(g-1)*ld+n-1]
	q, qr = q[:g*d], qr[:g*d]
	k := active.Load()
	ch, isChan := c.(Channel)
	if g == 1 && isChan && k.ropeSpan1 != nil && k.ropeSpan1(ch, r, pos, scores, q, src, stride, t, off, n, d, tmp, qr, lo, s) {
		return
	}
	for j := range blocks {
		b0, b1 := max(0, off-j*t), min(t, off+n-j*t)
		sp := r.backSpread(pos + j*t)
		if g == 1 && isChan && k.ropeDot1 != nil && k.ropeDot1(ch, r, scores[j*t+b0-off:], q, sp, src[j*stride:][:bb], t, d, b0, b1, qr, lo, s, tmp) {
			continue
		}
		copy(qr, q)
		for x := range g {
			k.ropeRows(qr[x*d:], 1, d, sp, dims, r.neox)
		}
		DecodeBlockRows(c, tmp, src[j*stride:][:bb], t, d, b0, b1, lo, s)
		k.ropeRows(tmp, b1-b0, d, r.spread[b0*2*dims:], dims, r.neox)
		MultiDot(scores[j*t+b0-off:], ld, qr, g, tmp, d, b1-b0, d)
	}
}

// ropeFoldPrep writes the four vectors of a block that ropeFoldGo scores codes with,
// for channel c with pair partner p (c^1, or c±d/2 with NeoX pairs): w1 = q_c·s_c,
// w2 = −q_p·s_c, z1 = q_c·lo_c, z2 = −q_p·lo_c, q the query rotated back to the
// block's first position (every one of its d = len(q) values rotated, d a multiple
// of 8) and s, lo the block's scales and zeros. They go in w per 8 channels, as the
// kernel loads them: w1, w2, z1, z2 of channels 8i..8i+7 at w[32i:], w[32i+8:],
// w[32i+16:], w[32i+24:] (4·d values).
func ropeFoldPrep(w, q, lo, s []float32, neox bool) {
	d := len(q)
	w = w[:4*d]
	lo, s = lo[:d], s[:d]
	h := d / 2
	var pbuf [8]float32
	for g := 0; g+8 <= d; g += 8 {
		qg, pg := q[g:g+8], q[g:g+8] // interleaved partners (c^1) are in the group
		switch {
		case neox && h%8 == 0:
			pg = q[(g+h)%d:][:8]
		case neox:
			// NeoX partners are (c+h) mod d, h = d/2: when h is not a multiple of 8
			// (d = 8, 24, …) a group's partners wrap around the end of q.
			for k := range 8 {
				pbuf[k] = q[(g+k+h)%d]
			}
			pg = pbuf[:]
		}
		sg, lg := s[g:g+8], lo[g:g+8]
		blk := w[4*g : 4*g+32]
		for k := range 8 {
			qc, qp := qg[k], pg[k]
			if !neox {
				qp = pg[k^1]
			}
			blk[k], blk[k+8] = qc*sg[k], -qp*sg[k]
			blk[k+16], blk[k+24] = qc*lg[k], -qp*lg[k]
		}
	}
}

// ropeFoldGo writes out[i] = Σ_c cos_c·(code_c·w1_c + z1_c) + sin_c·(code_c·w2_c +
// z2_c) for the n code rows of d channels (a multiple of 8) of a Channel block of the
// given bits at codes, cos and sin from row i's spread table (sp[i·2d:],
// RoPE.spread) and w from ropeFoldPrep. With k = lo + code·s the decoded pre-RoPE
// key, that is q·R(b)k pair by pair: cos·(q_a·k_a + q_b·k_b) + sin·(q_b·k_a −
// q_a·k_b), the spread sines signed −, +. So the rotation costs two multiply-adds
// per value and nothing is decoded to a tile; the sum differs from decoding,
// rotating and multiplying only in rounding (each key value's products are formed
// from q·s and q·lo, not from the rounded decoded value: a few ulps of |q_c·k_c| per
// term). It is the scalar twin of dotRoPEFold1.
func ropeFoldGo(out []float32, codes []byte, w, sp []float32, n, d, bits int) {
	w = w[:4*d]
	rb := packedBytes(d, bits)
	for i := range n {
		row := codes[i*rb:][:rb]
		cs := sp[i*2*d:][:2*d]
		cos, sin := cs[:d], cs[d:]
		var a, b float32
		for c := range d {
			k := float32(codeAt(row, c, bits))
			x := 32*(c/8) + c%8
			a += cos[c] * (k*w[x] + w[x+16])
			b += sin[c] * (k*w[x+8] + w[x+24])
		}
		out[i] = a + b
	}
}

// codeAt returns element i of codes packed at the given bits (pack.go).
func codeAt(c []byte, i, bits int) uint32 {
	switch bits {
	case 8:
		return uint32(c[i])
	case 4:
		return uint32(c[i/2]) >> (4 * (i & 1)) & 15
	case 3:
		return code3(c, i)
	default:
		return uint32(c[i/4]) >> (2 * (i & 3)) & 3
	}
}

// ropeDotGo is the scalar kernels' ropeDot1: the query q rotated back by sp into qr,
// then ropeFoldGo, for a block whose every value is rotated, d a multiple of 8, w
// scratch of at least 4·d values; it reports false for the rest.
func ropeDotGo(c Channel, r *RoPE, out, q, sp []float32, block []byte, t, d, b0, b1 int, qr, lo, s, w []float32) bool {
	if r.Dims() != d || d%8 != 0 || b0 >= b1 || len(w) < 4*d || (c.Bits != 8 && c.Bits != 4 && c.Bits != 3 && c.Bits != 2) {
		return false
	}
	copy(qr[:d], q[:d])
	rotateRowsGo(qr, 1, d, sp, d, r.neox)
	chanParams(s, lo, block, d)
	ropeFoldPrep(w, qr[:d], lo, s, r.neox)
	rb := packedBytes(d, c.Bits)
	ropeFoldGo(out, block[4*d+b0*rb:4*d+b1*rb], w, r.spread[b0*2*d:], b1-b0, d, c.Bits)
	return true
}

// Integer pair scoring. For interleaved pairs (2j, 2j+1), 4-, 3- and 2-bit codes and
// d a multiple of 32, a block's rows are scored from their codes with integers: per
// group of 32 channels (16 pairs) k, the block's query products w1_c = q_c·s_c and
// w2_c = ±q_p·s_c (+ for a pair's first channel, − for its second; p the partner)
// are rounded to int8 with one step D_k = max|w|/127, and the pair's zero terms
// Z1_j = q_a·lo_a + q_b·lo_b and Z2_j = q_b·lo_a − q_a·lo_b to int16 in the same
// step; per token the pair sums A_j = Σ code·ŵ1 + Ẑ1_j and B_j = Σ code·ŵ2 + Ẑ2_j
// (VPMADDUBSW, exact in int16) meet the token's cos and sin, held in Q14 int16
// (RoPE.pairs), in VPMADDWD: cos·A + sin·B = q·R(b)k for the pair, up to the
// roundings (int32 lanes of at most 2·√2·32767·2¹⁴ < 2³¹). The error against the float algebra is at most, per group, D_k/2 per
// code unit and per zero term times |cos| + |sin| ≤ √2, i.e. √2·Σ_k (D_k/2)·(Σ_c
// code_c + 16) per score, plus 2⁻¹⁵ of Σ|A| + |B| for the table — the same order as
// the int8 queries of the 2-bit post-RoPE kernels (DotChannelRows). A block whose
// zero terms do not fit int16 beside the code sums (zeros far larger than the scale
// steps) goes to the float kernel (ropeFoldGo); so does a query of zero products.

// ropeIntGroup is the scratch of one group of 32 channels, in float32 units: ŵ1 (32
// int8), ŵ2 (32 int8), Ẑ1 (16 int16), Ẑ2 (16 int16), then D_k/2¹⁴ in 8 floats.
const ropeIntGroup = 40

// ropeQ14 is the scale of RoPE.pairs' cos and sin.
const ropeQ14 = 1 << 14

// pairsTable returns cos and sin of the interleaved pairs in Q14 for offsets b <
// ropeFine, as dotRoPEInt1 loads them: per offset, per group of 16 pairs, their 16
// cosines, then their 16 sines (dims words per offset). It is nil for NeoX pairs or
// dims not a multiple of 32.
func pairsTable(fine []float64, h int, neox bool) []int16 {
	if neox || (2*h)%32 != 0 {
		return nil
	}
	t := make([]int16, 2*h*ropeFine)
	for b := range ropeFine {
		row := t[2*h*b:][:2*h]
		for j := range h {
			c, s := fine[2*(b*h+j)], fine[2*(b*h+j)+1]
			g, i := j/16, j%16
			row[32*g+i] = int16(math.Round(c * ropeQ14))
			row[32*g+16+i] = int16(math.Round(s * ropeQ14))
		}
	}
	return t
}

// pairsTableZ returns the words of pairs (pairsTable, rows of d words) per chunk of
// 64 channels, as dotRoPEIntZ loads them: per offset, per chunk, the cosines of its
// 32 pairs, then their sines. It is nil when pairs is or d is not a multiple of 64.
func pairsTableZ(pairs []int16, d int) []int16 {
	if pairs == nil || d%64 != 0 {
		return nil
	}
	t := make([]int16, len(pairs))
	for i := 0; i < len(pairs); i += 64 {
		ropeChunkZ(t[i:i+64], pairs[i:i+64], 2)
	}
	return t
}

// ropeChunkZ writes to dst the 64-channel chunk layout of the two groups of 32
// channels at src, each of len(src)/2 words made of the given number of equal
// fields: the fields of both groups side by side, the first group's first (per
// ropeIntChunk and pairsTableZ).
func ropeChunkZ[T int16 | float32](dst, src []T, fields int) {
	half := len(src) / 2
	fs := half / fields
	g0, g1 := src[:half], src[half:]
	for f := range fields {
		copy(dst[2*fs*f:], g0[fs*f:fs*(f+1)])
		copy(dst[2*fs*f+fs:], g1[fs*f:fs*(f+1)])
	}
}

// ropeIntChunk is the scratch of one chunk of 64 channels in the ZMM kernel's layout
// (dotRoPEIntZ), in float32 units: the two groups' ŵ1 (64 int8), their ŵ2, their Ẑ1
// (32 int16), their Ẑ2, then their steps D/2¹⁴ per int32 lane of the chunk (8 of the
// first group, 8 of the second): each field the two groups' ropeIntGroup fields side
// by side.
const ropeIntChunk = 2 * ropeIntGroup

// ropeIntPrepZGo is the scalar twin of ropeIntPrepZ: q (d values, a multiple of 64)
// rotated back by sp (RoPE.backSpread) into qr, then ropeIntPrep's scratch in
// ropeIntChunk's layout in w (d/64·ropeIntChunk values), g scratch of d/32·ropeIntGroup.
func ropeIntPrepZGo(w, q, sp, qr, g []float32, lo, s []float32, bits int) bool {
	d := len(q)
	copy(qr[:d], q)
	rotateRowsGo(qr, 1, d, sp, d, false)
	if !ropeIntPrep(g, qr[:d], lo, s, bits) {
		return false
	}
	for m := range d / 64 {
		ropeChunkZ(w[m*ropeIntChunk:][:ropeIntChunk], g[m*ropeIntChunk:][:ropeIntChunk], 5)
	}
	return true
}

// ropeIntGoZ is the scalar twin of dotRoPEIntZ: out[i] for the n code rows (4, 3 or
// 2 bits, d channels, a multiple of 64) at codes, w in ropeIntChunk's layout and the
// rows' tables from tab (RoPE.pairsZ at the first row's offset). Per int32 lane l of
// a chunk (pairs 2l and 2l+1) the integers are the kernel's; the lanes go through the
// kernel's float steps and tree: for d = 64 bit for bit (each group's lanes added,
// e_i = l_i + l_{i+4}, (e0 + e2) + (e1 + e3), times its step, the two groups added),
// else each chunk's lanes times their steps added into the row's (rounded twice where
// the kernel fuses the multiply-add), then ((l + l+8) + (l+4 + l+12)) for l < 4 and
// (0 + 2) + (1 + 3).
func ropeIntGoZ(out []float32, codes []byte, w []float32, tab []int16, n, d, bits int) {
	rb := packedBytes(d, bits)
	for i := range n {
		row, tr := codes[i*rb:][:rb], tab[i*d:][:d]
		var v [16]float32
		for m := range d / 64 {
			wc := w[m*ropeIntChunk:][:ropeIntChunk]
			for l := range 16 {
				x := float32(ropeIntLane(row, wc, tr[64*m:][:64], m, l, bits))
				if d == 64 {
					v[l] = x
				} else {
					v[l] += x * wc[64+l]
				}
			}
		}
		if d == 64 {
			var gs [2]float32
			for g := range 2 {
				e := v[8*g:][:8]
				gs[g] = (float32(e[0]+e[4]) + float32(e[2]+e[6])) + (float32(e[1]+e[5]) + float32(e[3]+e[7]))
			}
			out[i] = gs[0]*w[64] + gs[1]*w[72]
			continue
		}
		var u [4]float32
		for l := range 4 {
			u[l] = (v[l] + v[l+8]) + (v[l+4] + v[l+12])
		}
		out[i] = (u[0] + u[2]) + (u[1] + u[3])
	}
}

// ropeIntLane is int32 lane l of chunk m of a code row in dotRoPEIntZ: pairs 2l and
// 2l+1 of the chunk, cos·(A + Ẑ1) + sin·(B + Ẑ2) each, w the chunk's scratch
// (ropeIntChunk's layout) and tc its table words for the row.
func ropeIntLane(row []byte, w []float32, tc []int16, m, l, bits int) int32 {
	wb := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*ropeIntChunk)
	var lane int32
	for pj := 2 * l; pj < 2*l+2; pj++ {
		a, b := 64*m+2*pj, 64*m+2*pj+1
		ca, cb := int32(codeAt(row, a, bits)), int32(codeAt(row, b, bits))
		A := ca*int32(int8(wb[2*pj])) + cb*int32(int8(wb[2*pj+1])) + int32(int16(binary.LittleEndian.Uint16(wb[128+2*pj:])))
		B := ca*int32(int8(wb[64+2*pj])) + cb*int32(int8(wb[64+2*pj+1])) + int32(int16(binary.LittleEndian.Uint16(wb[192+2*pj:])))
		lane += int32(tc[pj])*A + int32(tc[32+pj])*B
	}
	return lane
}

// ropeIntPrep writes the groups of scratch dotRoPEInt1 scores a block with (w at
// least d/32·ropeIntGroup values) from the rotated-back query q (d values, a multiple
// of 32) and the block's scales s and zeros lo; it reports false, for the float
// kernel, when a zero term does not fit or the products are all zero or not finite.
// Every product is rounded to float32 as formed, and the steps to int8 and int16 go
// to the nearest integer, ties to even: ropeIntQuantAVX2's values, bit for bit.
func ropeIntPrep(w []float32, q, lo, s []float32, bits int) bool {
	d := len(q)
	w = w[:d/32*ropeIntGroup]
	wb := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w))
	for k := range d / 32 {
		qg, sg, lg := q[32*k:][:32], s[32*k:][:32], lo[32*k:][:32]
		var w1, w2 [32]float32
		var m, sum float32
		for c := 0; c < 32; c += 2 {
			w1[c], w1[c+1] = float32(qg[c]*sg[c]), float32(qg[c+1]*sg[c+1])
			w2[c], w2[c+1] = float32(qg[c+1]*sg[c]), float32(-qg[c]*sg[c+1])
			for _, x := range [4]float32{w1[c], w1[c+1], w2[c], w2[c+1]} {
				m, sum = max(m, abs32(x)), sum+abs32(x)
			}
		}
		if !ropeIntStep(m, sum) {
			return false
		}
		inv := 127 / m
		g := wb[4*ropeIntGroup*k:][:4*ropeIntGroup]
		for c := range 32 {
			g[c] = byte(int8(math.RoundToEven(float64(w1[c] * inv))))
			g[32+c] = byte(int8(math.RoundToEven(float64(w2[c] * inv))))
		}
		for j := range 16 {
			a, b := 2*j, 2*j+1
			z1 := (float32(qg[a]*lg[a]) + float32(qg[b]*lg[b])) * inv
			z2 := (float32(qg[b]*lg[a]) + float32(-qg[a]*lg[b])) * inv
			if abs32(z1) > ropeZMax(bits) || abs32(z2) > ropeZMax(bits) {
				return false
			}
			binary.LittleEndian.PutUint16(g[64+2*j:], uint16(int16(math.RoundToEven(float64(z1)))))
			binary.LittleEndian.PutUint16(g[96+2*j:], uint16(int16(math.RoundToEven(float64(z2)))))
		}
		ropeIntScale(w[ropeIntGroup*k+32:][:8], m)
	}
	return true
}

// ropeIntStep reports whether a group's products, of largest magnitude m and
// magnitudes summing to sum, take an int8 step: not all zero, all finite.
func ropeIntStep(m, sum float32) bool {
	return m > 0 && !math.IsInf(float64(sum), 0) && !math.IsNaN(float64(sum))
}

// ropeZMax is the largest |Ẑ| that keeps A and B in int16 beside the code sums.
func ropeZMax(bits int) float32 { return float32(32767 - 2*(int(1)<<bits-1)*127) }

// ropeIntScale writes a group's D/2¹⁴ to its 8 floats.
func ropeIntScale(dk []float32, m float32) {
	v := m / 127 / ropeQ14
	for i := range dk {
		dk[i] = v
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// ropeIntGo is the scalar twin of dotRoPEInt1: out[i] for the n code rows (4, 3 or 2
// bits, d channels) at codes, w from ropeIntPrep and the rows' Q14 tables from tab
// (RoPE.pairs at the first row's offset). Per group the integers are the kernel's
// exactly; the float sums differ only in order.
func ropeIntGo(out []float32, codes []byte, w []float32, tab []int16, n, d, bits int) {
	rb := packedBytes(d, bits)
	for i := range n {
		var acc float32
		for k := range d / 32 {
			acc += float32(ropeIntSum(codes[i*rb:][:rb], w, tab[i*d:][:d], k, bits)) * w[ropeIntGroup*k+32]
		}
		out[i] = acc
	}
}

// ropeIntSum is group k's integer sum Σ_j cos_j·A_j + sin_j·B_j (Q14) of a code row
// against ropeIntPrep's scratch w and the row's table words tr.
func ropeIntSum(row []byte, w []float32, tr []int16, k, bits int) int64 {
	g := unsafe.Slice((*byte)(unsafe.Pointer(&w[ropeIntGroup*k])), 4*ropeIntGroup)
	var sum int64
	for pj := range 16 {
		a, b := 32*k+2*pj, 32*k+2*pj+1
		ca, cb := int32(codeAt(row, a, bits)), int32(codeAt(row, b, bits))
		la, lb := 2*pj, 2*pj+1
		A := ca*int32(int8(g[la])) + cb*int32(int8(g[lb])) + int32(int16(binary.LittleEndian.Uint16(g[64+2*pj:])))
		B := ca*int32(int8(g[32+la])) + cb*int32(int8(g[32+lb])) + int32(int16(binary.LittleEndian.Uint16(g[96+2*pj:])))
		sum += int64(tr[32*k+pj])*int64(A) + int64(tr[32*k+16+pj])*int64(B)
	}
	return sum
}

// ChannelScoresRoPE is the reference of DotChannelRoPE's integer kernel, for the
// conformance suites: when the active kernels score one query against a Channel
// block of keys stored before RoPE (t tokens × d channels, its first token at
// position pos) in integers, it writes out[i] for i < t — the kernel's integer sums,
// exact, times their steps in float64 — and reports true. Otherwise it reports false:
// the kernels' scores are then q against the decoded keys rotated to their
// positions, within float rounding. q is the query of d values as attention passes
// it (scaled by 1/√d).
func ChannelScoresRoPE(c Channel, r *RoPE, out []float64, q []float32, block []byte, t, d, pos int) bool {
	k := active.Load()
	if k.ropeInt == nil || !k.ropeInt(c, r, d) {
		return false
	}
	qr := append([]float32(nil), q[:d]...)
	cos, sin := make([]float32, d/2), make([]float32, d/2)
	r.Angles(cos, sin, -pos)
	RotatePairs(qr, cos, sin, r.neox)
	s, lo := make([]float32, d), make([]float32, d)
	chanParams(s, lo, block, d)
	w := make([]float32, d/32*ropeIntGroup)
	if !ropeIntPrep(w, qr, lo, s, c.Bits) {
		return false
	}
	rb := packedBytes(d, c.Bits)
	for i := range t {
		out[i] = 0
		for g := range d / 32 {
			out[i] += float64(w[ropeIntGroup*g+32]) * float64(ropeIntSum(block[4*d+i*rb:][:rb], w, r.pairs[i*d:][:d], g, c.Bits))
		}
	}
	return true
}
