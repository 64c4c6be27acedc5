//go:build amd64 && goexperiment.simd

package quant

import (
	"encoding/binary"
	"simd/archsimd"
	"unsafe"
)

// The AVX2+FMA batched kernels. Each computes what its scalar twin in multi.go
// computes: decoders bit for bit (NaN payloads aside), multiDot and multiAxpy up to
// the order of their float sums. Slices are loaded through array pointers so bounds
// checks fold away; tails shorter than a vector run the scalar twin. Every kernel
// clears the upper halves of the vector registers before returning (scalar float code
// is legacy SSE in Go and stalls while they are dirty), and scalar floats that feed
// vectors are broadcast from their integer bits for the same reason.

func detectSIMD() *kernelSet {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		return nil
	}
	return &kernelSet{
		name:       "avx2",
		multiDot:   multiDotAVX2,
		multiAxpy:  multiAxpyAVX2,
		decF32:     decF32Copy,
		decF16:     decF16AVX2,
		decBF16:    decBF16AVX2,
		decInt8:    decInt8AVX2,
		decFP8:     decFP8AVX2,
		decAffine:  decAffineAVX2,
		decChannel: decChannelAVX2,
	}
}

// f32Bits views a float32 slice as its bits (for broadcasting scalars from integer
// registers).
func f32Bits(x []float32) []uint32 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&x[0])), len(x))
}

// bcast broadcasts the float32 whose bits are b.
func bcast(b uint32) archsimd.Float32x8 { return archsimd.BroadcastUint32x8(b).AsFloat32x8() }

// sum8 returns the vector of the lane sums of a0..a7: lane r is Σ lanes of a_r.
func sum8(a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x8) archsimd.Float32x8 {
	h01 := a0.AddPairsGrouped(a1) // lo: a0 01,23 a1 01,23; hi: 45,67 of each
	h23 := a2.AddPairsGrouped(a3)
	h45 := a4.AddPairsGrouped(a5)
	h67 := a6.AddPairsGrouped(a7)
	s0 := h01.AddPairsGrouped(h23) // lo: a0..a3 low-half sums; hi: their high-half sums
	s1 := h45.AddPairsGrouped(h67)
	return s0.Select128FromPair(0, 2, s1).Add(s0.Select128FromPair(1, 3, s1))
}

// multiDotAVX2 is multiDotScalar for d a multiple of 8: per query, 8 rows at a time
// in 8 accumulators reduced by sum8 into one vector of 8 scores.
func multiDotAVX2(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int) {
	if d%8 != 0 {
		multiDotScalar(scores, ld, q, g, x, xs, n, d)
		return
	}
	sb := f32Bits(scores)
	for i := 0; i < n; i += 8 {
		m := min(8, n-i)
		var o [8]int // row offsets; missing rows repeat the last one
		for r := range o {
			o[r] = (i + min(r, m-1)) * xs
		}
		r0, r1, r2, r3 := x[o[0]:][:d], x[o[1]:][:d], x[o[2]:][:d], x[o[3]:][:d]
		r4, r5, r6, r7 := x[o[4]:][:d], x[o[5]:][:d], x[o[6]:][:d], x[o[7]:][:d]
		for j := range g {
			qj := q[j*d:][:d]
			var a0, a1, a2, a3, a4, a5, a6, a7 archsimd.Float32x8
			for c := 0; c+8 <= d; c += 8 {
				qv := archsimd.LoadFloat32x8((*[8]float32)(qj[c:]))
				a0 = archsimd.LoadFloat32x8((*[8]float32)(r0[c:])).MulAdd(qv, a0)
				a1 = archsimd.LoadFloat32x8((*[8]float32)(r1[c:])).MulAdd(qv, a1)
				a2 = archsimd.LoadFloat32x8((*[8]float32)(r2[c:])).MulAdd(qv, a2)
				a3 = archsimd.LoadFloat32x8((*[8]float32)(r3[c:])).MulAdd(qv, a3)
				a4 = archsimd.LoadFloat32x8((*[8]float32)(r4[c:])).MulAdd(qv, a4)
				a5 = archsimd.LoadFloat32x8((*[8]float32)(r5[c:])).MulAdd(qv, a5)
				a6 = archsimd.LoadFloat32x8((*[8]float32)(r6[c:])).MulAdd(qv, a6)
				a7 = archsimd.LoadFloat32x8((*[8]float32)(r7[c:])).MulAdd(qv, a7)
			}
			s := sum8(a0, a1, a2, a3, a4, a5, a6, a7).AsUint32x8()
			if m == 8 {
				s.Store((*[8]uint32)(sb[j*ld+i:]))
				continue
			}
			var t [8]uint32
			s.Store(&t)
			copy(sb[j*ld+i:][:m], t[:m])
		}
	}
	archsimd.ClearAVXUpperBits()
}

