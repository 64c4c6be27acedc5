package linalg

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"kvq/gguf"
	"kvq/internal/workpool"
)

// Tuning of the blocked product.
const (
	// xBlockBytes bounds the activations of one block of tokens, kept hot in L2 while
	// a chunk of weight rows is multiplied against it.
	xBlockBytes = 128 << 10
	// chunkBytes is the target weight bytes of one parallel chunk of rows of the tile
	// kernel: small enough to stay in L2 across token blocks, large enough to amortize
	// scheduling.
	chunkBytes = 64 << 10
	// unitBytes is the target weight bytes of one unit of rows of the other kernels,
	// which threads take in runs of consecutive units (workpool.ForRuns): the smallest
	// run, so what one thread may still have to do when the other has finished.
	unitBytes = 16 << 10
	// serialWork is the product size (weight bytes × tokens) under which MatMul stays
	// on the calling goroutine.
	serialWork = 128 << 10
	// serialQuant is the activation count under which they are quantized on the calling
	// goroutine.
	serialQuant = 64 << 10
	// prefetchRows is how many rows ahead of the one being multiplied a chunk asks the
	// CPU to fetch (on the first token block): the hardware prefetcher alone leaves decode
	// about 5-10% short of that in CPU time per token (interleaved A/B runs, llama-134m
	// shape, Q8_0).
	prefetchRows = 4
)

// MatMul computes out = W·x for n tokens: for i < n and r < w.Rows,
//
//	out[i*w.Rows+r] = Σ_c W[r,c]·x[i*w.Cols+c]
//
// x holds n tokens of w.Cols float32 values, token-major; out receives n tokens of w.Rows
// values. Only out[:n*w.Rows] is written; out must not overlap x. n = 1 is a matrix-vector
// product (decode); for n > 1 (prefill) each weight row is read from memory once per
// block of tokens, not once per token.
//
// Q8_0, Q4_0, Q4_K and Q6_K weights are multiplied against x quantized per 32-value block
// to int8 with a float32 scale (llama.cpp's q8_0 dot): the result differs from the exact
// product by at most Σ_c |W[r,c]|·max|x_block(c)|/254 plus float32 rounding (the bound
// the conformance tests check).
//
// It returns an error wrapping ErrShape or ErrUnsupportedType, and writes nothing, when
// w is invalid (see NewMatrix), n is negative or out or x are too short. A weight row that
// fails to decode (types multiplied through gguf.Dequantize) returns that error, wrapped,
// with out partly written.
func MatMul(out []float32, w Matrix, x []float32, n int) error {
	return matMul("MatMul", [][]float32{out}, []Matrix{w}, x, n)
}

// MatMulMany computes outs[j] = ws[j]·x for every j, as MatMul does for each, for weights
// that share their input (a layer's q, k and v projections; its gate and up projections).
// The outputs must not overlap each other or x.
// It quantizes x once and spreads all the products over the threads in one dispatch, so
// it costs less than separate MatMul calls. Every ws[j] must have the same Cols. On an
// invalid argument it returns an error and writes nothing.
func MatMulMany(outs [][]float32, ws []Matrix, x []float32, n int) error {
	if len(outs) != len(ws) {
		return fmt.Errorf("linalg: MatMulMany: %w: %d outputs for %d matrices", ErrShape, len(outs), len(ws))
	}
	for j := 1; j < len(ws); j++ {
		if ws[j].Cols != ws[0].Cols {
			return fmt.Errorf("linalg: MatMulMany: %w: matrix %d has %d columns, matrix 0 has %d",
				ErrShape, j, ws[j].Cols, ws[0].Cols)
		}
	}
	return matMul("MatMulMany", outs, ws, x, n)
}

// checkProduct validates one product's arguments.
func checkProduct(name string, out []float32, w Matrix, x []float32, n int) error {
	if err := w.check(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("linalg: %s: %w: negative token count %d", name, ErrShape, n)
	}
	if (w.Rows > 0 && n > math.MaxInt/w.Rows) || (w.Cols > 0 && n > math.MaxInt/w.Cols) {
		return fmt.Errorf("linalg: %s: %w: %d tokens of a %d×%d matrix overflow", name, ErrShape, n, w.Rows, w.Cols)
	}
	if len(out) < n*w.Rows {
		return fmt.Errorf("linalg: %s: %w: out has %d values, want %d tokens × %d rows = %d",
			name, ErrShape, len(out), n, w.Rows, n*w.Rows)
	}
	if len(x) < n*w.Cols {
		return fmt.Errorf("linalg: %s: %w: x has %d values, want %d tokens × %d columns = %d",
			name, ErrShape, len(x), n, w.Cols, n*w.Cols)
	}
	return nil
}

