package linalg

import (
	"cmp"
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
	if err := checkOutputs("MatMulMany", outs, ws); err != nil {
		return err
	}
	return matMul("MatMulMany", outs, ws, x, n)
}

// checkOutputs checks that there is one output per matrix (outs nil: none asked) and
// that the matrices share their input: the same Cols.
func checkOutputs(name string, outs [][]float32, ws []Matrix) error {
	if outs != nil && len(outs) != len(ws) {
		return fmt.Errorf("linalg: %s: %w: %d outputs for %d matrices", name, ErrShape, len(outs), len(ws))
	}
	for j := 1; j < len(ws); j++ {
		if ws[j].Cols != ws[0].Cols {
			return fmt.Errorf("linalg: %s: %w: matrix %d has %d columns, matrix 0 has %d",
				name, ErrShape, j, ws[j].Cols, ws[0].Cols)
		}
	}
	return nil
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

// checkProducts runs checkProduct for every product outs[j] = ws[j]·x, naming the
// matrix when there are several.
func checkProducts(name string, outs [][]float32, ws []Matrix, x []float32, n int) error {
	for j, w := range ws {
		if err := checkProduct(name, outs[j], w, x, n); err != nil {
			if len(ws) > 1 {
				return fmt.Errorf("matrix %d: %w", j, err)
			}
			return err
		}
	}
	return nil
}

func matMul(name string, outs [][]float32, ws []Matrix, x []float32, n int) error {
	k := active.Load()
	if err := checkProducts(name, outs, ws, x, n); err != nil {
		return err
	}
	if n == 0 || len(ws) == 0 {
		return nil
	}
	cols := ws[0].Cols
	x = x[:n*cols]
	var xt tokenPack
	var xsum []int32
	if nd := needsOf(k, ws, n); nd.q && cols > 0 {
		nb := cols / blockElems
		groups := 0
		needPack := nd.unsigned || nd.signed
		if needPack {
			groups = (n + tokenGroup - 1) / tokenGroup
		}
		s := getQ8Scratch(n*cols, groups*tokenGroup*nb)
		defer putQ8Scratch(s)
		xt, xsum = s.pack(n, nb, nd)
		// Each token is quantized on its own, the same way whatever the batch.
		q := quantTask{k: k, x: x, n: n, cols: cols, xq: xt.xq, xd: xt.xd, xsum: xsum}
		if needPack {
			q.pack, q.packOn = xt, true // a copy: &xt would move xt to the heap on every call
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
	return products(k, outs, ws, x, n, xt, xsum)
}

// quantNeeds is what a call's products read of its activations: whether any
// quantizes them, the blocks' code sums, and the packs of the many-token kernels.
type quantNeeds struct{ q, sums, unsigned, signed bool }

// needsOf returns what products of n tokens with ws read under kernel set k.
func needsOf(k *kernelSet, ws []Matrix, n int) quantNeeds {
	var nd quantNeeds
	for _, w := range ws {
		qt := quantTypes[w.Type]
		if qt == nil {
			continue
		}
		nd.q = true
		if qt.many(k, n) != nil {
			// The many-token kernels read the code sums only through the signed pack.
			nd.unsigned = nd.unsigned || !qt.packSigned
			nd.signed = nd.signed || qt.packSigned
			nd.sums = nd.sums || qt.packSigned
		} else {
			nd.sums = nd.sums || qt.takesSums(k)
		}
	}
	return nd
}

// covers reports whether activations quantized for nd serve products that need o.
func (nd quantNeeds) covers(o quantNeeds) bool {
	return (nd.q || !o.q) && (nd.sums || !o.sums) && (nd.unsigned || !o.unsigned) && (nd.signed || !o.signed)
}

// products runs the checked products outs[j] = ws[j]·x of n > 0 tokens with
// kernel set k, x quantized (where a weight type reads it so) into xt and xsum.
func products(k *kernelSet, outs [][]float32, ws []Matrix, x []float32, n int, xt tokenPack, xsum []int32) error {
	cols := ws[0].Cols
	st := getCallState(len(ws))
	defer putCallState(st)
	ps := st.ps
	var work int64
	// Whether a product runs in chunks (product.chunked); the others run in runs.
	// (Runs for the many-token kernels' products of one token block, llama-134m Q8_0
	// BenchmarkModel: no gain at 16 tokens, 5-10% more CPU time at 64.)
	inChunks := false
	for j, w := range ws {
		p := &ps[j]
		*p = product{k: k, w: w, out: outs[j][:n*w.Rows], x: x, n: n, xq: xt.xq, xd: xt.xd, xsum: xsum, xt: xt}
		if w.Rows == 0 {
			continue
		}
		if cols == 0 {
			clear(p.out)
			continue
		}
		p.rb, _ = w.RowBytes() // checked above
		p.prepare()
		inChunks = inChunks || p.chunked()
		work += int64(w.Rows) * int64(p.rb) * int64(n)
	}
	if work < serialWork || Threads() == 1 {
		// Products that run in chunks (product.chunked) in chunks as the parallel path
		// plans them, so that a chunk stays cache-sized; the others in one call (one
		// stream over the rows).
		for j := range ps {
			p := &ps[j]
			if p.kind == kindNone {
				continue
			}
			rpc := p.w.Rows
			if p.chunked() {
				p.plan(len(ps))
				rpc = p.rpc
			}
			for r0 := 0; r0 < p.w.Rows; r0 += rpc {
				p.chunk(r0, min(p.w.Rows, r0+rpc))
			}
		}
	} else if inChunks {
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
				p.rpc = (max(1, unitBytes/max(1, p.rb)) + 7) &^ 7
				first[j+1] += (p.w.Rows + p.rpc - 1) / p.rpc
			}
		}
		workpool.ForRuns(Threads(), first[len(ps)], st.units)
	}
	for j := range ps {
		if ps[j].xT != nil {
			f16Pool.put(ps[j].xT)
		}
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
	kind  chunkKind  // the chunk method for the type (see chunk)
	qt    *quantType // the type's row of quantTypes (kindQuant)
	wf    []float32  // F32 weights viewed as float32
	xq    []int8     // quantized activations (types of quantTypes)
	xd    []float32  // their per-block scales
	xsum  []int32    // per-block sums of xq (types with quantType.sums)
	xt    tokenPack  // the activations packed for a many-token kernel (kindTokens)
	many  tokensKernel
	xT    *[]float32 // the activations transposed for dotF16Tokens (kindF16Tokens), from f16Pool
	dec   rowDecoder // row decoder of other types
	errMu sync.Mutex
	err   error
}

// chunkKind names the method that computes a product's chunks.
type chunkKind uint8

const (
	kindNone      chunkKind = iota // nothing to compute (no rows, or no columns)
	kindF32                        // float32 rows: chunkF32
	kindF16                        // binary16 rows: chunkF16
	kindF16Tokens                  // binary16 rows by the set's dotF16Tokens: chunkF16Tokens
	kindQuant                      // a type of quantTypes: chunkRows
	kindTokens                     // a type of quantTypes by its many-token kernel: chunkTokens
	kindDecoded                    // rows decoded to float32 first: chunkDecoded
)

// rowsKernel writes to out[r] one token's product with the row w[r·rowBytes:], for
// r < len(out): activations quantized per 32 values (codes xq, scales xd, and code
// sums xsum for types that take them, else nil).
type rowsKernel func(k *kernelSet, out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)

// rows2Kernel is rowsKernel for two tokens: token 0's activations in the first halves
// of xq, xd and xsum, token 1's in the second, results to out0 and out1, each token's
// bit for bit the rowsKernel's; rows stored one after the other.
type rows2Kernel func(k *kernelSet, out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)

// quantType is a weight type's row of the dispatch table: the kernels that multiply its
// rows natively against activations quantized per 32 values. Every kernel computes a
// token's result with the same arithmetic as the one-token kernel (rows), so a token's
// output does not depend on the other tokens of the call.
type quantType struct {
	// sums, when not nil, reports whether k's kernels of the type take the activation
	// blocks' code sums; a call computes them only then (takesSums).
	sums  func(k *kernelSet) bool
	rows  rowsKernel  // one token
	rows2 rows2Kernel // two tokens at a time, or nil
	// tokens returns k's kernel for tokensMinTokens or more tokens, or nil: a kernel set
	// has one only where its rows kernel computes the same sums (see dotQ8RowsX).
	tokens func(k *kernelSet) tokensKernel
	// minTokens, when not 0, is the token count from which the many-token kernel runs
	// instead of tokensMinTokens: a kernel that fills 16-token groups lane by lane (a
	// row at a time, its work per group fixed) gains only on fuller groups (Q6_K,
	// 2048×768, cpu-µs per token, the kernel against the two-token rows kernel: 98
	// against 67 at 6 tokens, 42 against 78 at 16).
	minTokens int
	// packSigned: the many-token kernel reads the pack's signed codes and code sums
	// (xps, xsp), not the codes plus 128 (xp).
	packSigned bool
	// packBlockBytes, when not 0, bounds the packed activations of one token block
	// instead of tokensBlockBytes: Q4_K's kernel streams them once per row, so they
	// should stay in L1 (2048×768 at 64 tokens: 48.5, 52.6 → 57.2, 55.3 GMAC per
	// CPU-second against 256 KiB).
	packBlockBytes int
}

// many returns k's many-token kernel of the type for a product of n tokens, or nil
// when it has none or n is below the kernel's least token count.
func (qt *quantType) many(k *kernelSet, n int) tokensKernel {
	if qt.tokens == nil || n < cmp.Or(qt.minTokens, tokensMinTokens) {
		return nil
	}
	return qt.tokens(k)
}

// tokensKernel writes to out[t·ldo+r] the product of row w[r·rowBytes:] with token t of
// xt, for r < rows and t < xt.n, each token's sum bit for bit its rows kernel's.
// tab, when not nil, holds the kernel's tables of the whole matrix, of which w is the
// rows from r0 on (kept across calls; see rowTables).
type tokensKernel func(out []float32, ldo int, w []byte, rowBytes, rows int, xt tokenPack, tab *rowTables, all Matrix, r0 int)

// tokensMinTokens is the token count from which a type's many-token kernel, where its
// kernel set has one, multiplies a product.
const tokensMinTokens = 6

// tokensBlockBytes bounds the packed activations of one token block of a many-token
// kernel, kept in L2 while a chunk of rows is multiplied against them, unless the type
// sets its own bound (quantType.packBlockBytes).
const tokensBlockBytes = 256 << 10

// quantTypes is the dispatch table of the weight types multiplied natively against
// quantized activations. A type is added with a row here and its kernels in kernelSet.
var quantTypes = map[gguf.TensorType]*quantType{
	gguf.TypeQ5_K:   kQuantType(gguf.TypeQ5_K),
	gguf.TypeQ3_K:   kQuantType(gguf.TypeQ3_K),
	gguf.TypeQ2_K:   kQuantType(gguf.TypeQ2_K),
	gguf.TypeIQ4_NL: kQuantType(gguf.TypeIQ4_NL),
	gguf.TypeIQ4_XS: kQuantType(gguf.TypeIQ4_XS),
	gguf.TypeQ8_0: {
		// Only the exact kernels read the sums (dotQ8RowsX); the AVX2 set has none.
		sums: func(k *kernelSet) bool { return k.dotQ8RowsX != nil },
		rows: func(k *kernelSet, out []float32, w []byte, rb int, xq []int8, xd []float32, xsum []int32) {
			if k.dotQ8RowsX != nil {
				k.dotQ8RowsX(out, w, rb, xq, xd, xsum)
				return
			}
			k.dotQ8Rows(out, w, rb, xq, xd)
		},
		tokens: func(k *kernelSet) tokensKernel {
			if k.dotQ8RowsX == nil {
				return nil
			}
			return k.dotQ8Tokens
		},
	},
	gguf.TypeQ4_0: blockQuantType(gguf.TypeQ4_0,
		func(k *kernelSet) func([]float32, []byte, int, []int8, []float32) { return k.dotQ4Rows },
		func(k *kernelSet) func([]float32, []float32, []byte, int, []int8, []float32) { return k.dotQ4Rows2 }),
	gguf.TypeQ5_0: blockQuantType(gguf.TypeQ5_0,
		func(k *kernelSet) func([]float32, []byte, int, []int8, []float32) { return k.dotQ5Rows },
		func(k *kernelSet) func([]float32, []float32, []byte, int, []int8, []float32) { return k.dotQ5Rows2 }),
	gguf.TypeQ4_K: {
		sums:           always,
		packSigned:     true,
		tokens:         func(k *kernelSet) tokensKernel { return k.dotQ4KTokens },
		packBlockBytes: 32 << 10,
		rows: func(k *kernelSet, out []float32, w []byte, rb int, xq []int8, xd []float32, xsum []int32) {
			k.dotQ4KRows(out, w, rb, xq, xd, xsum)
		},
		rows2: func(k *kernelSet, out0, out1 []float32, w []byte, rb int, xq []int8, xd []float32, xsum []int32) {
			k.dotQ4KRows2(out0, out1, w, rb, xq, xd, xsum)
		},
	},
	gguf.TypeQ6_K: {
		tokens:         func(k *kernelSet) tokensKernel { return k.dotQ6KTokens },
		minTokens:      10,
		packBlockBytes: 32 << 10, // streamed once per row, as Q4_K's
		rows: func(k *kernelSet, out []float32, w []byte, rb int, xq []int8, xd []float32, _ []int32) {
			k.dotQ6KRows(out, w, rb, xq, xd)
		},
		rows2: func(k *kernelSet, out0, out1 []float32, w []byte, rb int, xq []int8, xd []float32, _ []int32) {
			k.dotQ6KRows2(out0, out1, w, rb, xq, xd)
		},
	},
}

// kQuantType is the table row of a type whose rows kernels are kernelSet.kRows[t]
// (which say whether they take the activations' code sums).
func kQuantType(t gguf.TensorType) *quantType {
	return &quantType{
		sums: func(k *kernelSet) bool { return k.kRows[t].sums },
		rows: func(k *kernelSet, out []float32, w []byte, rb int, xq []int8, xd []float32, xsum []int32) {
			k.kRows[t].rows(out, w, rb, xq, xd, xsum)
		},
	}
}

// always is quantType.sums of the types whose kernels all take the code sums.
func always(*kernelSet) bool { return true }

// takesSums reports whether k's kernels of the type take the activation blocks' code
// sums.
func (qt *quantType) takesSums(k *kernelSet) bool { return qt.sums != nil && qt.sums(k) }

// chunk computes rows [r0, r1) for all tokens with the method prepare picked (a
// switch, not a stored method value: those allocate, once per product and call).
func (p *product) chunk(r0, r1 int) {
	switch p.kind {
	case kindF32:
		p.chunkF32(r0, r1)
	case kindF16:
		p.chunkF16(r0, r1)
	case kindF16Tokens:
		p.chunkF16Tokens(r0, r1)
	case kindQuant:
		p.chunkRows(r0, r1)
	case kindTokens:
		p.chunkTokens(r0, r1)
	case kindDecoded:
		p.chunkDecoded(r0, r1)
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
		if p.k.dotF16Tokens != nil && p.n >= f16TokensMin {
			p.kind = kindF16Tokens
			p.xT = f16Pool.get((p.n + tokenGroup - 1) / tokenGroup * tokenGroup * w.Cols)
			transposeTokens(*p.xT, p.x, w.Cols, p.n)
			p.tb = max(tokenGroup, f16TokensBlockBytes/(4*max(1, w.Cols))&^(tokenGroup-1))
			return
		}
	default:
		p.qt = quantTypes[w.Type]
		if p.qt == nil {
			p.dec = dequantizerFor(w.Type)
			p.kind = kindDecoded
			break
		}
		p.kind = kindQuant
		xTokenBytes = w.Cols + w.Cols/blockElems*4 // codes and block scales
		if p.qt.takesSums(p.k) {
			xTokenBytes += w.Cols / blockElems * 4 // and the blocks' code sums
		}
		if p.xt.xdp != nil {
			if p.many = p.qt.many(p.k, p.n); p.many != nil {
				p.kind = kindTokens
				tb := cmp.Or(p.qt.packBlockBytes, tokensBlockBytes) / (w.Cols + w.Cols/blockElems*4)
				p.tb = max(tokenGroup, tb&^(tokenGroup-1))
				return
			}
		}
	}
	p.tb = max(1, min(p.n, xBlockBytes/max(1, xTokenBytes)))
	if p.tb >= 4 {
		p.tb &^= 3 // token blocks start on 4-token groups
	}
}

// chunked reports whether p runs in cache-sized chunks rather than in runs: when it
// reads its rows more than once (once per token block), or goes through a many-token
// kernel, which expands or widens a call's rows into scratch.
func (p *product) chunked() bool {
	return p.tb < p.n || p.kind == kindTokens || p.kind == kindF16Tokens
}

// plan sets the rows per parallel chunk: about chunkBytes of weights, and at least 4
// chunks per thread (over all nprod products of the call) so a thread slowed by other
// load is caught up by the others; a multiple of 8 rows (the rows kernels' unit).
func (p *product) plan(nprod int) {
	rows := p.w.Rows
	rpc := max(1, chunkBytes/max(1, p.rb))
	if perThread := rows * nprod / (4 * Threads()); perThread < rpc {
		rpc = max(1, perThread)
	}
	p.rpc = (rpc + 7) &^ 7
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

// chunkF16 multiplies binary16 rows with dotF16, one token at a time (the same sum for
// a token whatever the others): for more tokens, a block of rows of about
// rowsBlockBytes for every token of a token block in turn, so the block is read from
// memory once per token block and from L1 for the other tokens.
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
	blk := max(1, rowsBlockBytes/rb)
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for b0 := r0; b0 < r1; b0 += blk {
			b1 := min(r1, b0+blk)
			for t := t0; t < t1; t++ {
				x := p.x[t*cols : (t+1)*cols]
				for r := b0; r < b1; r++ {
					p.out[t*rows+r] = p.k.dotF16(p.w.Data[r*rb:(r+1)*rb], x)
				}
			}
		}
	}
}

// chunkRows multiplies rows [r0, r1) of a type of quantTypes with its rows kernels:
// for one token the whole chunk in one kernel call (it prefetches ahead); for more,
// per token block, a block of rows of about rowsBlockBytes at a time for every token
// in turn, so that the first token streams the block from memory and the others read it
// from the L1 cache, each call covering the block rather than one row; tokens go two per
// call where the type has a two-token kernel.
// 2048×768 Q4_K at 2 tokens, cpu-µs per token: a call per row and token 156–168, a
// call per block and token 85–111, two tokens per call 70–82.
func (p *product) chunkRows(r0, r1 int) {
	if p.n == 1 {
		p.tokenRows(0, r0, r1)
		return
	}
	blk := (max(1, rowsBlockBytes/p.rb) + 7) &^ 7
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for b0 := r0; b0 < r1; b0 += blk {
			b1 := min(r1, b0+blk)
			t := t0
			if p.qt.rows2 != nil {
				for ; t+2 <= t1; t += 2 {
					p.tokenRows2(t, b0, b1)
				}
			}
			for ; t < t1; t++ {
				p.tokenRows(t, b0, b1)
			}
		}
	}
}

