package linalg

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"kvq/gguf"
)

// Tuning of the blocked product.
const (
	// xBlockBytes bounds the activations of one block of tokens, kept hot in L2 while
	// a chunk of weight rows is multiplied against it.
	xBlockBytes = 128 << 10
	// chunkBytes is the target weight bytes of one parallel chunk of rows: small enough
	// to stay in L2 across token blocks, large enough to amortize scheduling.
	chunkBytes = 64 << 10
	// serialWork is the product size (weight bytes × tokens) under which MatMul stays
	// on the calling goroutine.
	serialWork = 48 << 10
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
// Q8_0 and Q4_0 weights are multiplied against x quantized per 32-value block to int8
// with a float32 scale (llama.cpp's q8_0 dot): the result differs from the exact product
// by at most Σ_c |W[r,c]|·max|x_block(c)|/254 plus float32 rounding.
//
// It returns an error wrapping ErrShape or ErrUnsupportedType, and writes nothing, when
// w is invalid (see NewMatrix), n is negative or out or x are too short.
func MatMul(out []float32, w Matrix, x []float32, n int) error {
	if err := w.check(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("linalg: MatMul: %w: negative token count %d", ErrShape, n)
	}
	if (w.Rows > 0 && n > math.MaxInt/w.Rows) || (w.Cols > 0 && n > math.MaxInt/w.Cols) {
		return fmt.Errorf("linalg: MatMul: %w: %d tokens of a %d×%d matrix overflow", ErrShape, n, w.Rows, w.Cols)
	}
	if len(out) < n*w.Rows {
		return fmt.Errorf("linalg: MatMul: %w: out has %d values, want %d tokens × %d rows = %d",
			ErrShape, len(out), n, w.Rows, n*w.Rows)
	}
	if len(x) < n*w.Cols {
		return fmt.Errorf("linalg: MatMul: %w: x has %d values, want %d tokens × %d columns = %d",
			ErrShape, len(x), n, w.Cols, n*w.Cols)
	}
	if n == 0 || w.Rows == 0 {
		return nil
	}
	out = out[:n*w.Rows]
	x = x[:n*w.Cols]
	if w.Cols == 0 {
		clear(out)
		return nil
	}
	k := active.Load()
	rb, _ := w.RowBytes() // checked above
	p := product{k: k, w: w, rb: rb, out: out, x: x, n: n}
	switch w.Type {
	case gguf.TypeF32:
		p.wf = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w.Data))), w.Rows*w.Cols)
		p.run(p.chunkF32, w.Cols*4)
	case gguf.TypeF16:
		p.run(p.chunkF16, w.Cols*4)
	case gguf.TypeQ8_0, gguf.TypeQ4_0:
		s := getQ8Scratch(n * w.Cols)
		defer putQ8Scratch(s)
		p.xq, p.xd = s.q, s.d
		k.quantQ8(p.xq, p.xd, x)
		if w.Type == gguf.TypeQ8_0 {
			p.run(p.chunkQ8, w.Cols+w.Cols/blockElems*4)
		} else {
			p.run(p.chunkQ4, w.Cols+w.Cols/blockElems*4)
		}
	default:
		p.dec = dequantizerFor(w.Type)
		p.run(p.chunkDecoded, w.Cols*4)
		if p.err != nil {
			return p.err
		}
	}
	return nil
}

// product is the state of one MatMul call shared by its chunks.
type product struct {
	k   *kernelSet
	w   Matrix
	rb  int // bytes per weight row
	out []float32
	x   []float32
	n   int
	tb  int // tokens per block

	wf     []float32 // F32 weights viewed as float32
	xq     []int8    // quantized activations (Q8_0, Q4_0)
	xd     []float32 // their per-block scales
	dec    rowDecoder
	errMu  sync.Mutex
	err    error
	rowsPC int // rows per chunk
}