func matMul(name string, outs [][]float32, ws []Matrix, x []float32, n int) error {
	needQ, needSums, needTile, needI, needTileSums := false, false, false, false, false
	for j, w := range ws {
		if err := checkProduct(name, outs[j], w, x, n); err != nil {
			if len(ws) > 1 {
				return fmt.Errorf("matrix %d: %w", j, err)
			}
			return err
		}
		switch w.Type {
		case gguf.TypeQ8_0:
			// Enough tokens go through the tile kernel, 4 to 5 through the 4-token ones.
			tile := n >= tileMinTokens(w.Type)
			needQ, needTile, needI = true, needTile || tile, needI || !tile && n >= 4
		case gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ6_K:
			needQ, needTile = true, needTile || n >= tileMinTokens(w.Type)
		case gguf.TypeQ4_K:
			tile := n >= tileMinTokens(w.Type)
			needQ, needSums, needTile, needTileSums = true, true, needTile || tile, needTileSums || tile
		}
	}
	if n == 0 || len(ws) == 0 {
		return nil
	}
	cols := ws[0].Cols
	x = x[:n*cols]
	k := active.Load()
	var xq, xi []int8
	var xd, xs, xdg, xsg []float32
	var xg []int16
	var xsum []int32
	if needQ && cols > 0 {
		ng := 0
		if needTile {
			ng = (n + tileTokens - 1) / tileTokens
		}
		s := getQ8Scratch(n*cols, ng*tileTokens*cols)
		defer putQ8Scratch(s)
		xq, xd, xsum = s.q, s.d, s.sum
		if needI {
			xi, xs = s.i, s.s
		}
		if needTile {
			xg, xdg = s.g, s.gd
		}
		if needTileSums {
			xsg = s.gs
		}
		q := quantTask{k: k, x: x, n: n, cols: cols, xq: xq, xd: xd}
		if needSums {
			q.xsum = xsum
		}
		if needI {
			q.xi, q.xs = xi, xs
		}
		if needTile {
			q.xg, q.xdg = xg, xdg
		}
		if needTileSums {
			q.xsg = xsg
		}
		if groups := (n + 7) / 8; n*cols >= serialQuant {
			pq := q // escapes through parallelFor: a heap copy only on this path
			parallelFor(groups, pq.run)
		} else {
			for g := 0; g < groups; g++ {
				q.run(g)
			}
		}
	}
	st := getCallState(len(ws))
	defer putCallState(st)
	ps := st.ps
	var work int64
	// Whether a product reads its rows more than once (in the tile kernel, or once per
	// token block): those run in chunks that stay in cache, the others in runs.
	reread := false
	for j, w := range ws {
		p := &ps[j]
		*p = product{k: k, w: w, out: outs[j][:n*w.Rows], x: x, n: n, xq: xq, xd: xd, xi: xi, xs: xs, xsum: xsum}
		if n >= tileMinTokens(w.Type) {
			p.xg, p.xdg = xg, xdg
			if w.Type == gguf.TypeQ4_K {
				p.xsg = xsg
			}
		}
		if w.Rows == 0 {
			continue
		}
		if cols == 0 {
			clear(p.out)
			continue
		}
		p.rb, _ = w.RowBytes() // checked above
		p.prepare()
		reread = reread || p.xg != nil || p.tb < n
		work += int64(w.Rows) * int64(p.rb) * int64(n)
	}
	if work < serialWork || Threads() == 1 {
		// Products through the tile kernel in chunks as the parallel path plans
		// them, one after the other, so that the rows widened for it stay
		// cache-sized; the others in one call (one stream over the rows).
		for j := range ps {
			p := &ps[j]
			if p.kind == kindNone {
				continue
			}
			rpc := p.w.Rows
			if p.xg != nil {
				p.plan(len(ps))
				rpc = p.rpc
			}
			for r0 := 0; r0 < p.w.Rows; r0 += rpc {
				p.chunk(r0, min(p.w.Rows, r0+rpc))
			}
		}
	} else if reread {
		// Chunks of every product in one list: first[j] is product j's first chunk.
		first := st.first
		first[0] = 0
		for j := range ps {
			first[j+1] = first[j]
			if p := &ps[j]; p.kind != kindNone {
				p.plan(len(ps))
				first[j+1] += (p.w.Rows + p.rpc - 1) / p.rpc
			}
		}
		parallelFor(first[len(ps)], func(c int) {
			j := 0
			for c >= first[j+1] {
				j++
			}
			p := &ps[j]
			r0 := (c - first[j]) * p.rpc
			p.chunk(r0, min(p.w.Rows, r0+p.rpc))
		})
	} else {
		// Units of about unitBytes of weights, product after product in one list
		// (first[j]: product j's first unit), run in runs of consecutive units: each
		// thread streams through its share of the rows in memory order, and the
		// kernels' prefetching runs on from one run into the next (see ForRuns).
		first := st.first
		first[0] = 0
		for j := range ps {
			first[j+1] = first[j]
			if p := &ps[j]; p.kind != kindNone {
				p.rpc = (max(1, unitBytes/max(1, p.rb)) + 3) &^ 3
				first[j+1] += (p.w.Rows + p.rpc - 1) / p.rpc
			}
		}
		workpool.ForRuns(Threads(), first[len(ps)], st.units)
	}
	for j := range ps {
		if ps[j].err != nil {
			return ps[j].err
		}
	}
	return nil
}

