package quant

import (
	"fmt"
	"unsafe"
)

// RowPlan is a row codec resolved for rows of d values: its DotRows and AddRows do
// what the package functions do for that codec and d, without their per-call
// dispatch (the codec's type, its group geometry, the kernel set's fused kernel).
// On spans of 16–64 rows, a paged cache block's, skipping it took 13% off the CPU
// time of one-query attention over 4096 tokens of q4 rows. A RowPlan is read-only
// once made: one may serve concurrent calls.
type RowPlan struct {
	c     RowCodec
	d, rb int
	set   *kernelSet   // the kernel set fast was resolved for
	kt    *rowKernels  // the codec's kernel table entry (kernels.go), or nil
	fast  *planKernels // its kernels resolved for d, or nil
}

// NewRowPlan resolves c for rows of d > 0 values.
func NewRowPlan(c RowCodec, d int) (*RowPlan, error) {
	if c == nil || d <= 0 {
		return nil, fmt.Errorf("quant: row plan for codec %v and %d values", c, d)
	}
	p := &RowPlan{c: c, d: d, rb: c.RowBytes(d), set: active.Load(), kt: kernelsOf(c)}
	if p.set.plan != nil {
		p.fast = p.set.plan(c, d)
	}
	return p, nil
}

// Codec returns the plan's codec.
func (p *RowPlan) Codec() RowCodec { return p.c }

// Len returns the values per row.
func (p *RowPlan) Len() int { return p.d }

// RowBytes returns p.Codec().RowBytes(p.Len()).
func (p *RowPlan) RowBytes() int { return p.rb }

// DotRows is DotRows(p.Codec(), scores, ld, q[:g·d], g, src, stride, n, tmp).
func (p *RowPlan) DotRows(scores []float32, ld int, q []float32, g int, src []byte, stride, n int, tmp []float32) {
	p.DotRowsPrepared(scores, ld, q, nil, g, src, stride, n, tmp)
}

// QueryFloats returns the length of a prepared query of g heads (PrepareQuery), or 0
// when the plan's score kernels read the float queries as they are.
func (p *RowPlan) QueryFloats(g int) int {
	if p.fast == nil || p.fast.queryFloats == nil || g <= 0 {
		return 0
	}
	return p.fast.queryFloats(g)
}

// PrepareQuery writes to pq (QueryFloats(g) values) the g queries q[:g·d] in the form
// the plan's score kernels read (q4 and q2 rows: each query quantized to int8 per
// group of 32 values, with its group factors; q8 rows: to int16, with its factor;
// fp8e4m3 rows on AVX-512: times 2¹¹², for kernels that widen codes straight to
// float32), which DotRows otherwise redoes on every call: attention scores many spans with the
// same query. It does nothing when QueryFloats(g) is 0.
func (p *RowPlan) PrepareQuery(pq, q []float32, g int) {
	if p.QueryFloats(g) == 0 {
		return
	}
	p.fast.prepare(pq[:p.QueryFloats(g)], q[:g*p.d], g)
}

// DotRowsPrepared is DotRows with pq the queries q prepared by PrepareQuery for the
// same g (or nil): the scores are the same, bit for bit, without the preparation.
func (p *RowPlan) DotRowsPrepared(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n int, tmp []float32) {
	if g <= 0 || n <= 0 {
		return
	}
	d := p.d
	if p.fast != nil && active.Load() == p.set {
		q = q[:g*d]
		if pq != nil {
			pq = pq[:p.QueryFloats(g)]
		}
		_ = scores[(g-1)*ld+n-1]
		_ = src[(n-1)*stride+p.rb-1]
		p.fast.dot(scores, ld, q, pq, g, src, stride, n, tmp[:ScratchFloats(d)])
		return
	}
	if p.kt != nil {
		dotRows(p.kt, p.c, scores, ld, q[:g*d], g, src, stride, n, tmp)
		return
	}
	DotRows(p.c, scores, ld, q[:g*d], g, src, stride, n, tmp)
}

