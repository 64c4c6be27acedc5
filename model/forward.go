package model

import (
	"errors"
	"fmt"
	"math"

	"kvq/gguf"
	"kvq/internal/workpool"
	"kvq/kv"
	"kvq/linalg"
)

// Span is one sequence's share of a forward step: new tokens that continue its history.
type Span struct {
	Seq       kv.SeqID
	Tokens    []int32
	AllLogits bool // return logits for every token of the span, not only the last
}

// DefaultPassTokens is the pass size Forward uses when Model.PassTokens is 0. On
// llama-134m (768 wide, FFN 2048) a pass of 64 tokens keeps Forward's activations at
// 1.4 MiB (22.5 KiB per token) and the matrix products' quantized inputs at about
// 0.5 MiB, against 11 + 4.5 MiB for a 512-token step, at the same CPU time per
// prefill token since the Q8_0 tile kernel prefetches the rows each pass reads from
// memory again (kvq bench prefill, Q8_0, three interleaved runs: 0.98, 1.07, 0.93
// CPU-ms per token with passes of 64 against 0.99, 1.06, 0.98 with one of 512).
const DefaultPassTokens = 64

// workspace holds Forward's scratch buffers, sized for one pass and reused across
// calls.
type workspace struct {
	arena                        []float32 // backs x … hb2 (see pass)
	x, xb, q, k, v, att, hb, hb2 []float32
	selOf                        []int     // per row of the pass: its row in sel, or -1 (no logits)
	sel                          []float32 // the rows that need logits, in order, normalized for the output product
	logits                       []float32
	cos, sin                     []float32 // per token × RopeDims/2
	lcos, lsin                   []float32 // the same for sliding-window layers with their own RoPE base
	start                        []int     // per span: its sequence's length before the call
	pieces                       []piece
	out                          [][]float32
	errs                         []error // per piece, of a layer's parallel Append and Attend
	bseqs                        []kv.SeqID
	bq, bout                     [][]float32 // per piece, its queries and attention output (kv.BatchAttender)
	// runRows's state: the stage and layer it runs over stageN rows in stageParts
	// runs, and stagePart, which runs one (made once: a closure per call would be
	// garbage on every decode step).
	stage              rowStage
	stageLayer, stageN int
	stageParts         int
	stagePart          func(i int)
	// act is the input of the product after the stage, quantized by the stage's
	// rows (stageRows calls act.Quantize) so that no goroutine quantizes it alone
	// before the product.
	act linalg.Activations
	// attendPieces' state for runPiece (made once, as stagePart): the cache and
	// pieces of the loop (the layer is stageLayer), whether each piece's stageQK runs in it (the pass's
	// smallPieces), and whether each piece attends on its own (a cache that is not a
	// kv.BatchAttender).
	pieceCache  kv.Cache
	pieceList   []piece
	qkFused     bool
	pieceAttend bool
	pieceRun    func(i int)
}

// piece is the part of one span that a pass runs: tokens at positions pos… of seq.
// The pass computes logits for the piece's last nLogits tokens into the rows
// logitRow… of the call's logits.
type piece struct {
	seq      kv.SeqID
	tokens   []int32
	pos      int
	nLogits  int
	logitRow int
	row      int // the pass's row of the piece's first token
}

// grow returns b with length n, reusing its array when it has room (the contents
// are not cleared), else a new zeroed slice.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// ErrTokenRange reports a token id outside the vocabulary.
var ErrTokenRange = errors.New("model: token id out of range")

