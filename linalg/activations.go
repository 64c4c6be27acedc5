package linalg

import (
	"fmt"
	"sync/atomic"
)

// Activations are n tokens' activations quantized ahead of their products by the
// goroutines that compute them, so that MatMulQuantized starts multiplying at once
// instead of quantizing them on the calling goroutine first.
//
// Use: Prepare for the products' weights, Quantize every token once after its values
// are final (concurrently on disjoint token ranges if wanted), then MatMulQuantized.
// Each token is quantized on its own exactly as MatMul quantizes it, so the products'
// results are MatMul's bit for bit, whatever the ranges. An Activations keeps its
// scratch across uses; it is not safe for concurrent Prepare or MatMulQuantized.
type Activations struct {
	k       *kernelSet
	x       []float32
	n, cols int
	nd      quantNeeds // what the prepared products read (nd.q false: nothing to quantize)
	xt      tokenPack
	xsum    []int32
	s       q8Scratch
	// done[g] counts the quantized tokens of 8-token group g: the Quantize call that
	// completes a group packs it (pack8 lays out 8 tokens at a time), and
	// MatMulQuantized checks that every token was quantized.
	done []atomic.Int32
}

// Prepare sets a up for products with ws (all of the same Cols) of n tokens of x,
// token-major: ws[0].Cols float32 values per token. x must stay in place until the
// products; its values may be written until Quantize covers them. It returns an error
// wrapping ErrShape, and prepares nothing, when the weights' columns differ, n is
// negative or x is too short.
func (a *Activations) Prepare(x []float32, n int, ws ...Matrix) error {
	a.n, a.x, a.nd = 0, nil, quantNeeds{}
	if len(ws) == 0 || n == 0 {
		return nil
	}
	if err := checkOutputs("Prepare", nil, ws); err != nil {
		return err
	}
	cols := ws[0].Cols
	if n < 0 || (cols > 0 && n > len(x)/cols) || len(x) < n*cols {
		return fmt.Errorf("linalg: Prepare: %w: %d tokens of %d columns, x has %d values", ErrShape, n, cols, len(x))
	}
	k := active.Load()
	a.k, a.x, a.n, a.cols = k, x[:n*cols], n, cols
	a.nd = needsOf(k, ws, n)
	if !a.nd.q || cols == 0 {
		a.nd = quantNeeds{}
		return nil
	}
	nb := cols / blockElems
	np := 0
	if a.nd.unsigned || a.nd.signed {
		np = (n + tokenGroup - 1) / tokenGroup * tokenGroup * nb
	}
	a.s.size(n*cols, np)
	a.xt, a.xsum = a.s.pack(n, nb, a.nd)
	groups := (n + 7) / 8
	if cap(a.done) < groups {
		a.done = make([]atomic.Int32, groups)
	}
	a.done = a.done[:groups]
	for g := range a.done {
		a.done[g].Store(0)
	}
	return nil
}

// Quantize quantizes tokens [t0, t1) of the prepared activations. Calls on disjoint
// ranges may run concurrently; every token must be covered once before
// MatMulQuantized. It does nothing when the prepared products read no quantized
// activations. It panics when the range is outside [0, n).
func (a *Activations) Quantize(t0, t1 int) {
	if !a.nd.q || t0 >= t1 {
		return
	}
	if t0 < 0 || t1 > a.n {
		panic(fmt.Sprintf("linalg: Activations.Quantize: tokens [%d, %d) of %d", t0, t1, a.n))
	}
	k, cols, nb := a.k, a.cols, a.cols/blockElems
	xq, xd := a.xt.xq, a.xt.xd
	k.quantQ8(xq[t0*cols:t1*cols], xd[t0*nb:t1*nb], a.x[t0*cols:t1*cols])
	if a.xsum != nil {
		blockSums(a.xsum[t0*nb:t1*nb], xq[t0*cols:t1*cols])
	}
	pack := a.xt.xdp != nil
	for g := t0 / 8; 8*g < t1; g++ {
		lo, hi, end := max(t0, 8*g), min(t1, 8*g+8), min(a.n, 8*g+8)
		// The atomic add orders the group's other quantizers' writes before the pack.
		if a.done[g].Add(int32(hi-lo)) == int32(end-8*g) && pack {
			packTokens(k, &a.xt, a.xsum, 8*g, end)
		}
	}
}

// MatMulQuantized computes outs[j] = ws[j]·x for every j as MatMulMany(outs, ws, x, n)
// does, x and n those of a's Prepare, bit for bit, with the quantized activations of a.
// Where a was prepared for other products, or under other kernels (SetSIMD), it
// quantizes x again as MatMulMany does. It returns an error, and writes nothing, on an
// invalid argument, or when Quantize did not cover every token once.
func MatMulQuantized(outs [][]float32, ws []Matrix, a *Activations) error {
	const name = "MatMulQuantized"
	if err := checkOutputs(name, outs, ws); err != nil {
		return err
	}
	k, x, n := active.Load(), a.x, a.n
	if len(ws) > 0 && a.n > 0 && ws[0].Cols != a.cols {
		return fmt.Errorf("linalg: %s: %w: matrices of %d columns, activations of %d", name, ErrShape, ws[0].Cols, a.cols)
	}
	nd := needsOf(k, ws, n)
	if k != a.k || !a.nd.covers(nd) {
		return matMul(name, outs, ws, x, n)
	}
	if err := checkProducts(name, outs, ws, x, n); err != nil {
		return err
	}
	if n == 0 || len(ws) == 0 {
		return nil
	}
	if nd.q {
		var got int
		for g := range a.done {
			got += int(a.done[g].Load())
		}
		if got != n {
			return fmt.Errorf("linalg: %s: %d quantizations of %d tokens", name, got, n)
		}
	}
	return products(k, outs, ws, x, n, a.xt, a.xsum)
}