// multiAxpyAVX2 is multiAxpyScalar for d a multiple of 8: 16 (or 8) columns at a
// time, the accumulators of up to 4 queries in registers while the rows stream by.
func multiAxpyAVX2(acc, w []float32, ld, g int, x []float32, xs, n, d int) {
	if d%8 != 0 {
		multiAxpyScalar(acc, w, ld, g, x, xs, n, d)
		return
	}
	wb := f32Bits(w)
	c := 0
	for ; c+16 <= d; c += 16 {
		j := 0
		for ; j+4 <= g; j += 4 {
			p0 := (*[16]float32)(acc[j*d+c:])
			p1 := (*[16]float32)(acc[(j+1)*d+c:])
			p2 := (*[16]float32)(acc[(j+2)*d+c:])
			p3 := (*[16]float32)(acc[(j+3)*d+c:])
			a00, a01 := archsimd.LoadFloat32x8((*[8]float32)(p0[:8])), archsimd.LoadFloat32x8((*[8]float32)(p0[8:]))
			a10, a11 := archsimd.LoadFloat32x8((*[8]float32)(p1[:8])), archsimd.LoadFloat32x8((*[8]float32)(p1[8:]))
			a20, a21 := archsimd.LoadFloat32x8((*[8]float32)(p2[:8])), archsimd.LoadFloat32x8((*[8]float32)(p2[8:]))
			a30, a31 := archsimd.LoadFloat32x8((*[8]float32)(p3[:8])), archsimd.LoadFloat32x8((*[8]float32)(p3[8:]))
			w0, w1, w2, w3 := wb[j*ld:][:n], wb[(j+1)*ld:][:n], wb[(j+2)*ld:][:n], wb[(j+3)*ld:][:n]
			for i := range n {
				xr := (*[16]float32)(x[i*xs+c:])
				x0, x1 := archsimd.LoadFloat32x8((*[8]float32)(xr[:8])), archsimd.LoadFloat32x8((*[8]float32)(xr[8:]))
				v := bcast(w0[i])
				a00, a01 = x0.MulAdd(v, a00), x1.MulAdd(v, a01)
				v = bcast(w1[i])
				a10, a11 = x0.MulAdd(v, a10), x1.MulAdd(v, a11)
				v = bcast(w2[i])
				a20, a21 = x0.MulAdd(v, a20), x1.MulAdd(v, a21)
				v = bcast(w3[i])
				a30, a31 = x0.MulAdd(v, a30), x1.MulAdd(v, a31)
			}
			a00.Store((*[8]float32)(p0[:8]))
			a01.Store((*[8]float32)(p0[8:]))
			a10.Store((*[8]float32)(p1[:8]))
			a11.Store((*[8]float32)(p1[8:]))
			a20.Store((*[8]float32)(p2[:8]))
			a21.Store((*[8]float32)(p2[8:]))
			a30.Store((*[8]float32)(p3[:8]))
			a31.Store((*[8]float32)(p3[8:]))
		}
		for ; j < g; j++ {
			p0 := (*[16]float32)(acc[j*d+c:])
			a00, a01 := archsimd.LoadFloat32x8((*[8]float32)(p0[:8])), archsimd.LoadFloat32x8((*[8]float32)(p0[8:]))
			w0 := wb[j*ld:][:n]
			for i := range n {
				xr := (*[16]float32)(x[i*xs+c:])
				v := bcast(w0[i])
				a00 = archsimd.LoadFloat32x8((*[8]float32)(xr[:8])).MulAdd(v, a00)
				a01 = archsimd.LoadFloat32x8((*[8]float32)(xr[8:])).MulAdd(v, a01)
			}
			a00.Store((*[8]float32)(p0[:8]))
			a01.Store((*[8]float32)(p0[8:]))
		}
	}
	if c < d { // one last group of 8 columns
		for j := range g {
			p := (*[8]float32)(acc[j*d+c:])
			a := archsimd.LoadFloat32x8(p)
			wj := wb[j*ld:][:n]
			for i := range n {
				a = archsimd.LoadFloat32x8((*[8]float32)(x[i*xs+c:])).MulAdd(bcast(wj[i]), a)
			}
			a.Store(p)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// decF32Copy is F32.Decode on a little-endian machine: a copy of the bytes.
func decF32Copy(dst []float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), src[:4*len(dst)])
}

// f16x8 widens the 8 binary16 values h (one per lane) to float32 exactly: exponent
// and mantissa shifted into float32 position and scaled by 2^112 (which also makes
// subnormals right), the sign put back, and exponent 31 (Inf, NaN) mapped to 255.
func f16x8(h archsimd.Uint32x8) archsimd.Float32x8 {
	em := h.And(archsimd.BroadcastUint32x8(0x7fff)).ShiftAllLeft(13).AsFloat32x8().Mul(bcast(0x77800000)) // 2^112
	sg := h.And(archsimd.BroadcastUint32x8(0x8000)).ShiftAllLeft(16)
	inf := h.And(archsimd.BroadcastUint32x8(0x7c00)).Add(archsimd.BroadcastUint32x8(0x0400)).
		And(archsimd.BroadcastUint32x8(0x8000)).ShiftAllLeft(16).AsInt32x8().ShiftAllRight(8).
		AsUint32x8().And(archsimd.BroadcastUint32x8(0x7f800000))
	return em.AsUint32x8().Or(sg).Or(inf).AsFloat32x8()
}

// decF16AVX2 is F16.Decode, 8 values at a time.
func decF16AVX2(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for len(dst) >= 8 && len(src) >= 16 {
		h := archsimd.LoadUint8x16((*[16]uint8)(src)).AsUint16x8().ExtendToUint32()
		f16x8(h).Store((*[8]float32)(dst))
		dst, src = dst[8:], src[16:]
	}
	archsimd.ClearAVXUpperBits()
	if len(dst) > 0 {
		F16{}.Decode(dst, src)
	}
}

// decBF16AVX2 is BF16.Decode, 8 values at a time.
func decBF16AVX2(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for len(dst) >= 8 && len(src) >= 16 {
		h := archsimd.LoadUint8x16((*[16]uint8)(src)).AsUint16x8().ExtendToUint32()
		h.ShiftAllLeft(16).AsFloat32x8().Store((*[8]float32)(dst))
		dst, src = dst[8:], src[16:]
	}
	archsimd.ClearAVXUpperBits()
	if len(dst) > 0 {
		BF16{}.Decode(dst, src)
	}
}

// bytes8 returns the 8 bytes at c, one per lane, zero-extended.
func bytes8(c *[8]byte) archsimd.Uint32x8 {
	return archsimd.BroadcastUint64x2(binary.LittleEndian.Uint64(c[:])).AsUint8x16().ExtendLo8ToUint32()
}

// decInt8AVX2 is decInt8Scalar, 8 values at a time.
func decInt8AVX2(dst []float32, s float32, c []byte) {
	c = c[:len(dst)]
	sv := archsimd.BroadcastFloat32x8(s)
	for len(dst) >= 8 && len(c) >= 8 {
		v := archsimd.BroadcastUint64x2(binary.LittleEndian.Uint64(c)).AsInt8x16().ExtendLo8ToInt32()
		v.ConvertToFloat32().Mul(sv).Store((*[8]float32)(dst))
		dst, c = dst[8:], c[8:]
	}
	archsimd.ClearAVXUpperBits()
	if len(dst) > 0 {
		decInt8Scalar(dst, s, c)
	}
}

// decFP8AVX2 is decFP8Scalar, 8 values at a time. E5M2 codes are the high byte of
// binary16 and widen as such; E4M3 magnitudes shifted into float32 position read
// 2^120 too small (normals and subnormals alike), and 0x7F/0xFF are NaN.
func decFP8AVX2(dst []float32, s float32, c []byte, e5m2 bool) {
	c = c[:len(dst)]
	sv := archsimd.BroadcastFloat32x8(s)
	if e5m2 {
		for len(dst) >= 8 && len(c) >= 8 {
			f16x8(bytes8((*[8]byte)(c)).ShiftAllLeft(8)).Mul(sv).Store((*[8]float32)(dst))
			dst, c = dst[8:], c[8:]
		}
	} else {
		mag := archsimd.BroadcastUint32x8(0x7f)
		for len(dst) >= 8 && len(c) >= 8 {
			h := bytes8((*[8]byte)(c))
			m := h.And(mag)
			v := m.ShiftAllLeft(20).AsFloat32x8().Mul(bcast(0x7b800000)).AsUint32x8() // 2^120
			v = archsimd.BroadcastUint32x8(0x7fc00000).Merge(v, m.Equal(mag)).Or(h.AndNot(mag).ShiftAllLeft(24))
			v.AsFloat32x8().Mul(sv).Store((*[8]float32)(dst))
			dst, c = dst[8:], c[8:]
		}
	}
	archsimd.ClearAVXUpperBits()
	if len(dst) > 0 {
		decFP8Scalar(dst, s, c, e5m2)
	}
}

// Lane shifts that spread packed codes over 8 lanes.
var (
	shifts4 = [8]uint32{0, 4, 8, 12, 16, 20, 24, 28}
	shifts2 = [8]uint32{0, 2, 4, 6, 8, 10, 12, 14}
)

// codes8 returns the next 8 codes of c (8, 4 or 2 bits, packed as in pack.go) as
// float32 lanes, and the number of bytes they occupy.
func codes8(c []byte, bits int, sh4, sh2 archsimd.Uint32x8) (archsimd.Float32x8, int) {
	switch bits {
	case 8:
		return bytes8((*[8]byte)(c)).AsInt32x8().ConvertToFloat32(), 8
	case 4:
		w := binary.LittleEndian.Uint32(c)
		return archsimd.BroadcastUint32x8(w).ShiftRight(sh4).And(archsimd.BroadcastUint32x8(15)).AsInt32x8().ConvertToFloat32(), 4
	}
	w := uint32(binary.LittleEndian.Uint16(c))
	return archsimd.BroadcastUint32x8(w).ShiftRight(sh2).And(archsimd.BroadcastUint32x8(3)).AsInt32x8().ConvertToFloat32(), 2
}

// decAffineAVX2 is decodeCodes (dst = lo + s·code, product rounded before the sum),
// 8 values at a time.
func decAffineAVX2(dst []float32, lo, s float32, c []byte, bits int) {
	c = c[:packedBytes(len(dst), bits)]
	sv, lv := archsimd.BroadcastFloat32x8(s), archsimd.BroadcastFloat32x8(lo)
	sh4, sh2 := archsimd.LoadUint32x8(&shifts4), archsimd.LoadUint32x8(&shifts2)
	need := bits // bytes per 8 codes
	for len(dst) >= 8 && len(c) >= need {
		if bits == 8 && len(c) < 8 {
			break
		}
		v, nb := codes8(c, bits, sh4, sh2)
		v.Mul(sv).Add(lv).Store((*[8]float32)(dst))
		dst, c = dst[8:], c[nb:]
	}
	archsimd.ClearAVXUpperBits()
	if len(dst) > 0 {
		decodeCodes(dst, lo, s, c, bits)
	}
}

// decChannelAVX2 is decChannelScalar, 8 channels at a time.
func decChannelAVX2(dst, lo, s []float32, c []byte, bits int) {
	lo, s = lo[:len(dst)], s[:len(dst)]
	c = c[:packedBytes(len(dst), bits)]
	sh4, sh2 := archsimd.LoadUint32x8(&shifts4), archsimd.LoadUint32x8(&shifts2)
	for len(dst) >= 8 && len(lo) >= 8 && len(s) >= 8 && len(c) >= bits {
		if bits == 8 && len(c) < 8 {
			break
		}
		v, nb := codes8(c, bits, sh4, sh2)
		v.Mul(archsimd.LoadFloat32x8((*[8]float32)(s))).Add(archsimd.LoadFloat32x8((*[8]float32)(lo))).Store((*[8]float32)(dst))
		dst, lo, s, c = dst[8:], lo[8:], s[8:], c[nb:]
	}
	archsimd.ClearAVXUpperBits()
	if len(dst) > 0 {
		decChannelScalar(dst, lo, s, c, bits)
	}
}