// chunkTokens multiplies rows [r0, r1) by the product's many-token kernel, one token
// block (whole 16-token groups of the packed activations) at a time.
func (p *product) chunkTokens(r0, r1 int) {
	rows, nb := p.w.Rows, p.xt.nb
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		g0 := t0 / tokenGroup
		xt := tokenPack{n: t1 - t0, nb: nb, xq: p.xt.xq[t0*nb*blockElems:], xd: p.xt.xd[t0*nb:],
			xdp: p.xt.xdp[g0*nb*tokenGroup:]}
		if p.xt.xp != nil {
			xt.xp = p.xt.xp[g0*nb*8*tokenGroup:]
		}
		if p.xt.xps != nil {
			xt.xps, xt.xsp = p.xt.xps[g0*nb*8*tokenGroup:], p.xt.xsp[g0*nb*tokenGroup:]
		}
		p.many(p.out[t0*rows+r0:], rows, p.w.Data[r0*p.rb:r1*p.rb], p.rb, r1-r0, xt, p.w.tables, p.w, r0)
	}
}

// rowsBlockBytes is the weight bytes chunkRows multiplies for every token before it
// moves on: well within a 32 KiB L1 data cache beside the activations.
const rowsBlockBytes = 8 << 10

// tokenRows2 runs the two-token rows kernel of the product's type over rows [r0, r1)
// for tokens t and t+1: the codes are unpacked and the scales decoded once for both.
func (p *product) tokenRows2(t, r0, r1 int) {
	rows, cols, nb := p.w.Rows, p.w.Cols, p.w.Cols/blockElems
	out0, out1 := p.out[t*rows+r0:t*rows+r1], p.out[(t+1)*rows+r0:(t+1)*rows+r1]
	var xsum []int32
	if p.xsum != nil {
		xsum = p.xsum[t*nb : (t+2)*nb]
	}
	p.qt.rows2(p.k, out0, out1, p.w.Data[r0*p.rb:r1*p.rb], p.rb, p.xq[t*cols:(t+2)*cols], p.xd[t*nb:(t+2)*nb], xsum)
}