// product is the state of one weight × activations product shared by its chunks.
type product struct {
	k     *kernelSet
	w     Matrix
	rb    int // bytes per weight row
	out   []float32
	x     []float32
	n     int
	tb    int        // tokens per block
	rpc   int        // rows per parallel chunk
	kind  chunkKind  // the chunk method for the type and token count (see chunk)
	wf    []float32  // F32 weights viewed as float32
	xq    []int8     // quantized activations (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K)
	xd    []float32  // their per-block scales
	xi    []int8     // xq of 4-token groups, interleaved (n >= 4)
	xs    []float32  // xd of 4-token groups, interleaved (n >= 4)
	xsum  []int32    // per-block sums of xq (Q4_K)
	xg    []int16    // xq of 8-token groups packed by pack8 (n >= tileMinTokens)
	xdg   []float32  // xd of those groups, packed
	xsg   []float32  // xd·xsum of those groups, packed (Q4_K)
	widen tileWiden  // widens rows into tiles (when xg is set)
	dec   rowDecoder // row decoder of other types
	errMu sync.Mutex
	err   error
}

// chunkKind names the method that computes a product's chunks.
type chunkKind uint8

const (
	kindNone chunkKind = iota // nothing to compute (no rows, or no columns)
	kindF32
	kindF16
	kindQ8
	kindQ4
	kindQ5
	kindQ4K
	kindQ6K
	kindDecoded
	kindTile
)

// quantKind is the chunk method of a type multiplied natively against quantized
// activations, or kindNone.
func quantKind(t gguf.TensorType) chunkKind {
	switch t {
	case gguf.TypeQ8_0:
		return kindQ8
	case gguf.TypeQ4_0:
		return kindQ4
	case gguf.TypeQ5_0:
		return kindQ5
	case gguf.TypeQ4_K:
		return kindQ4K
	case gguf.TypeQ6_K:
		return kindQ6K
	}
	return kindNone
}

// chunk computes rows [r0, r1) for all tokens with the method prepare picked (a
// switch, not a stored method value: those allocate, once per product and call).
func (p *product) chunk(r0, r1 int) {
	switch p.kind {
	case kindF32:
		p.chunkF32(r0, r1)
	case kindF16:
		p.chunkF16(r0, r1)
	case kindQ8:
		p.chunkQ8(r0, r1)
	case kindQ4, kindQ5, kindQ4K, kindQ6K:
		p.chunkRows(r0, r1)
	case kindDecoded:
		p.chunkDecoded(r0, r1)
	case kindTile:
		p.chunkTile(r0, r1)
	}
}

