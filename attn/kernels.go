package attn

import (
	"math"

	"kvq/internal/kernelsel"
	"kvq/quant"
)

// kernelSet is one implementation of the softmax kernels. The scalar set is the
// reference; the SIMD set (kernels_amd64.go: assembly, on AVX2+FMA CPUs) agrees
// with it within float32 rounding.
type kernelSet struct {
	name string
	// maxRow returns the largest value of row (len(row) ≥ 1); NaNs are skipped
	// unless every value is NaN.
	maxRow func(row []float32) float32
	// expRow replaces each x of row by e^(x−m) (exp32) and returns their float32
	// sum; mb is math.Float32bits(m) (a float argument would be read with legacy SSE
	// instructions inside the vector code, which stall).
	expRow func(row []float32, mb uint32) float32
}

var scalarKernels = &kernelSet{name: "scalar", maxRow: maxRowScalar, expRow: expRowScalar}

// simdKernels is this build's SIMD kernel set for this CPU, or nil.
var simdKernels = detectSIMD()

// active is the kernel set in use.
var active = kernelsel.New(scalarKernels, simdKernels)

// SetSIMD selects the SIMD kernels (on) or the portable scalar ones (off) for
// attention, here and in package quant (the row decoders and multi-query products),
// and reports whether SIMD kernels are in use afterwards: false when this build or
// this CPU has none. The environment variable KVQ_NOSIMD=1 sets the initial choice
// to scalar.
func SetSIMD(on bool) bool {
	q := quant.SetSIMD(on)
	return active.SetSIMD(on) && q
}

// KernelName names the kernels in use: "scalar", or the SIMD level such as "avx2"
// (of package quant's batched kernels and of the softmax kernels here).
func KernelName() string {
	k, q := active.Load().name, quant.KernelName()
	if k == q {
		return k
	}
	return k + "+" + q
}

// maxRowScalar is the reference for maxRow.
func maxRowScalar(row []float32) float32 {
	mx := row[0]
	for _, x := range row[1:] {
		if x > mx || mx != mx {
			mx = x
		}
	}
	return mx
}

// expRowScalar is the reference for expRow.
func expRowScalar(row []float32, mb uint32) float32 {
	m := math.Float32frombits(mb)
	var sum float32
	for i, x := range row {
		w := exp32(x - m)
		sum += w
		row[i] = w
	}
	return sum
}
