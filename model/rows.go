package model

import (
	"kvq/internal/workpool"
	"kvq/linalg"
	"kvq/quant"
)

// rowStage is a piece of a layer's per-token work between its matrix products: the
// norms, biases, RoPE, residual adds and the FFN's activation. Each token's row is
// computed on its own with the same arithmetic whatever the pass's other tokens, so
// a pass splits its rows between the threads (runRows) without changing a bit.
type rowStage uint8

const (
	stageAttnIn rowStage = iota // the previous layer's FFN output added to x (none before layer 0); x normalized into xb
	stageQK                     // biases, per-head q/k norms and RoPE of q and k
	stageFFNIn                  // the attention output added to x; x normalized into xb
	stageAct                    // SwiGLU (or GeGLU) of hb and hb2 into hb
	stageOut                    // the last layer's FFN output added to x (li < 0: no layers); the rows that need logits normalized into sel
)

// minStageRows is the fewest token rows a thread takes in runRows: below it a
// hand-off to a helper costs about what it saves. At 4, a 16-sequence decode step
// splits its rows four ways (llama-134m: the stages' wall time per step fell from
// about 1.5 to 1.0 ms on an idle machine).
const minStageRows = 4

// runRows runs stage s of layer li over the pass's n token rows, split into runs of
// consecutive rows for up to linalg.Threads() goroutines: up to four runs per thread,
// taken one at a time, so that a thread slowed by other load is caught up.
func (m *Model) runRows(s rowStage, li, n int) {
	ws := &m.ws
	ws.stage, ws.stageLayer, ws.stageN = s, li, n
	threads := linalg.Threads()
	parts := min(4*threads, n/minStageRows)
	if threads <= 1 || parts <= 1 {
		m.stageRows(0, n)
		return
	}
	if ws.stagePart == nil {
		ws.stagePart = func(i int) { m.stageRows(i*ws.stageN/ws.stageParts, (i+1)*ws.stageN/ws.stageParts) }
	}
	ws.stageParts = parts
	workpool.For(threads, parts, ws.stagePart)
}

// stageRows runs the workspace's stage over token rows [r0, r1).
func (m *Model) stageRows(r0, r1 int) {
	cfg, ws := &m.Config, &m.ws
	li := ws.stageLayer
	dim := cfg.Dim
	x, xb := ws.x[r0*dim:r1*dim], ws.xb[r0*dim:r1*dim]
	if ws.stage == stageOut {
		if li >= 0 {
			m.addOutput(x, xb, m.layers[li].postFFN)
		}
		i0, i1 := -1, -1 // the rows' sel indices: consecutive, in row order
		for r := r0; r < r1; r++ {
			if i := ws.selOf[r]; i >= 0 {
				rmsNormRows(ws.sel[i*dim:(i+1)*dim], ws.x[r*dim:(r+1)*dim], m.outNorm, dim, cfg.RMSEps)
				if i0 < 0 {
					i0 = i
				}
				i1 = i + 1
			}
		}
		if i0 >= 0 {
			ws.act.Quantize(i0, i1)
		}
		return
	}
	ly := &m.layers[li]
	switch ws.stage {
	case stageAttnIn:
		if li > 0 {
			m.addOutputNorm(x, xb, m.layers[li-1].postFFN, ly.attnNorm)
		} else {
			rmsNormRows(xb, x, ly.attnNorm, dim, cfg.RMSEps)
		}
	case stageQK:
		qd, kvd, hd := cfg.QDim(), cfg.KVDim(), cfg.HeadDim
		q, k, v := ws.q[r0*qd:r1*qd], ws.k[r0*kvd:r1*kvd], ws.v[r0*kvd:r1*kvd]
		if ly.bq != nil {
			addBiasRows(q, ly.bq)
			addBiasRows(k, ly.bk)
			addBiasRows(v, ly.bv)
		}
		if ly.qNorm != nil {
			rmsNormRows(q, q, ly.qNorm, hd, cfg.RMSEps)
			rmsNormRows(k, k, ly.kNorm, hd, cfg.RMSEps)
		}
		half := cfg.RopeDims / 2
		cos, sin := ws.cos, ws.sin
		if ly.window > 0 && m.localFreq != nil {
			cos, sin = ws.lcos, ws.lsin
		}
		for r := r0; r < r1; r++ {
			cs, sn := cos[r*half:(r+1)*half], sin[r*half:(r+1)*half]
			quant.RotateHeads(ws.q[r*qd:(r+1)*qd], cfg.Heads, hd, cs, sn, cfg.RopeNeoX)
			quant.RotateHeads(ws.k[r*kvd:(r+1)*kvd], cfg.KVHeads, hd, cs, sn, cfg.RopeNeoX)
		}
	case stageFFNIn:
		m.addOutputNorm(x, xb, ly.postAttn, ly.ffnNorm)
	case stageAct:
		ffn := cfg.FFN
		for r := r0; r < r1; r++ {
			g, u := ws.hb[r*ffn:(r+1)*ffn], ws.hb2[r*ffn:(r+1)*ffn]
			if cfg.GELU {
				geluMul(g, u)
			} else {
				// A row at a time, so that a token's values take the same path
				// through the kernel (its SIMD body or its scalar tail) whatever
				// the rows beside it; g and u have one length: it cannot fail.
				_ = linalg.SiLUMul(g, u)
			}
		}
	}
	if ws.stage != stageQK {
		ws.act.Quantize(r0, r1) // the next product's input, prepared by forward
	}
}

// addOutput adds a sublayer's output rows y to the residual rows x, normalized first
// with norm when the model has that norm (not nil); y is overwritten then.
func (m *Model) addOutput(x, y, norm []float32) {
	if norm != nil {
		rmsNormRows(y, y, norm, m.Dim, m.RMSEps)
	}
	addRows(x, y)
}

// addOutputNorm is addOutput(x, y, norm) then rmsNormRows(y, x, next): the next
// sublayer's input, normalized with next, in y. Without a norm of the output the
// add and the next norm's sum of squares share one pass (addNormRows).
func (m *Model) addOutputNorm(x, y, norm, next []float32) {
	if norm != nil {
		m.addOutput(x, y, norm)
		rmsNormRows(y, x, next, m.Dim, m.RMSEps)
		return
	}
	addNormRows(x, y, next, m.Dim, m.RMSEps)
}