// prepare picks the chunk kernel for the weight type and the token block size: the
// activations of one token block (as the kernel reads them) stay within xBlockBytes.
func (p *product) prepare() {
	w := p.w
	xTokenBytes := w.Cols * 4
	switch w.Type {
	case gguf.TypeF32:
		p.wf = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w.Data))), w.Rows*w.Cols)
		p.kind = kindF32
	case gguf.TypeF16:
		p.kind = kindF16
	default:
		p.kind = quantKind(w.Type)
		if p.kind == kindNone {
			p.dec = dequantizerFor(w.Type)
			p.kind = kindDecoded
			break
		}
		xTokenBytes = w.Cols + w.Cols/blockElems*4 // codes and block scales
		if w.Type == gguf.TypeQ4_K {
			xTokenBytes += w.Cols / blockElems * 4 // and the blocks' code sums
		}
	}
	if p.xg != nil {
		p.widen = tileWidener(p.k, w.Type)
		p.kind = kindTile
		xTokenBytes = 2*w.Cols + w.Cols/blockElems*4
	}
	p.tb = max(1, min(p.n, xBlockBytes/max(1, xTokenBytes)))
	if p.xg != nil {
		p.tb = max(tileTokens, p.tb&^(tileTokens-1)) // token blocks start on 8-token groups
	} else if p.tb >= 4 {
		p.tb &^= 3 // token blocks start on 4-token groups
	}
}

// plan sets the rows per parallel chunk: about chunkBytes of weights, and at least 4
// chunks per thread (over all nprod products of the call) so a thread slowed by other
// load is caught up by the others; a multiple of 4 rows.
func (p *product) plan(nprod int) {
	rows := p.w.Rows
	rpc := max(1, chunkBytes/max(1, p.rb))
	if perThread := rows * nprod / (4 * Threads()); perThread < rpc {
		rpc = max(1, perThread)
	}
	p.rpc = (rpc + 3) &^ 3
}

func (p *product) chunkF32(r0, r1 int) {
	rows, cols, dotT := p.w.Rows, p.w.Cols, p.k.dotF32T
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			if t0 == 0 && r+prefetchRows < r1 {
				prefetch(&p.w.Data[(r+prefetchRows)*p.rb], p.rb)
			}
			dotT(p.out[t0*rows+r:], rows, p.wf[r*cols:(r+1)*cols], p.x[t0*cols:t1*cols], t1-t0)
		}
	}
}

// chunkF16 multiplies binary16 rows directly for one token; for more, it widens each row
// once per token block into a float32 scratch row and multiplies that.
func (p *product) chunkF16(r0, r1 int) {
	rows, cols, rb := p.w.Rows, p.w.Cols, p.rb
	if p.n == 1 {
		for r := r0; r < r1; r++ {
			if r+prefetchRows < r1 {
				prefetch(&p.w.Data[(r+prefetchRows)*rb], rb)
			}
			p.out[r] = p.k.dotF16(p.w.Data[r*rb:(r+1)*rb], p.x)
		}
		return
	}
	bufp := getF32Scratch(cols)
	defer f32Scratch.Put(bufp)
	buf := (*bufp)[:cols]
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			p.k.widenF16(buf, p.w.Data[r*rb:(r+1)*rb])
			p.k.dotF32T(p.out[t0*rows+r:], rows, buf, p.x[t0*cols:t1*cols], t1-t0)
		}
	}
}

// chunkQ8 multiplies Q8_0 rows: up to 3 tokens through the rows kernel where it
// prefetches (chunkRows: for one token the whole chunk in one call, since rows of
// llama-size matrices take ~50 ns each and a Go call per row costs several percent;
// at 2 tokens 102–114 against 136–152 cpu-µs per token for a call per row and token,
// 2048×768), else through chunkQuant, whose 4-token kernels share each row's loads.
func (p *product) chunkQ8(r0, r1 int) {
	if p.n < 4 && p.k.dotQ8Prefetches {
		p.chunkRows(r0, r1)
		return
	}
	p.chunkQuant(r0, r1)
}