// DotRowsNext is DotRowsPrepared for a caller that reads the rows in next (stride
// bytes apart too) next: the kernels that can, as they read row i of src, ask for
// the lines of row i of next (the rows next holds; into L2 or L1, whichever
// measured faster for the kernel), instead of the lines past the rows. The scores
// are DotRowsPrepared's, bit for bit.
//
// The next reads of decode attention over a cache are the next KV head's rows of a
// span, then the values: when a span is partly filled (a sequence's last span), the
// heads' rows are not contiguous, and the kernels' prefetch past the rows would
// fetch the span's unused slots. Asked for one head ahead, a step of f16 decode
// attention of 16 sequences of 64 tokens took a third less CPU time
// (BenchmarkStepAttention in package kv). Kernels that do it, for fewer than four
// queries per KV head (models without grouped-query attention, or with two or three
// query heads per KV head): F16 rows with F16C, Int8 rows with AVX-512 VNNI.
func (p *RowPlan) DotRowsNext(scores []float32, ld int, q, pq []float32, g int, src []byte, stride, n int, tmp []float32, next []byte) {
	m := p.twinRows(g, src, stride, n, next)
	if m > 0 && p.kt != nil && p.kt.dotNext != nil && active.Load() == simdKernels {
		d := p.d
		_ = scores[(g-1)*ld+m-1]
		_ = src[(m-1)*stride+p.rb-1]
		if pq != nil {
			pq = pq[:p.QueryFloats(g)]
		}
		if p.kt.dotNext(scores, ld, q[:g*d], pq, g, src, stride, m, d, tmp[:ScratchFloats(d)], uintptr(unsafe.Pointer(&next[0]))-uintptr(unsafe.Pointer(&src[0]))) {
			if m < n {
				p.DotRowsPrepared(scores[m:], ld, q, pq, g, src[m*stride:], stride, n-m, tmp)
			}
			return
		}
	}
	p.DotRowsPrepared(scores, ld, q, pq, g, src, stride, n, tmp)
}

// AddRowsNext is AddRows asking for the rows in next as DotRowsNext does; the sums
// are AddRows's, bit for bit (each column's sum takes the rows in order, however
// they are split into calls).
func (p *RowPlan) AddRowsNext(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32, next []byte) {
	m := p.twinRows(g, src, stride, n, next)
	if m > 0 && p.kt != nil && p.kt.addNext != nil && active.Load() == simdKernels {
		d := p.d
		_ = w[(g-1)*ld+m-1]
		_ = src[(m-1)*stride+p.rb-1]
		if p.kt.addNext(acc[:g*d], w, ld, g, src, stride, m, d, tmp[:ScratchFloats(d)], uintptr(unsafe.Pointer(&next[0]))-uintptr(unsafe.Pointer(&src[0]))) {
			if m < n {
				p.AddRows(acc, w[m:], ld, g, src[m*stride:], stride, n-m, tmp)
			}
			return
		}
	}
	p.AddRows(acc, w, ld, g, src, stride, n, tmp)
}

// twinRows returns how many of the n rows of src have a twin in next, rows i whose
// bytes next[i·stride:][:RowBytes()] lie in next (0 when there are no queries).
func (p *RowPlan) twinRows(g int, src []byte, stride, n int, next []byte) int {
	if g <= 0 || n <= 0 || len(next) < p.rb || len(src) == 0 {
		return 0
	}
	if stride <= 0 {
		return n
	}
	return min(n, (len(next)-p.rb)/stride+1)
}

// AddRows is AddRows(p.Codec(), acc[:g·d], w, ld, g, src, stride, n, tmp).
func (p *RowPlan) AddRows(acc, w []float32, ld, g int, src []byte, stride, n int, tmp []float32) {
	if g <= 0 || n <= 0 {
		return
	}
	d := p.d
	if p.fast != nil && active.Load() == p.set {
		acc = acc[:g*d]
		_ = w[(g-1)*ld+n-1]
		_ = src[(n-1)*stride+p.rb-1]
		if p.fast.add(acc, w, ld, g, src, stride, n, tmp[:ScratchFloats(d)]) {
			return
		}
	}
	if p.kt != nil {
		addRows(p.kt, p.c, acc[:g*d], w, ld, g, src, stride, n, tmp)
		return
	}
	AddRows(p.c, acc[:g*d], w, ld, g, src, stride, n, tmp)
}
