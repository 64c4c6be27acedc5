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

// expRowAVX2 is expRowScalar 8 lanes at a time: x = n·ln2 + r, e^r by its degree-6
// Taylor polynomial, scaled by 2^n through the exponent bits; 0 below −87. Every
// float constant, m included (it arrives as bits), is broadcast from its bits before the loop: a scalar
// float (legacy SSE in Go) inside the loop would stall on the dirty vector state.
// lanes holds each lane's index.
var lanes = [8]int32{0, 1, 2, 3, 4, 5, 6, 7}

func expRowAVX2(row []float32, mb uint32) float32 {
	if len(row) < 8 {
		return expRowScalar(row, mb)
	}
	mv := bcast(mb)
	log2e := bcast(0x3fb8aa3b)  // 1.44269504
	ln2hi := bcast(0xbf318000)  // −0.693359375
	ln2lo := bcast(0x395e8083)  // +2.12194440e-4
	lowCut := bcast(0xc2ae0000) // −87
	c720 := bcast(0x3ab60b61)   // 1/720
	c120 := bcast(0x3c088889)   // 1/120
	c24 := bcast(0x3d2aaaab)    // 1/24
	c6 := bcast(0x3e2aaaab)     // 1/6
	half := bcast(0x3f000000)   // 1/2
	one := bcast(0x3f800000)    // 1
	bias := archsimd.BroadcastInt32x8(127)
	var zero, s archsimd.Float32x8
	// A last partial vector is the row's last 8 values, loaded before the loop and
	// only its new lanes stored and summed, so that neither m nor a zeroed buffer is
	// needed after the vector code starts.
	n := len(row)
	last := archsimd.LoadFloat32x8((*[8]float32)(row[n-8:]))
	newLanes := archsimd.LoadInt32x8(&lanes).GreaterEqual(archsimd.BroadcastInt32x8(int32(8 - n%8)))
	full := n &^ 7
	for i := 0; i <= full; i += 8 {
		var x archsimd.Float32x8
		if i < full {
			x = archsimd.LoadFloat32x8((*[8]float32)(row[i:])).Sub(mv)
		} else if n > full {
			x = last.Sub(mv)
		} else {
			break
		}
		v := x.Mul(log2e).RoundToEven()
		t := v.MulAdd(ln2hi, x)
		t = v.MulAdd(ln2lo, t)
		y := t.MulAdd(c720, c120)
		y = y.MulAdd(t, c24)
		y = y.MulAdd(t, c6)
		y = y.MulAdd(t, half)
		y = y.MulAdd(t, one)
		y = y.MulAdd(t, one)
		y = y.Mul(v.ConvertToInt32().Add(bias).ShiftAllLeft(23).AsFloat32x8())
		w := zero.Merge(y, x.Less(lowCut))
		if i < full {
			w.Store((*[8]float32)(row[i:]))
			s = s.Add(w)
		} else {
			w.StoreMasked((*[8]float32)(row[n-8:]), newLanes)
			s = s.Add(w.Masked(newLanes))
		}
	}
	var t [8]uint32
	s.AsUint32x8().Store(&t)
	archsimd.ClearAVXUpperBits()
	f := (*[8]float32)(unsafe.Pointer(&t))
	return ((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7]))
}