// chunkTile multiplies rows [r0, r1) of a Q8_0, Q4_0, Q4_K or Q6_K matrix against
// tileMinTokens or more tokens: the rows are widened once into 4-row int16 tiles (see
// widenQ8), then each tile is multiplied by every 8-token group of a token block in one
// dotQ8Tile call. Rows past r1 in the last tile and tokens past n in the last group are
// zeros whose results go to a scratch tile, not to out. Widening all the chunk's rows
// first, one sequential stream, measured faster than widening each tile just before its
// first use with the next one prefetched (llama-134m prefill, 64-token passes).
func (p *product) chunkTile(r0, r1 int) {
	rows, cols, rb := p.w.Rows, p.w.Cols, p.rb
	nb := cols / blockElems
	ntile := (r1 - r0 + 3) / 4
	sp := getTileScratch(ntile*4*cols, ntile*4*nb)
	defer tilePool.Put(sp)
	w16, dw, dm := sp.w16, sp.dw, sp.dm
	var tm, xsg []float32 // Q4_K minimums and their activation factors, else nil
	for i := 0; i < ntile; i++ {
		r := r0 + 4*i
		k := min(4, r1-r)
		tw, td := w16[4*i*cols:4*(i+1)*cols], dw[4*i*nb:4*(i+1)*nb]
		if k < 4 {
			clear(tw)
			clear(td)
			clear(dm[4*i*nb : 4*(i+1)*nb])
		}
		if p.xsg != nil {
			p.k.widenQ4K(tw[:k*cols], td, dm[4*i*nb:4*(i+1)*nb], p.w.Data[r*rb:], rb, nb)
		} else {
			p.widen(tw[:k*cols], td, p.w.Data[r*rb:], rb, nb)
		}
	}
	full := p.n / tileTokens // groups of 8 real tokens
	tmp := &sp.tmp
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		g0, g1 := t0/tileTokens, (t1+tileTokens-1)/tileTokens
		for i := 0; i < ntile; i++ {
			r := r0 + 4*i
			k := min(4, r1-r)
			tw, td := w16[4*i*cols:4*(i+1)*cols], dw[4*i*nb:4*(i+1)*nb]
			if p.xsg != nil {
				tm = dm[4*i*nb : 4*(i+1)*nb]
			}
			g := g0
			if k == 4 && min(g1, full) > g0 {
				g = min(g1, full)
				if tm != nil {
					xsg = p.xsg[g0*tileTokens*nb : g*tileTokens*nb]
				}
				p.k.dotQ8Tile(p.out[g0*tileTokens*rows+r:], rows, tw, td, tm,
					p.xg[g0*tileTokens*cols:g*tileTokens*cols], p.xdg[g0*tileTokens*nb:g*tileTokens*nb], xsg, g-g0)
			}
			for ; g < g1; g++ { // a partial tile or group
				if tm != nil {
					xsg = p.xsg[g*tileTokens*nb : (g+1)*tileTokens*nb]
				}
				p.k.dotQ8Tile(tmp[:], 4, tw, td, tm,
					p.xg[g*tileTokens*cols:(g+1)*tileTokens*cols], p.xdg[g*tileTokens*nb:(g+1)*tileTokens*nb], xsg, 1)
				for t := g * tileTokens; t < min(p.n, (g+1)*tileTokens); t++ {
					copy(p.out[t*rows+r:t*rows+r+k], tmp[(t-g*tileTokens)*4:])
				}
			}
		}
	}
}

// chunkQuant multiplies rows [r0, r1) of a Q8_0 matrix: for one token one dot per
// row, rows in order (a single sequential stream: computing 4 rows per pass, sharing the
// activation loads, is faster from cache but streams slower from memory on the AMD Zen 3
// this was tuned on, 11 vs 8 ms per llama-134m pass on one thread); for more tokens, each
// row against all the 4-token groups of a token block in one dotQ8x4N call, then the
// tokens left one at a time.
func (p *product) chunkQuant(r0, r1 int) {
	dot, dot4N := p.k.dotQ8, p.k.dotQ8x4N
	rows, cols, rb := p.w.Rows, p.w.Cols, p.rb
	nb := cols / blockElems
	if p.n == 1 { // decode
		w, xq, xd := p.w.Data[:r1*rb], p.xq[:cols], p.xd[:nb]
		for r := r0; r < r1; r++ {
			if r+prefetchRows < r1 {
				prefetch(&w[(r+prefetchRows)*rb], rb)
			}
			p.out[r] = dot(w[r*rb:(r+1)*rb], xq, xd)
		}
		return
	}
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			row := p.w.Data[r*rb : (r+1)*rb]
			if t0 == 0 && r+prefetchRows < r1 {
				prefetch(&p.w.Data[(r+prefetchRows)*rb], rb)
			}
			t := t0
			if g := (t1 - t0) / 4; g > 0 {
				dot4N(p.out[t0*rows+r:], rows, row, p.xi[t0*cols:(t0+4*g)*cols], p.xs[2*t0*nb:2*(t0+4*g)*nb], g)
				t += 4 * g
			}
			for ; t < t1; t++ {
				p.out[t*rows+r] = dot(row, p.xq[t*cols:(t+1)*cols], p.xd[t*nb:(t+1)*nb])
			}
		}
	}
}