// Forward runs one step over a batch of spans: it reserves cache room for every span
// (undoing all reservations if one fails), then runs the transformer over all tokens,
// appending K/V to the cache and attending per span. Each new token's position is
// its sequence's length before this step plus its index in the span.
//
// A batch of more than PassTokens tokens runs in passes of at most PassTokens tokens
// through all layers, each pass a cache step of its own (Grow, then per layer Append
// and Attend): the cache's causal attention makes that equal to one step, and the
// activations then take memory for one pass, not for the batch. Passes are used
// only on caches without a byte budget: with one, a pass could run out of memory
// after earlier passes changed the cache (the step buffers of passes, sized pass by
// pass, can exceed those of one step, and undoing passes keeps them), so the batch
// runs as one step, which fails before any change with kv.ErrNoSpace. A caller with a
// budget bounds its steps itself (engine.Config.MaxBatchTokens). Should a pass other
// than the first fail, the sequences are truncated back to their lengths before the
// call; if the cache refuses that, the error says so and does not wrap the cause.
//
// It returns one logits slice per span: len(Tokens)·Vocab values when AllLogits, else
// Vocab values for the span's last token. The slices are valid until the next call.
func (m *Model) Forward(c kv.Cache, batch []Span) ([][]float32, error) {
	ws := &m.ws
	n, nLogits := 0, 0
	ws.start = ws.start[:0]
	for i, sp := range batch {
		if len(sp.Tokens) == 0 {
			return nil, fmt.Errorf("model: span %d of sequence %d has no tokens", i, sp.Seq)
		}
		for _, t := range sp.Tokens {
			if t < 0 || int(t) >= m.Vocab {
				return nil, fmt.Errorf("%w: %d (vocabulary %d)", ErrTokenRange, t, m.Vocab)
			}
		}
		for j := range i {
			if batch[j].Seq == sp.Seq {
				return nil, fmt.Errorf("model: sequence %d appears in spans %d and %d of one batch (give it one span)", sp.Seq, j, i)
			}
		}
		ws.start = append(ws.start, c.Len(sp.Seq))
		n += len(sp.Tokens)
		nLogits += spanLogits(sp)
	}
	ws.logits = grow(ws.logits, nLogits*m.Vocab)
	if cap(ws.out) < len(batch) {
		ws.out = make([][]float32, len(batch))
	}
	out := ws.out[:len(batch)]
	off := 0
	for i, sp := range batch {
		k := spanLogits(sp)
		out[i] = ws.logits[off*m.Vocab : (off+k)*m.Vocab]
		off += k
	}

	pass := m.PassTokens
	if pass <= 0 {
		pass = DefaultPassTokens
	}
	if n > pass && c.Usage().BudgetBytes > 0 {
		pass = n // see below
	}
	if err := m.runPasses(c, batch, pass); err != nil {
		return nil, err
	}
	return out, nil
}

// runPasses runs batch in passes of at most pass tokens, in order.
func (m *Model) runPasses(c kv.Cache, batch []Span, pass int) error {
	ws := &m.ws
	lrow := 0
	si, ti := 0, 0 // next token: span si, index ti
	for passes := 0; si < len(batch); passes++ {
		ws.pieces = ws.pieces[:0]
		for room := pass; room > 0 && si < len(batch); {
			sp := batch[si]
			k := min(room, len(sp.Tokens)-ti)
			pc := piece{seq: sp.Seq, tokens: sp.Tokens[ti : ti+k], pos: ws.start[si] + ti, logitRow: lrow}
			switch {
			case sp.AllLogits:
				pc.nLogits = k
			case ti+k == len(sp.Tokens):
				pc.nLogits = 1
			}
			lrow += pc.nLogits
			ws.pieces = append(ws.pieces, pc)
			room -= k
			if ti += k; ti == len(sp.Tokens) {
				si, ti = si+1, 0
			}
		}
		if err := m.pass(c, ws.pieces); err != nil {
			if passes == 0 {
				return err // nothing to undo beyond what pass undid itself
			}
			return m.rollback(c, batch, err)
		}
	}
	return nil
}

// spanLogits is the number of logits rows Forward returns for sp.
func spanLogits(sp Span) int {
	if sp.AllLogits {
		return len(sp.Tokens)
	}
	return 1
}

// rollback truncates every span's sequence back to its length before Forward after a
// pass other than the first failed with cause.
func (m *Model) rollback(c kv.Cache, batch []Span, cause error) error {
	var failed error
	for i, sp := range batch {
		if err := c.Truncate(sp.Seq, m.ws.start[i]); err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return fmt.Errorf("model: a pass failed (%v) and the cache kept the tokens of earlier passes (%v)", cause, failed)
	}
	return cause
}

