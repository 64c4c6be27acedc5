package quant

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
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
	mu     sync.Mutex
	// coarse holds cos, sin of a·ropeFine·θ_j for a < len/2h, as fine.
	coarse atomic.Pointer[[]float64]
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
			i0, i1 := 2*j, 2*j+1 // the pair's values
			if neox {
				i0, i1 = j, j+h
			}
			sp[i0], sp[i1] = float32(c), float32(c)
			sp[2*h+i0], sp[2*h+i1] = -float32(s), float32(s)
		}
	}
	empty := []float64{}
	r.coarse.Store(&empty)
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
		rotatePairs(x[i*d:][:2*h], cos, sin, r.neox)
	}
}

// rotatePairs rotates x's pairs by the angles whose cos and sin are given.
func rotatePairs(x, cos, sin []float32, neox bool) {
	h := len(cos)
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
		x0, x1 := x[2*j], x[2*j+1]
		x[2*j] = x0*cos[j] - x1*sin[j]
		x[2*j+1] = x0*sin[j] + x1*cos[j]
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
// table, once for all g queries, then scored by MultiDot (one query and the shapes
// of the active kernels' one-pass kernel: decoded, rotated and scored in registers,
// with no tile). tmp holds at least t·d
// values, qr g·d, lo and s d each; r.Dims() must not exceed d.
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
	h := dims / 2
	var buf [2][128]float32
	cos, sin := buf[0][:0], buf[1][:0]
	if h > len(buf[0]) {
		cos, sin = make([]float32, 0, h), make([]float32, 0, h)
	}
	cos, sin = cos[:h], sin[:h]
	k := active.Load()
	ch, isChan := c.(Channel)
	for j := range blocks {
		b0, b1 := max(0, off-j*t), min(t, off+n-j*t)
		copy(qr, q)
		r.Angles(cos, sin, -(pos + j*t))
		for x := range g {
			rotatePairs(qr[x*d:][:dims], cos, sin, r.neox)
		}
		if g == 1 && isChan && k.ropeDot1 != nil && k.ropeDot1(ch, r, scores[j*t+b0-off:], qr, src[j*stride:][:bb], t, d, b0, b1, lo, s) {
			continue
		}
		DecodeBlockRows(c, tmp, src[j*stride:][:bb], t, d, b0, b1, lo, s)
		k.ropeRows(tmp, b1-b0, d, r.spread[b0*2*dims:], dims, r.neox)
		MultiDot(scores[j*t+b0-off:], ld, qr, g, tmp, d, b1-b0, d)
	}
}
