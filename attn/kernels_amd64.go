//go:build amd64 && goexperiment.simd

package attn

import (
	"simd/archsimd"
	"unsafe"
)

// The AVX2+FMA softmax kernels. Each computes what its scalar twin in kernels.go
// computes, 8 lanes at a time, up to float32 rounding (exp8 rounds the reduction to
// even where exp32 rounds half toward zero, and fuses multiply-adds); tails shorter
// than a vector run the scalar twin after the vector state is cleared.

func detectSIMD() *kernelSet {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		return nil
	}
	return &kernelSet{name: "avx2", maxRow: maxRowAVX2, expRow: expRowAVX2}
}

// bcast broadcasts the float32 whose bits are b (from an integer register: scalar
// float code is legacy SSE in Go and stalls while the vector state is dirty).
func bcast(b uint32) archsimd.Float32x8 { return archsimd.BroadcastUint32x8(b).AsFloat32x8() }

func maxRowAVX2(row []float32) float32 {
	if len(row) < 16 {
		return maxRowScalar(row)
	}
	m0 := archsimd.LoadFloat32x8((*[8]float32)(row))
	m1 := archsimd.LoadFloat32x8((*[8]float32)(row[8:]))
	r := row[16:]
	for len(r) >= 8 {
		m0 = m0.Max(archsimd.LoadFloat32x8((*[8]float32)(r)))
		r = r[8:]
	}
	var t [8]float32
	m0.Max(m1).Store(&t)
	archsimd.ClearAVXUpperBits()
	mx := maxRowScalar(t[:])
	if len(r) > 0 {
		if x := maxRowScalar(r); x > mx || mx != mx {
			mx = x
		}
	}
	// Max does not propagate NaN like the scalar twin's comparisons; a NaN row
	// is rare enough (NaN queries or keys) to settle with the reference.
	if mx != mx {
		return maxRowScalar(row)
	}
	return mx
}

// exp8 is exp32 on 8 lanes: x = n·ln2 + r, e^r by its degree-6 Taylor polynomial,
// scaled by 2^n through the exponent bits; 0 below −87.
func exp8(x archsimd.Float32x8) archsimd.Float32x8 {
	const (
		log2e  = 0x3fb8aa3b // 1.44269504
		ln2hi  = 0xbf318000 // −0.693359375
		ln2lo  = 0x395e8083 // +2.12194440e-4
		lowCut = 0xc2ae0000 // −87
	)
	v := x.Mul(bcast(log2e)).RoundToEven()
	r := v.MulAdd(bcast(ln2hi), x)
	r = v.MulAdd(bcast(ln2lo), r)
	p := r.MulAdd(bcast(0x3ab60b61), bcast(0x3c088889)) // 1/720, 1/120
	p = p.MulAdd(r, bcast(0x3d2aaaab))                  // 1/24
	p = p.MulAdd(r, bcast(0x3e2aaaab))                  // 1/6
	p = p.MulAdd(r, bcast(0x3f000000))                  // 1/2
	p = p.MulAdd(r, bcast(0x3f800000))                  // 1
	p = p.MulAdd(r, bcast(0x3f800000))                  // 1
	n := v.ConvertToInt32().Add(archsimd.BroadcastInt32x8(127)).ShiftAllLeft(23).AsFloat32x8()
	y := p.Mul(n)
	return archsimd.BroadcastFloat32x8(0).Merge(y, x.Less(bcast(lowCut)))
}

func expRowAVX2(row []float32, m float32) float32 {
	if len(row) < 8 {
		return expRowScalar(row, m)
	}
	mv := archsimd.BroadcastFloat32x8(m)
	var s archsimd.Float32x8
	r := row
	for len(r) >= 8 {
		p := (*[8]float32)(r)
		w := exp8(archsimd.LoadFloat32x8(p).Sub(mv))
		w.Store(p)
		s = s.Add(w)
		r = r[8:]
	}
	var t [8]uint32
	s.AsUint32x8().Store(&t)
	archsimd.ClearAVXUpperBits()
	f := (*[8]float32)(unsafe.Pointer(&t))
	sum := ((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7]))
	if len(r) > 0 {
		sum += expRowScalar(r, m)
	}
	return sum
}