// pass runs the tokens of pieces through the model as one cache step and writes the
// logits the pieces ask for into m.ws.logits. It reserves cache room for every piece
// first, undoing all of them if one fails.
func (m *Model) pass(c kv.Cache, pieces []piece) error {
	lt := newLapTimer(m.Timings)
	n := 0
	for i, pc := range pieces {
		if err := c.Grow(pc.seq, pc.tokens); err != nil {
			for j := range i {
				_ = c.Truncate(pieces[j].seq, pieces[j].pos) // undoing a Grow before any Append cannot fail
			}
			return fmt.Errorf("model: reserving %d tokens for sequence %d: %w", len(pc.tokens), pc.seq, err)
		}
		n += len(pc.tokens)
	}
	lt.lap(PartAttention)

	cfg := &m.Config
	ws := &m.ws
	qd, kvd := cfg.QDim(), cfg.KVDim()
	// One arena: the residual x and the normalized xb, then the attention buffers
	// q, k, v, att, which the FFN's hb, hb2 overlay (a layer's attention is done,
	// its output added to x, before the FFN starts).
	nd, attn, ffn := n*cfg.Dim, 2*n*(qd+kvd), 2*n*cfg.FFN
	ws.arena = grow(ws.arena, 2*nd+max(attn, ffn))
	carve := func(off *int, size int) []float32 {
		b := ws.arena[*off : *off+size : *off+size]
		*off += size
		return b
	}
	off := 0
	ws.x, ws.xb = carve(&off, nd), carve(&off, nd)
	shared := off
	ws.q, ws.k, ws.v, ws.att = carve(&off, n*qd), carve(&off, n*kvd), carve(&off, n*kvd), carve(&off, n*qd)
	off = shared
	ws.hb, ws.hb2 = carve(&off, n*cfg.FFN), carve(&off, n*cfg.FFN)

	// Embeddings and RoPE angles per token.
	half := cfg.RopeDims / 2
	ws.cos = grow(ws.cos, n*half)
	ws.sin = grow(ws.sin, n*half)
	if m.localFreq != nil {
		ws.lcos = grow(ws.lcos, n*half)
		ws.lsin = grow(ws.lsin, n*half)
	}
	row := 0
	for i := range pieces {
		pc := &pieces[i]
		pc.row = row
		for j, t := range pc.tokens {
			if err := m.embed(ws.x[row*cfg.Dim:(row+1)*cfg.Dim], t); err != nil {
				return err
			}
			ropeAngles(m.ropeFreq, ws.cos[row*half:(row+1)*half], ws.sin[row*half:(row+1)*half], pc.pos+j)
			if m.localFreq != nil {
				ropeAngles(m.localFreq, ws.lcos[row*half:(row+1)*half], ws.lsin[row*half:(row+1)*half], pc.pos+j)
			}
			row++
		}
	}

	ws.qkFused = m.smallPieces(pieces)
	for li := range m.layers {
		ly := &m.layers[li]
		qkv := []linalg.Matrix{ly.wq, ly.wk, ly.wv}
		if err := ws.act.Prepare(ws.xb, n, qkv...); err != nil {
			return fmt.Errorf("model: layer %d q/k/v: %w", li, err)
		}
		m.runRows(stageAttnIn, li, n)
		lt.lap(PartOther)
		if err := linalg.MatMulQuantized([][]float32{ws.q, ws.k, ws.v}, qkv, &ws.act); err != nil {
			return fmt.Errorf("model: layer %d q/k/v: %w", li, err)
		}
		lt.lap(PartQKV)
		if !ws.qkFused {
			m.runRows(stageQK, li, n)
			lt.lap(PartOther)
		}
		if err := m.attendPieces(c, li, pieces); err != nil {
			return err
		}
		lt.lap(PartAttention)
		if err := linalg.MatMul(ws.xb, ly.wo, ws.att, n); err != nil {
			return fmt.Errorf("model: layer %d attention output: %w", li, err)
		}
		lt.lap(PartAttnOut)
		gateUp := []linalg.Matrix{ly.wGate, ly.wUp}
		if err := ws.act.Prepare(ws.xb, n, gateUp...); err != nil {
			return fmt.Errorf("model: layer %d gate/up: %w", li, err)
		}
		m.runRows(stageFFNIn, li, n)
		lt.lap(PartOther)
		if err := linalg.MatMulQuantized([][]float32{ws.hb, ws.hb2}, gateUp, &ws.act); err != nil {
			return fmt.Errorf("model: layer %d gate/up: %w", li, err)
		}
		lt.lap(PartGateUp)
		down := []linalg.Matrix{ly.wDown}
		if err := ws.act.Prepare(ws.hb[:n*cfg.FFN], n, down...); err != nil {
			return fmt.Errorf("model: layer %d down: %w", li, err)
		}
		m.runRows(stageAct, li, n)
		lt.lap(PartOther)
		if err := linalg.MatMulQuantized([][]float32{ws.xb}, down, &ws.act); err != nil {
			return fmt.Errorf("model: layer %d down: %w", li, err)
		}
		lt.lap(PartDown)
	}
	// Logits only for the rows that need them. They are consecutive rows of the
	// call's logits: a pass is a contiguous run of the batch's tokens. The last
	// stage adds the last layer's output to those rows and normalizes them into sel,
	// in row order (row r goes to row ws.selOf[r] of sel).
	ws.selOf = grow(ws.selOf, n)
	row, nr := 0, 0
	first := -1
	for _, pc := range pieces {
		if pc.nLogits > 0 && first < 0 {
			first = pc.logitRow
		}
		for j := range pc.tokens {
			ws.selOf[row+j] = -1
			if j >= len(pc.tokens)-pc.nLogits {
				ws.selOf[row+j] = nr
				nr++
			}
		}
		row += len(pc.tokens)
	}
	ws.sel = grow(ws.sel, nr*cfg.Dim)
	output := []linalg.Matrix{m.output}
	if err := ws.act.Prepare(ws.sel, nr, output...); err != nil {
		return fmt.Errorf("model: output: %w", err)
	}
	m.runRows(stageOut, len(m.layers)-1, n)
	lt.lap(PartOther)
	defer lt.lap(PartLogits)
	if nr == 0 {
		return nil
	}
	logits := ws.logits[first*cfg.Vocab : (first+nr)*cfg.Vocab]
	if err := linalg.MatMulQuantized([][]float32{logits}, output, &ws.act); err != nil {
		return fmt.Errorf("model: output: %w", err)
	}
	if c := cfg.FinalSoftCap; c > 0 {
		for i, x := range logits {
			logits[i] = float32(float64(c) * math.Tanh(float64(x)/float64(c)))
		}
	}
	return nil
}

