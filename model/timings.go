package model

import "time"

// Part is a part of a forward pass, for Timings.
type Part int

// The parts of a forward pass, in the order a layer runs them.
const (
	PartQKV       Part = iota // the query, key and value products
	PartAttention             // the KV cache: reserving, appending and attending (a decode step's q/k biases, norms and RoPE too: smallPieces)
	PartAttnOut               // the attention output product
	PartGateUp                // the FFN's gate and up products
	PartDown                  // the FFN's down product
	PartLogits                // the output product (and the final soft cap)
	PartOther                 // embeddings, norms (the final one too), RoPE, biases, residual adds, SwiGLU
	NumParts
)

var partNames = [NumParts]string{"qkv", "attention", "attn_out", "gate_up", "down", "logits", "other"}

// String returns the part's short name (as in kvq bench decode --breakdown's JSON).
func (p Part) String() string {
	if p < 0 || p >= NumParts {
		return "unknown"
	}
	return partNames[p]
}

// Timings accumulates the wall time of each part of the forward passes run while it
// is set as Model.Timings (nil, the default, measures nothing). Passes counts them.
// One pass is timed by one goroutine: the parts that run in parallel inside it count
// once, as the time the pass waited for them.
type Timings struct {
	Passes int
	Parts  [NumParts]time.Duration
}

// lapTimer attributes the wall time between marks to parts; a nil lapTimer (no
// Timings) does nothing.
type lapTimer struct {
	t    *Timings
	last time.Time
}

func newLapTimer(t *Timings) lapTimer {
	if t == nil {
		return lapTimer{}
	}
	t.Passes++
	return lapTimer{t: t, last: time.Now()}
}

// lap adds the time since the previous mark to p.
func (l *lapTimer) lap(p Part) {
	if l.t == nil {
		return
	}
	now := time.Now()
	l.t.Parts[p] += now.Sub(l.last)
	l.last = now
}
