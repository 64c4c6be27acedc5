package model

import (
	"errors"
	"fmt"
	"math"

	"kvq/gguf"
	"kvq/kv"
	"kvq/linalg"
)

// Span is one sequence's share of a forward step: new tokens that continue its history.
type Span struct {
	Seq       kv.SeqID
	Tokens    []int32
	AllLogits bool // return logits for every token of the span, not only the last
}

// workspace holds Forward's scratch buffers, grown on demand and reused.
type workspace struct {
	x, xb, q, k, v, att, hb, hb2 []float32
	rows                         []int // rows that need logits
	logits                       []float32
	cos, sin                     []float32 // per token × RopeDims/2
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// ErrTokenRange reports a token id outside the vocabulary.
var ErrTokenRange = errors.New("model: token id out of range")

// Forward runs one step over a batch of spans: it reserves cache room for every span
// (undoing all reservations if one fails), then runs the transformer over all tokens at
// once, appending K/V to the cache and attending per span. Each new token's position is
// its sequence's length before this step plus its index in the span.
//
// It returns one logits slice per span: len(Tokens)·Vocab values when AllLogits, else
// Vocab values for the span's last token. The slices are valid until the next call.
func (m *Model) Forward(c kv.Cache, batch []Span) ([][]float32, error) {
	n := 0
	start := make([]int, len(batch))
	for i, sp := range batch {
		if len(sp.Tokens) == 0 {
			return nil, fmt.Errorf("model: span %d of sequence %d has no tokens", i, sp.Seq)
		}
		for _, t := range sp.Tokens {
			if t < 0 || int(t) >= m.Vocab {
				return nil, fmt.Errorf("%w: %d (vocabulary %d)", ErrTokenRange, t, m.Vocab)
			}
		}
		start[i] = c.Len(sp.Seq)
		n += len(sp.Tokens)
	}
	for i, sp := range batch {
		if err := c.Grow(sp.Seq, sp.Tokens); err != nil {
			for j := range i {
				_ = c.Truncate(batch[j].Seq, start[j]) // undoing a Grow before any Append cannot fail
			}
			return nil, fmt.Errorf("model: reserving %d tokens for sequence %d: %w", len(sp.Tokens), sp.Seq, err)
		}
	}

	cfg := &m.Config
	ws := &m.ws
	qd, kvd := cfg.Heads*cfg.HeadDim, cfg.KVDim()
	ws.x = grow(ws.x, n*cfg.Dim)
	ws.xb = grow(ws.xb, n*cfg.Dim)
	ws.q = grow(ws.q, n*qd)
	ws.k = grow(ws.k, n*kvd)
	ws.v = grow(ws.v, n*kvd)
	ws.att = grow(ws.att, n*qd)
	ws.hb = grow(ws.hb, n*cfg.FFN)
	ws.hb2 = grow(ws.hb2, n*cfg.FFN)

	// Embeddings and RoPE angles per token.
	half := cfg.RopeDims / 2
	ws.cos = grow(ws.cos, n*half)
	ws.sin = grow(ws.sin, n*half)
	row := 0
	for i, sp := range batch {
		for j, t := range sp.Tokens {
			if err := m.embed(ws.x[row*cfg.Dim:(row+1)*cfg.Dim], t); err != nil {
				return nil, err
			}
			m.ropeAngles(ws.cos[row*half:(row+1)*half], ws.sin[row*half:(row+1)*half], start[i]+j)
			row++
		}
	}

	for li := range m.layers {
		ly := &m.layers[li]
		rmsNormRows(ws.xb, ws.x, ly.attnNorm, cfg.Dim, cfg.RMSEps)
		if err := linalg.MatMulMany([][]float32{ws.q, ws.k, ws.v}, []linalg.Matrix{ly.wq, ly.wk, ly.wv}, ws.xb, n); err != nil {
			return nil, fmt.Errorf("model: layer %d q/k/v: %w", li, err)
		}
		if ly.bq != nil {
			addBiasRows(ws.q, ly.bq)
			addBiasRows(ws.k, ly.bk)
			addBiasRows(ws.v, ly.bv)
		}
		for r := range n {
			cs, sn := ws.cos[r*half:(r+1)*half], ws.sin[r*half:(r+1)*half]
			for h := range cfg.Heads {
				m.rope(ws.q[r*qd+h*cfg.HeadDim:r*qd+(h+1)*cfg.HeadDim], cs, sn)
			}
			for h := range cfg.KVHeads {
				m.rope(ws.k[r*kvd+h*cfg.HeadDim:r*kvd+(h+1)*cfg.HeadDim], cs, sn)
			}
		}
		row = 0
		for _, sp := range batch {
			a, b := row, row+len(sp.Tokens)
			if err := c.Append(li, sp.Seq, ws.k[a*kvd:b*kvd], ws.v[a*kvd:b*kvd]); err != nil {
				return nil, fmt.Errorf("model: layer %d: %w", li, err)
			}
			if err := c.Attend(li, sp.Seq, ws.q[a*qd:b*qd], ws.att[a*qd:b*qd]); err != nil {
				return nil, fmt.Errorf("model: layer %d: %w", li, err)
			}
			row = b
		}
		if err := linalg.MatMul(ws.xb, ly.wo, ws.att, n); err != nil {
			return nil, fmt.Errorf("model: layer %d attention output: %w", li, err)
		}
		addRows(ws.x, ws.xb)

		rmsNormRows(ws.xb, ws.x, ly.ffnNorm, cfg.Dim, cfg.RMSEps)
		if err := linalg.MatMulMany([][]float32{ws.hb, ws.hb2}, []linalg.Matrix{ly.wGate, ly.wUp}, ws.xb, n); err != nil {
			return nil, fmt.Errorf("model: layer %d gate/up: %w", li, err)
		}
		if err := linalg.SiLUMul(ws.hb, ws.hb2); err != nil {
			return nil, fmt.Errorf("model: layer %d SwiGLU: %w", li, err)
		}
		if err := linalg.MatMul(ws.xb, ly.wDown, ws.hb, n); err != nil {
			return nil, fmt.Errorf("model: layer %d down: %w", li, err)
		}
		addRows(ws.x, ws.xb)
	}

	// Logits only for the rows that need them.
	ws.rows = ws.rows[:0]
	row = 0
	for _, sp := range batch {
		if sp.AllLogits {
			for j := range sp.Tokens {
				ws.rows = append(ws.rows, row+j)
			}
		} else {
			ws.rows = append(ws.rows, row+len(sp.Tokens)-1)
		}
		row += len(sp.Tokens)
	}
	nr := len(ws.rows)
	sel := ws.xb[:nr*cfg.Dim] // xb is free now; rows are gathered in increasing order
	for i, r := range ws.rows {
		copy(sel[i*cfg.Dim:(i+1)*cfg.Dim], ws.x[r*cfg.Dim:(r+1)*cfg.Dim])
	}
	rmsNormRows(sel, sel, m.outNorm, cfg.Dim, cfg.RMSEps)
	ws.logits = grow(ws.logits, nr*cfg.Vocab)
	if err := linalg.MatMul(ws.logits, m.output, sel, nr); err != nil {
		return nil, fmt.Errorf("model: output: %w", err)
	}

	out := make([][]float32, len(batch))
	off := 0
	for i, sp := range batch {
		k := 1
		if sp.AllLogits {
			k = len(sp.Tokens)
		}
		out[i] = ws.logits[off*cfg.Vocab : (off+k)*cfg.Vocab]
		off += k
	}
	return out, nil
}

// embed writes token t's embedding row into dst.
func (m *Model) embed(dst []float32, t int32) error {
	rb, err := m.embd.Type.RowBytes(m.Dim)
	if err != nil {
		return err
	}
	if err := gguf.Dequantize(m.embd.Type, dst, m.embd.Data[int(t)*rb:(int(t)+1)*rb]); err != nil {
		return fmt.Errorf("model: embedding of token %d: %w", t, err)
	}
	return nil
}

// rmsNormRows normalizes each dim-wide row of x into dst (which may alias x).
func rmsNormRows(dst, x, w []float32, dim int, eps float32) {
	for r := 0; r+dim <= len(x) && r+dim <= len(dst); r += dim {
		xr, dr := x[r:r+dim], dst[r:r+dim]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		s := float32(1 / math.Sqrt(ss/float64(dim)+float64(eps)))
		for i, v := range xr {
			dr[i] = v * s * w[i]
		}
	}
}

func addRows(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

func addBiasRows(x, b []float32) {
	for r := 0; r < len(x); r += len(b) {
		addRows(x[r:r+len(b)], b)
	}
}