// smallPieces reports whether every piece of the pass has at most minStageRows
// tokens (a decode step's pieces have one): the per-piece loop of attendPieces then
// also runs each piece's stageQK, which saves the stage a parallel loop of its own,
// and the loop's items stay small enough to balance.
func (m *Model) smallPieces(pieces []piece) bool {
	if len(pieces) < 2 {
		return false
	}
	for i := range pieces {
		if len(pieces[i].tokens) > minStageRows {
			return false
		}
	}
	return true
}

// attendPieces appends the keys and values of layer li to the cache and attends,
// for every piece of the pass; the pieces (different sequences) run in parallel,
// each after its rows' stageQK when the pieces are small (smallPieces; otherwise
// the caller has run the stage over all rows). A cache that attends a step's
// sequences together (kv.BatchAttender: history they share computed once) gets
// them in one call after the appends.
func (m *Model) attendPieces(c kv.Cache, li int, pieces []piece) error {
	if len(pieces) == 1 {
		return m.attendPiece(c, li, &pieces[0])
	}
	ws := &m.ws
	ws.errs = grow(ws.errs, len(pieces))
	ba, batched := c.(kv.BatchAttender)
	ws.stage, ws.stageLayer = stageQK, li
	ws.pieceCache, ws.pieceList, ws.pieceAttend = c, pieces, !batched
	if ws.pieceRun == nil {
		ws.pieceRun = m.runPiece // made once: a method value per call would be garbage
	}
	workpool.For(linalg.Threads(), len(pieces), ws.pieceRun)
	ws.pieceCache, ws.pieceList = nil, nil
	for _, err := range ws.errs {
		if err != nil {
			return err
		}
	}
	if !batched {
		return nil
	}
	qd := m.Heads * m.HeadDim
	ws.bseqs, ws.bq, ws.bout = ws.bseqs[:0], ws.bq[:0], ws.bout[:0]
	for i := range pieces {
		pc := &pieces[i]
		a, b := pc.row, pc.row+len(pc.tokens)
		ws.bseqs = append(ws.bseqs, pc.seq)
		ws.bq, ws.bout = append(ws.bq, ws.q[a*qd:b*qd]), append(ws.bout, ws.att[a*qd:b*qd])
	}
	if err := ba.AttendBatch(li, ws.bseqs, ws.bq, ws.bout); err != nil {
		return fmt.Errorf("model: layer %d: %w", li, err)
	}
	return nil
}

// runPiece is attendPieces' work for piece i: its rows' stageQK when fused, then
// its append (and, for a cache that attends sequence by sequence, its attention).
func (m *Model) runPiece(i int) {
	ws := &m.ws
	pc := &ws.pieceList[i]
	if ws.qkFused {
		m.stageRows(pc.row, pc.row+len(pc.tokens))
	}
	if ws.pieceAttend {
		ws.errs[i] = m.attendPiece(ws.pieceCache, ws.stageLayer, pc)
	} else {
		ws.errs[i] = m.appendPiece(ws.pieceCache, ws.stageLayer, pc)
	}
}