// tokenRows runs the rows kernel of the product's type over rows [r0, r1) for token t.
func (p *product) tokenRows(t, r0, r1 int) {
	rows, cols, nb := p.w.Rows, p.w.Cols, p.w.Cols/blockElems
	var xsum []int32
	if p.xsum != nil {
		xsum = p.xsum[t*nb : (t+1)*nb]
	}
	p.qt.rows(p.k, p.out[t*rows+r0:t*rows+r1], p.w.Data[r0*p.rb:r1*p.rb], p.rb, p.xq[t*cols:(t+1)*cols], p.xd[t*nb:(t+1)*nb], xsum)
}

// chunkDecoded decodes each weight row once per token block into a scratch row.
func (p *product) chunkDecoded(r0, r1 int) {
	rows, cols, rb, dotT := p.w.Rows, p.w.Cols, p.rb, p.k.dotF32T
	bufp := f32Scratch.get(cols)
	defer f32Scratch.put(bufp)
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

// q8Scratch holds activations quantized per 32-value block.
type q8Scratch struct {
	q    []int8
	d    []float32
	sum  []int32   // per-block sums of q
	p    []uint32  // q packed by packTokens, plus 128
	ps   []uint32  // q packed by packTokens
	pd   []float32 // d packed by packTokens
	psum []int32   // sum packed by packTokens
}

var q8Pool sync.Pool

// getQ8Scratch returns scratch for n activations, and a pack of np blocks.
func getQ8Scratch(n, np int) *q8Scratch {
	s, _ := q8Pool.Get().(*q8Scratch)
	if s == nil {
		s = &q8Scratch{}
	}
	s.size(n, np)
	return s
}

// size sizes s for n activations and a pack of np blocks, growing it if needed.
func (s *q8Scratch) size(n, np int) {
	if cap(s.q) < n {
		s.q = make([]int8, n)
		s.d = make([]float32, n/blockElems)
		s.sum = make([]int32, n/blockElems)
	}
	if cap(s.pd) < np {
		s.p, s.ps = make([]uint32, 8*np), make([]uint32, 8*np)
		s.pd, s.psum = make([]float32, np), make([]int32, np)
	}
	nb := n / blockElems
	s.q, s.d, s.sum = s.q[:n], s.d[:nb], s.sum[:nb]
	s.p, s.ps, s.pd, s.psum = s.p[:8*np], s.ps[:8*np], s.pd[:np], s.psum[:np]
}

// pack returns the views of s (sized for n tokens of nb blocks) that products
// needing nd read: the token pack, with only the packs nd asks for, and the code
// sums (nil unless nd.sums).
func (s *q8Scratch) pack(n, nb int, nd quantNeeds) (tokenPack, []int32) {
	xt := tokenPack{n: n, nb: nb, xq: s.q, xd: s.d}
	if nd.unsigned || nd.signed {
		xt.xdp = s.pd
	}
	if nd.unsigned {
		xt.xp = s.p
	}
	if nd.signed {
		xt.xps, xt.xsp = s.ps, s.psum
	}
	if nd.sums {
		return xt, s.sum
	}
	return xt, nil
}

func putQ8Scratch(s *q8Scratch) { q8Pool.Put(s) }

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

// quantTask quantizes a call's activations 8 tokens per task, each token on its own
// (and, when xsum is not nil, sums each block's codes; when pack is not nil, packs them
// by packTokens).
type quantTask struct {
	k       *kernelSet
	x       []float32
	n, cols int
	xq      []int8
	xd      []float32
	xsum    []int32
	pack    tokenPack
	packOn  bool
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
	if q.packOn {
		packTokens(k, &q.pack, q.xsum, t0, t1)
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

// scratch is a pool of reusable slices of T.
type scratch[T any] struct{ pool sync.Pool }

// get returns a slice of n values, their contents left from earlier use; put gives it
// back.
func (s *scratch[T]) get(n int) *[]T {
	b, _ := s.pool.Get().(*[]T)
	if b == nil || cap(*b) < n {
		v := make([]T, n)
		b = &v
	}
	*b = (*b)[:n]
	return b
}

func (s *scratch[T]) put(b *[]T) { s.pool.Put(b) }

// f32Scratch is float32 scratch of kernels and chunks.
var f32Scratch scratch[float32]