// run splits the rows into chunks and calls chunk(r0, r1) for each, in parallel when the
// product is large enough. xTokenBytes is the bytes of one token's activations as the
// kernel reads them; it sizes the token blocks.
func (p *product) run(chunk func(r0, r1 int), xTokenBytes int) {
	p.tb = max(1, min(p.n, xBlockBytes/max(1, xTokenBytes)))
	rows := p.w.Rows
	total := rows * p.rb
	if total/max(1, p.rb) != rows || int64(total)*int64(p.n) < serialWork || Threads() == 1 {
		chunk(0, rows)
		return
	}
	rpc := max(1, chunkBytes/max(1, p.rb))
	// At least 4 chunks per thread so a thread slowed by other load is caught up by others.
	if perThread := rows / (4 * Threads()); perThread < rpc {
		rpc = max(1, perThread)
	}
	rpc = (rpc + 3) &^ 3
	nchunks := (rows + rpc - 1) / rpc
	parallelFor(nchunks, func(c int) {
		r0 := c * rpc
		chunk(r0, min(rows, r0+rpc))
	})
}

func (p *product) chunkF32(r0, r1 int) {
	rows, cols, dot := p.w.Rows, p.w.Cols, p.k.dotF32
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			row := p.wf[r*cols : (r+1)*cols]
			for t := t0; t < t1; t++ {
				p.out[t*rows+r] = dot(row, p.x[t*cols:(t+1)*cols])
			}
		}
	}
}

func (p *product) chunkF16(r0, r1 int) {
	rows, cols, rb, dot := p.w.Rows, p.w.Cols, p.rb, p.k.dotF16
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			row := p.w.Data[r*rb : (r+1)*rb]
			for t := t0; t < t1; t++ {
				p.out[t*rows+r] = dot(row, p.x[t*cols:(t+1)*cols])
			}
		}
	}
}

func (p *product) chunkQ8(r0, r1 int) { p.chunkQuant(r0, r1, p.k.dotQ8, p.k.dotQ8x4) }
func (p *product) chunkQ4(r0, r1 int) { p.chunkQuant(r0, r1, p.k.dotQ4, p.k.dotQ4x4) }

func (p *product) chunkQuant(r0, r1 int, dot func([]byte, []int8, []float32) float32,
	dot4 func(*[4]float32, []byte, []int8, []float32)) {
	rows, cols, rb := p.w.Rows, p.w.Cols, p.rb
	nb := cols / blockElems
	var res [4]float32
	for t0 := 0; t0 < p.n; t0 += p.tb {
		t1 := min(p.n, t0+p.tb)
		for r := r0; r < r1; r++ {
			row := p.w.Data[r*rb : (r+1)*rb]
			t := t0
			for ; t+4 <= t1; t += 4 {
				dot4(&res, row, p.xq[t*cols:(t+4)*cols], p.xd[t*nb:(t+4)*nb])
				p.out[t*rows+r] = res[0]
				p.out[(t+1)*rows+r] = res[1]
				p.out[(t+2)*rows+r] = res[2]
				p.out[(t+3)*rows+r] = res[3]
			}
			for ; t < t1; t++ {
				p.out[t*rows+r] = dot(row, p.xq[t*cols:(t+1)*cols], p.xd[t*nb:(t+1)*nb])
			}
		}
	}
}

// chunkDecoded decodes each weight row once per token block into a scratch row.
func (p *product) chunkDecoded(r0, r1 int) {
	rows, cols, rb, dot := p.w.Rows, p.w.Cols, p.rb, p.k.dotF32
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
			for t := t0; t < t1; t++ {
				p.out[t*rows+r] = dot(buf, p.x[t*cols:(t+1)*cols])
			}
		}
	}
}

// q8Scratch holds activations quantized per 32-value block.
type q8Scratch struct {
	q []int8
	d []float32
}

var q8Pool sync.Pool

func getQ8Scratch(n int) *q8Scratch {
	s, _ := q8Pool.Get().(*q8Scratch)
	if s == nil {
		s = &q8Scratch{}
	}
	if cap(s.q) < n {
		s.q = make([]int8, n)
		s.d = make([]float32, n/blockElems)
	}
	s.q, s.d = s.q[:n], s.d[:n/blockElems]
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