// chunkRows multiplies rows [r0, r1) of a type with a rows kernel (Q8_0, Q4_0, Q5_0,
// Q4_K, Q6_K) for fewer tokens than the tile kernel takes: for one token the whole
// chunk in one kernel call (it prefetches ahead); for more, a block of rows of about
// rowsBlockBytes at a time, for every token in turn, so that the first token streams
// the block from memory and the others read it from the L1 cache, each call covering
// the block rather than one row; tokens go two per call (tokenRows2) for every type but
// Q8_0.
// 2048×768 Q4_K at 2 tokens, cpu-µs per token: a call per row and token 156–168, a
// call per block and token 85–111, two tokens per call 70–82.
func (p *product) chunkRows(r0, r1 int) {
	if p.n == 1 {
		p.tokenRows(0, r0, r1)
		return
	}
	blk := max(1, rowsBlockBytes/p.rb)
	for b0 := r0; b0 < r1; b0 += blk {
		b1 := min(r1, b0+blk)
		t := 0
		if p.kind != kindQ8 {
			for ; t+2 <= p.n; t += 2 {
				p.tokenRows2(t, b0, b1)
			}
		}
		for ; t < p.n; t++ {
			p.tokenRows(t, b0, b1)
		}
	}
}

// rowsBlockBytes is the weight bytes chunkRows multiplies for every token before it
// moves on: well within a 32 KiB L1 data cache beside the activations.
const rowsBlockBytes = 8 << 10

// tokenRows2 runs the two-token rows kernel of the product's type (Q4_0, Q5_0, Q4_K,
// Q6_K) over rows [r0, r1) for tokens t and t+1: the codes are unpacked and the scales
// decoded once for both.
func (p *product) tokenRows2(t, r0, r1 int) {
	rows, cols, nb := p.w.Rows, p.w.Cols, p.w.Cols/blockElems
	out0, out1 := p.out[t*rows+r0:t*rows+r1], p.out[(t+1)*rows+r0:(t+1)*rows+r1]
	w, xq, xd := p.w.Data[r0*p.rb:r1*p.rb], p.xq[t*cols:(t+2)*cols], p.xd[t*nb:(t+2)*nb]
	switch p.kind {
	case kindQ4:
		p.k.dotQ4Rows2(out0, out1, w, p.rb, xq, xd)
	case kindQ5:
		p.k.dotQ5Rows2(out0, out1, w, p.rb, xq, xd)
	case kindQ4K:
		p.k.dotQ4KRows2(out0, out1, w, p.rb, xq, xd, p.xsum[t*nb:(t+2)*nb])
	case kindQ6K:
		p.k.dotQ6KRows2(out0, out1, w, p.rb, xq, xd)
	default:
		panic(fmt.Sprintf("linalg: tokenRows2 for chunk kind %d", p.kind))
	}
}

// tokenRows runs the rows kernel of the product's type over rows [r0, r1) for token t.
func (p *product) tokenRows(t, r0, r1 int) {
	rows, cols, rb := p.w.Rows, p.w.Cols, p.rb
	nb := cols / blockElems
	out, w := p.out[t*rows+r0:t*rows+r1], p.w.Data[r0*rb:r1*rb]
	xq, xd := p.xq[t*cols:(t+1)*cols], p.xd[t*nb:(t+1)*nb]
	switch p.kind {
	case kindQ8:
		p.k.dotQ8Rows(out, w, rb, xq, xd)
	case kindQ4:
		p.k.dotQ4Rows(out, w, rb, xq, xd)
	case kindQ5:
		p.k.dotQ5Rows(out, w, rb, xq, xd)
	case kindQ4K:
		p.k.dotQ4KRows(out, w, rb, xq, xd, p.xsum[t*nb:(t+1)*nb])
	case kindQ6K:
		p.k.dotQ6KRows(out, w, rb, xq, xd)
	default:
		panic(fmt.Sprintf("linalg: tokenRows for chunk kind %d", p.kind))
	}
}