// appendPiece appends the keys and values of layer li of one piece.
func (m *Model) appendPiece(c kv.Cache, li int, pc *piece) error {
	kvd := m.KVDim()
	a, b := pc.row, pc.row+len(pc.tokens)
	if err := c.Append(li, pc.seq, m.ws.k[a*kvd:b*kvd], m.ws.v[a*kvd:b*kvd]); err != nil {
		return fmt.Errorf("model: layer %d: %w", li, err)
	}
	return nil
}

// attendPiece appends the keys and values of layer li of one piece and attends its
// queries.
func (m *Model) attendPiece(c kv.Cache, li int, pc *piece) error {
	ws := &m.ws
	qd := m.Heads * m.HeadDim
	a, b := pc.row, pc.row+len(pc.tokens)
	if err := m.appendPiece(c, li, pc); err != nil {
		return err
	}
	if err := c.Attend(li, pc.seq, ws.q[a*qd:b*qd], ws.att[a*qd:b*qd]); err != nil {
		return fmt.Errorf("model: layer %d: %w", li, err)
	}
	return nil
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
	if s := m.EmbedScale; s != 1 {
		for i := range dst {
			dst[i] *= s
		}
	}
	return nil
}

// geluMul does g[i] = gelu(g[i])·u[i].
func geluMul(g, u []float32) {
	u = u[:len(g)]
	for i, v := range g {
		g[i] = geluTanh(v) * u[i]
	}
}

// geluTanh is GELU's tanh form, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), computed
// in float64 and rounded once.
func geluTanh(v float32) float32 {
	const c = 0.7978845608028654 // √(2/π)
	x := float64(v)
	return float32(0.5 * x * (1 + math.Tanh(c*x*(1+0.044715*x*x))))
}

// rmsNormRows normalizes each dim-wide row of x into dst (which may alias x). The
// sum of squares is taken in float64 (each square is exact) over four interleaved
// partial sums, which the compiler keeps in registers and the CPU adds
// independently; a row's result depends on that row alone.
func rmsNormRows(dst, x, w []float32, dim int, eps float32) {
	w = w[:dim]
	for r := 0; r+dim <= len(x) && r+dim <= len(dst); r += dim {
		xr, dr := x[r:r+dim:r+dim], dst[r:r+dim:r+dim]
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= dim; i += 4 {
			v := xr[i : i+4 : i+4]
			s0 += float64(v[0]) * float64(v[0])
			s1 += float64(v[1]) * float64(v[1])
			s2 += float64(v[2]) * float64(v[2])
			s3 += float64(v[3]) * float64(v[3])
		}
		for ; i < dim; i++ {
			s0 += float64(xr[i]) * float64(xr[i])
		}
		normRow(dr, xr, w, (s0+s1)+(s2+s3), eps)
	}
}

// normRow writes the row x, whose sum of squares is ss, normalized and scaled by w
// into dst (which may alias x): dst[i] = x[i]·w[i] / sqrt(ss/len(x) + eps).
func normRow(dst, x, w []float32, ss float64, eps float32) {
	s := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	dst, w = dst[:len(x)], w[:len(x)]
	for i, v := range x {
		dst[i] = v * s * w[i]
	}
}

// addNormRows adds the dim-wide rows of y to those of x (x[i] += y[i]) and writes
// x's rows normalized into y: addRows then rmsNormRows(y, x, ...), bit for bit, in
// one pass over the rows for the add and the sum of squares.
func addNormRows(x, y, w []float32, dim int, eps float32) {
	w = w[:dim]
	for r := 0; r+dim <= len(x) && r+dim <= len(y); r += dim {
		xr, yr := x[r:r+dim:r+dim], y[r:r+dim:r+dim]
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= dim; i += 4 {
			a, b := xr[i:i+4:i+4], yr[i:i+4:i+4]
			a0, a1, a2, a3 := a[0]+b[0], a[1]+b[1], a[2]+b[2], a[3]+b[3]
			a[0], a[1], a[2], a[3] = a0, a1, a2, a3
			s0 += float64(a0) * float64(a0)
			s1 += float64(a1) * float64(a1)
			s2 += float64(a2) * float64(a2)
			s3 += float64(a3) * float64(a3)
		}
		for ; i < dim; i++ {
			xr[i] += yr[i]
			s0 += float64(xr[i]) * float64(xr[i])
		}
		normRow(yr, xr, w, (s0+s1)+(s2+s3), eps)
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