// chunkDecoded decodes each weight row once per token block into a scratch row.
func (p *product) chunkDecoded(r0, r1 int) {
	rows, cols, rb, dotT := p.w.Rows, p.w.Cols, p.rb, p.k.dotF32T
	bufp := getF32Scratch(cols)
	defer f32Scratch.Put(bufp)
	buf := (*bufp)[:cols]
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			if err := p.dec(buf, p.w.Data[r*rb:(r+1)*rb]); err != nil {
				p.errMu.Lock()
				if p.err == nil {
					p.err = fmt.Errorf("linalg: MatMul: decoding row %d of %v matrix: %w", r, p.w.Type, err)
				}
				p.errMu.Unlock()
				return
			}
			dotT(p.out[t0*rows+r:], rows, buf, p.x[t0*cols:t1*cols], t1-t0)
		}
	}
}

// tileTokens is the token count of a dotQ8Tile group.
const tileTokens = 8

// tileMinTokens is the token count from which products of weight type t go through the
// tile kernel, which widens every row once per product and multiplies whole 8-token
// groups (a last partial group padded with zeros): where it beats the per-token kernels
// in CPU time (BenchmarkBatch, 2048×768, AMD Zen 3, default build, cpu-µs per token,
// two tokens per call (tokenRows2) against tiles: Q4_0 at 6 tokens 90–100 against
// 95–103, at 7, 95.5 against 83–86; Q5_0 at 6, 96–106 against 109–132, at 7, 107–119
// against 91–103; Q6_K at 6, 89–95 against 93–114, at 7, 105–108 against 86–92; Q4_K
// at 12, 68–81 against 86–95, at 16, 70–86 against 58–77, at 32, 58–71 against 46–56).
func tileMinTokens(t gguf.TensorType) int {
	switch t {
	case gguf.TypeQ8_0:
		return 6
	case gguf.TypeQ4_0, gguf.TypeQ5_0:
		return 7
	case gguf.TypeQ6_K:
		return 7
	case gguf.TypeQ4_K:
		return 16
	}
	return math.MaxInt
}

// q8Scratch holds activations quantized per 32-value block.
type q8Scratch struct {
	q   []int8
	d   []float32
	i   []int8    // q interleaved for the 4-token kernels
	s   []float32 // d interleaved for the 4-token kernels, 2 per block
	sum []int32   // per-block sums of q (Q4_K)
	g   []int16   // q packed for the tile kernel, whole 8-token groups
	gd  []float32 // d packed for the tile kernel
	gs  []float32 // d·sum packed for the tile kernel (Q4_K)
}

var q8Pool sync.Pool

// getQ8Scratch returns scratch for n activations, and ng more in whole 8-token groups
// for the tile kernel.
func getQ8Scratch(n, ng int) *q8Scratch {
	s, _ := q8Pool.Get().(*q8Scratch)
	if s == nil {
		s = &q8Scratch{}
	}
	if cap(s.q) < n {
		s.q = make([]int8, n)
		s.d = make([]float32, n/blockElems)
		s.i = make([]int8, n)
		s.s = make([]float32, 2*(n/blockElems))
		s.sum = make([]int32, n/blockElems)
	}
	if cap(s.g) < ng {
		s.g = make([]int16, ng)
		s.gd = make([]float32, ng/blockElems)
		s.gs = make([]float32, ng/blockElems)
	}
	nb := n / blockElems
	s.q, s.d, s.i, s.s, s.sum = s.q[:n], s.d[:nb], s.i[:n], s.s[:2*nb], s.sum[:nb]
	s.g, s.gd, s.gs = s.g[:ng], s.gd[:ng/blockElems], s.gs[:ng/blockElems]
	return s
}

// tileScratch holds a chunk's weight rows widened for the tile kernel.
type tileScratch struct {
	w16 []int16
	dw  []float32
	dm  []float32 // Q4_K minimums
	tmp [4 * tileTokens]float32
}

// callState is one MatMul call's products and chunk list, pooled: decode makes
// ~100 calls per token, and fresh ones were most of its garbage.
type callState struct {
	ps    []product
	first []int            // first[j]: product j's first parallel chunk
	units func(u0, u1 int) // runUnits, made once per state (a method value allocates)
}

// runUnits runs units [u0, u1) of the products' rows: unit u of product j is rows
// [(u−first[j])·rpc, …+rpc) (see matMul's run of units).
func (st *callState) runUnits(u0, u1 int) {
	ps, first := st.ps, st.first
	j := 0
	for u0 < u1 {
		for u0 >= first[j+1] {
			j++
		}
		p, e := &ps[j], min(u1, first[j+1])
		p.chunk((u0-first[j])*p.rpc, min(p.w.Rows, (e-first[j])*p.rpc))
		u0 = e
	}
}

// quantTask quantizes a call's activations 8 tokens per task (and, for the 4-token
// kernels, interleaves them; for the tile kernel, packs them; for Q4_K, sums them):
// each slice that is not nil is filled.
type quantTask struct {
	k                *kernelSet
	x                []float32
	n, cols          int
	xq, xi           []int8
	xd, xs, xdg, xsg []float32
	xg               []int16
	xsum             []int32
}

// run does task g: tokens [8g, min(n, 8g+8)).
func (q *quantTask) run(g int) {
	k, x, cols, nb := q.k, q.x, q.cols, q.cols/blockElems
	xq, xd := q.xq, q.xd
	t0, t1 := 8*g, min(q.n, 8*g+8)
	k.quantQ8(xq[t0*cols:t1*cols], xd[t0*nb:t1*nb], x[t0*cols:t1*cols])
	if q.xsum != nil {
		blockSums(q.xsum[t0*nb:t1*nb], xq[t0*cols:t1*cols])
	}
	if q.xi != nil {
		for t := t0; t+4 <= t1; t += 4 {
			interleave4(q.xi[t*cols:(t+4)*cols], q.xs[2*t*nb:2*(t+4)*nb], xq[t*cols:(t+4)*cols], xd[t*nb:(t+4)*nb])
		}
	}
	if q.xg != nil {
		k.pack8(q.xg[t0*cols:(t0+8)*cols], q.xdg[t0*nb:(t0+8)*nb], xq[t0*cols:t1*cols], xd[t0*nb:t1*nb], t1-t0)
	}
	if q.xsg != nil {
		packSums8(q.xsg[t0*nb:(t0+8)*nb], xd[t0*nb:t1*nb], q.xsum[t0*nb:t1*nb], t1-t0)
	}
}

var callPool sync.Pool

func getCallState(n int) *callState {
	st, _ := callPool.Get().(*callState)
	if st == nil {
		st = &callState{}
		st.units = st.runUnits
	}
	if cap(st.ps) < n {
		st.ps = make([]product, n)
		st.first = make([]int, n+1)
	}
	st.ps, st.first = st.ps[:n], st.first[:n+1]
	return st
}

// putCallState returns st to the pool without the products' references to the
// caller's slices.
func putCallState(st *callState) {
	clear(st.ps)
	callPool.Put(st)
}

var tilePool sync.Pool

func getTileScratch(n, nd int) *tileScratch {
	s, _ := tilePool.Get().(*tileScratch)
	if s == nil {
		s = &tileScratch{}
	}
	if cap(s.w16) < n {
		s.w16 = make([]int16, n)
	}
	if cap(s.dw) < nd {
		s.dw = make([]float32, nd)
		s.dm = make([]float32, nd)
	}
	s.w16, s.dw, s.dm = s.w16[:n], s.dw[:nd], s.dm[:nd]
	return s
}

func putQ8Scratch(s *q8Scratch) { q8Pool.Put(s) }

var f32Scratch sync.Pool

func getF32Scratch(n int) *[]float32 {
	b, _ := f32Scratch.Get().(*[]float32)
	if b == nil || cap(*b) < n {
		s := make([]float32, n)
		b = &s
	}
	return b
}
