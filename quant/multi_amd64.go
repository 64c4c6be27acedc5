//go:build amd64 && goexperiment.simd

package quant

import (
	"math"
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
		name:      "avx2",
		multiDot:  multiDotAVX2,
		multiAxpy: multiAxpyAVX2,
		decRows:   decRowsAVX2,
		decBlock:  decBlockAVX2,
		dotRows:   fusedDotRows,
		addRows:   fusedAddRows,
	}
}

// bytesAsF32 views the first 4·n bytes of b as n float32s (F32 rows are
// little-endian float32, as amd64 stores them): F32 rows are read in place, without
// the copy into a tile.
func bytesAsF32(b []byte, n int) []float32 {
	_ = b[4*n-1]
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
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

// ld8 loads the 8 float32s at p + off bytes.
func ld8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

// sum4 returns the lane sums of a0..a3: lane r is Σ lanes of a_r.
func sum4(a0, a1, a2, a3 archsimd.Float32x8) archsimd.Float32x4 {
	s := a0.AddPairsGrouped(a1).AddPairsGrouped(a2.AddPairsGrouped(a3))
	return s.GetLo().Add(s.GetHi())
}

// dot4rows stores to out the 4 dot products of the end/4 float32s at q with those at
// p0..p3. It is a separate function so that its loop has the registers to itself
// (inlined into multiDotAVX2's loops, the loop variables spilled).
//
//go:noinline
func dot4rows(out *[4]uint32, q, p0, p1, p2, p3 unsafe.Pointer, end uintptr) {
	// Two accumulators per row (even and odd chunks): with one, the loop waits on
	// the FMA latency instead of issuing FMAs back to back.
	var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8
	c := uintptr(0)
	for ; c+64 <= end; c += 64 {
		qv, qw := ld8(q, c), ld8(q, c+32)
		a0 = ld8(p0, c).MulAdd(qv, a0)
		a1 = ld8(p1, c).MulAdd(qv, a1)
		a2 = ld8(p2, c).MulAdd(qv, a2)
		a3 = ld8(p3, c).MulAdd(qv, a3)
		b0 = ld8(p0, c+32).MulAdd(qw, b0)
		b1 = ld8(p1, c+32).MulAdd(qw, b1)
		b2 = ld8(p2, c+32).MulAdd(qw, b2)
		b3 = ld8(p3, c+32).MulAdd(qw, b3)
	}
	if c < end {
		qv := ld8(q, c)
		a0 = ld8(p0, c).MulAdd(qv, a0)
		a1 = ld8(p1, c).MulAdd(qv, a1)
		a2 = ld8(p2, c).MulAdd(qv, a2)
		a3 = ld8(p3, c).MulAdd(qv, a3)
	}
	sum4(a0.Add(b0), a1.Add(b1), a2.Add(b2), a3.Add(b3)).AsUint32x4().Store(out)
}

// multiDotAVX2 is multiDotScalar for d a multiple of 8: per query, 4 rows at a time
// in 4 accumulators reduced by sum4 into 4 scores. The rows are read through unsafe
// pointers (MultiDot checked every index first): with indexed slices the loop ran out
// of registers and spilled.
func multiDotAVX2(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int) {
	if d%8 != 0 {
		multiDotScalar(scores, ld, q, g, x, xs, n, d)
		return
	}
	sb := f32Bits(scores)
	xp, qp := unsafe.Pointer(&x[0]), unsafe.Pointer(&q[0])
	end := uintptr(4 * d)
	rowB := uintptr(4 * xs)
	for i := 0; i < n; i += 4 {
		m := min(4, n-i)
		p0 := unsafe.Add(xp, uintptr(i)*rowB)
		p1, p2, p3 := p0, p0, p0
		if m > 1 {
			p1 = unsafe.Add(p0, rowB)
			p2, p3 = p1, p1
		}
		if m > 2 {
			p2 = unsafe.Add(p1, rowB)
			p3 = p2
		}
		if m > 3 {
			p3 = unsafe.Add(p2, rowB)
		}
		for j := range g {
			if m == 4 {
				dot4rows((*[4]uint32)(sb[j*ld+i:]), unsafe.Add(qp, 4*j*d), p0, p1, p2, p3, end)
				continue
			}
			var t [4]uint32
			dot4rows(&t, unsafe.Add(qp, 4*j*d), p0, p1, p2, p3, end)
			copy(sb[j*ld+i:][:m], t[:m])
		}
	}
	archsimd.ClearAVXUpperBits()
}

// multiAxpyAVX2 is multiAxpyScalar for d a multiple of 8: 16 (or 8) columns at a
// time, the accumulators of up to 4 queries in registers while the rows stream by
// (read through unsafe pointers, MultiAxpy checked every index first).
func multiAxpyAVX2(acc, w []float32, ld, g int, x []float32, xs, n, d int) {
	if d%8 != 0 {
		multiAxpyScalar(acc, w, ld, g, x, xs, n, d)
		return
	}
	xp, wp, ap := unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&acc[0])
	rowB, nB := uintptr(4*xs), uintptr(4*n)
	c := 0
	for ; c+16 <= d; c += 16 {
		j := 0
		for ; j+4 <= g; j += 4 {
			q0 := unsafe.Add(ap, 4*(j*d+c))
			q1 := unsafe.Add(q0, 4*d)
			q2 := unsafe.Add(q1, 4*d)
			q3 := unsafe.Add(q2, 4*d)
			a00, a01 := ld8(q0, 0), ld8(q0, 32)
			a10, a11 := ld8(q1, 0), ld8(q1, 32)
			a20, a21 := ld8(q2, 0), ld8(q2, 32)
			a30, a31 := ld8(q3, 0), ld8(q3, 32)
			w0 := unsafe.Add(wp, 4*j*ld)
			wl := uintptr(4 * ld)
			xo := uintptr(4 * c)
			for k := uintptr(0); k < nB; k += 4 {
				x0, x1 := ld8(xp, xo), ld8(xp, xo+32)
				v := bcast(*(*uint32)(unsafe.Add(w0, k)))
				a00, a01 = x0.MulAdd(v, a00), x1.MulAdd(v, a01)
				v = bcast(*(*uint32)(unsafe.Add(w0, k+wl)))
				a10, a11 = x0.MulAdd(v, a10), x1.MulAdd(v, a11)
				v = bcast(*(*uint32)(unsafe.Add(w0, k+2*wl)))
				a20, a21 = x0.MulAdd(v, a20), x1.MulAdd(v, a21)
				v = bcast(*(*uint32)(unsafe.Add(w0, k+3*wl)))
				a30, a31 = x0.MulAdd(v, a30), x1.MulAdd(v, a31)
				xo += rowB
			}
			a00.Store((*[8]float32)(q0))
			a01.Store((*[8]float32)(unsafe.Add(q0, 32)))
			a10.Store((*[8]float32)(q1))
			a11.Store((*[8]float32)(unsafe.Add(q1, 32)))
			a20.Store((*[8]float32)(q2))
			a21.Store((*[8]float32)(unsafe.Add(q2, 32)))
			a30.Store((*[8]float32)(q3))
			a31.Store((*[8]float32)(unsafe.Add(q3, 32)))
		}
		for ; j < g; j++ {
			q0 := unsafe.Add(ap, 4*(j*d+c))
			a00, a01 := ld8(q0, 0), ld8(q0, 32)
			w0 := unsafe.Add(wp, 4*j*ld)
			xo := uintptr(4 * c)
			for k := uintptr(0); k < nB; k += 4 {
				v := bcast(*(*uint32)(unsafe.Add(w0, k)))
				a00, a01 = ld8(xp, xo).MulAdd(v, a00), ld8(xp, xo+32).MulAdd(v, a01)
				xo += rowB
			}
			a00.Store((*[8]float32)(q0))
			a01.Store((*[8]float32)(unsafe.Add(q0, 32)))
		}
	}
	if c < d { // one last group of 8 columns
		for j := range g {
			q0 := unsafe.Add(ap, 4*(j*d+c))
			a := ld8(q0, 0)
			w0 := unsafe.Add(wp, 4*j*ld)
			xo := uintptr(4 * c)
			for k := uintptr(0); k < nB; k += 4 {
				a = ld8(xp, xo).MulAdd(bcast(*(*uint32)(unsafe.Add(w0, k))), a)
				xo += rowB
			}
			a.Store((*[8]float32)(q0))
		}
	}
	archsimd.ClearAVXUpperBits()
}

// f16Consts returns the constants of f16x8. Kernels load them once into locals
// (separate values: a struct of vectors is copied through memory) outside their
// loops; rebuilt per use they cost three instructions each.
func f16Consts() (em, sg, ex, ei, ie archsimd.Uint32x8) {
	return archsimd.BroadcastUint32x8(0x7fff), archsimd.BroadcastUint32x8(0x8000),
		archsimd.BroadcastUint32x8(0x7c00), archsimd.BroadcastUint32x8(0x0400),
		archsimd.BroadcastUint32x8(0x7f800000)
}

// f16x8 widens the 8 binary16 values h (one per lane) to float32 exactly: exponent
// and mantissa shifted into float32 position and scaled by mul = 2^112 (which also
// makes subnormals right), the sign put back, and exponent 31 (Inf, NaN) mapped to
// 255. em..ie are f16Consts.
func f16x8(h, em, sg, ex, ei, ie archsimd.Uint32x8, mul archsimd.Float32x8) archsimd.Float32x8 {
	m := h.And(em).ShiftAllLeft(13).AsFloat32x8().Mul(mul)
	sign := h.And(sg).ShiftAllLeft(16)
	inf := h.And(ex).Add(ei).And(sg).ShiftAllLeft(16).AsInt32x8().ShiftAllRight(8).AsUint32x8().And(ie)
	return m.AsUint32x8().Or(sign).Or(inf).AsFloat32x8()
}

// u8x16 loads the 16 bytes at p + off.
func u8x16(p unsafe.Pointer, off uintptr) archsimd.Uint8x16 {
	return archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(p, off)))
}

// bytes8 returns the 8 bytes at p + off, one per lane, zero-extended.
func bytes8(p unsafe.Pointer, off uintptr) archsimd.Uint32x8 {
	return archsimd.BroadcastUint64x2(*(*uint64)(unsafe.Add(p, off))).AsUint8x16().ExtendLo8ToUint32()
}

// st8 stores v at p + off bytes.
func st8(v archsimd.Float32x8, p unsafe.Pointer, off uintptr) {
	v.Store((*[8]float32)(unsafe.Add(p, off)))
}

// Lane shifts that spread packed codes over 8 lanes.
var (
	shifts4 = [8]uint32{0, 4, 8, 12, 16, 20, 24, 28}
	shifts2 = [8]uint32{0, 2, 4, 6, 8, 10, 12, 14}
)

// Constants of groupParams, one vector each (loads from memory are cheaper than
// building them in registers every group).
var (
	paramShifts = [8]uint32{0, 16, 0, 16, 0, 16, 0, 16}
	paramLow16  = [8]uint32{0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff}
	paramEM     = [8]uint32{0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff}
	paramSign   = [8]uint32{0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000}
	paramExp    = [8]uint32{0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00}
	paramExpInc = [8]uint32{0x0400, 0x0400, 0x0400, 0x0400, 0x0400, 0x0400, 0x0400, 0x0400}
	paramInf    = [8]uint32{0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000}
	paramMul    = [8]uint32{0x77800000, 0x77800000, 0x77800000, 0x77800000, 0x77800000, 0x77800000, 0x77800000, 0x77800000} // 2^112
	paramLane0  = [8]uint32{}
	paramLane1  = [8]uint32{1, 1, 1, 1, 1, 1, 1, 1}
)

// groupParams returns the scale and the zero of the Affine group at p (f16 scale at
// p, f16 zero at p+2), each broadcast to 8 lanes: both widened at once in vector
// registers (f16x8) and spread by permutes, which is much cheaper than two scalar
// conversions and keeps scalar code out of the vector loops.
func groupParams(p unsafe.Pointer) (sv, lv archsimd.Float32x8) {
	h := archsimd.BroadcastUint32x8(*(*uint32)(p)).ShiftRight(archsimd.LoadUint32x8(&paramShifts)).And(archsimd.LoadUint32x8(&paramLow16))
	v := f16x8(h, archsimd.LoadUint32x8(&paramEM), archsimd.LoadUint32x8(&paramSign), archsimd.LoadUint32x8(&paramExp),
		archsimd.LoadUint32x8(&paramExpInc), archsimd.LoadUint32x8(&paramInf), archsimd.LoadUint32x8(&paramMul).AsFloat32x8())
	return v.Permute(archsimd.LoadUint32x8(&paramLane0)), v.Permute(archsimd.LoadUint32x8(&paramLane1))
}

// decRowsAVX2 is decRowsScalar for d a multiple of 8 (and, for Affine, groups a
// multiple of 8); other shapes run the scalar twin. Rows are read and written
// through unsafe pointers (DecodeRows checked every index first); scales and zeros
// are read as float32 bits (f16Bits) and broadcast from integer registers.
func decRowsAVX2(c RowCodec, dst []float32, src []byte, stride, n, d int) {
	if d%8 != 0 {
		decRowsScalar(c, dst, src, stride, n, d)
		return
	}
	sp, dp := unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0])
	switch c := c.(type) {
	case F32:
		rb := 4 * d
		for i := range n {
			copy(unsafe.Slice((*byte)(unsafe.Add(dp, i*rb)), rb), src[i*stride:][:rb])
		}
	case F16:
		decF16Rows(dp, sp, uintptr(stride), n, uintptr(d))
	case BF16:
		decBF16Rows(dp, sp, uintptr(stride), n, uintptr(d))
	case Int8:
		decInt8Rows(dp, sp, uintptr(stride), n, uintptr(d))
	case FP8:
		sb, hdr := math.Float32bits(c.TensorScale), uintptr(0)
		if c.TensorScale == 0 {
			hdr = 2
		}
		if c.Format == E5M2 {
			decE5M2Rows(dp, sp, uintptr(stride), n, uintptr(d), hdr, sb)
		} else {
			decE4M3Rows(dp, sp, uintptr(stride), n, uintptr(d), hdr, sb)
		}
	case Affine:
		g := c.group(d)
		if g%8 != 0 {
			decRowsScalar(c, dst, src, stride, n, d)
			return
		}
		switch c.Bits {
		case 8:
			decAffine8Rows(dp, sp, uintptr(stride), n, uintptr(d), uintptr(g))
		case 4:
			decAffine4Rows(dp, sp, uintptr(stride), n, uintptr(d), uintptr(g))
		default:
			decAffine2Rows(dp, sp, uintptr(stride), n, uintptr(d), uintptr(g))
		}
	default:
		decRowsScalar(c, dst, src, stride, n, d)
	}
}

// The row decoders below take dst (n rows of d float32s, contiguous), src (row i at
// i·stride bytes) and d a multiple of 8 (and g for Affine); each ends with the vector
// state cleared.

func decF16Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d uintptr) {
	em, sg, ex, ei, ie := f16Consts()
	mul := bcast(0x77800000) // 2^112
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		for c := uintptr(0); c < d; c += 8 {
			h := u8x16(sp, 2*c).AsUint16x8().ExtendToUint32()
			st8(f16x8(h, em, sg, ex, ei, ie, mul), dp, 4*c)
		}
	}
	archsimd.ClearAVXUpperBits()
}

func decBF16Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d uintptr) {
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		for c := uintptr(0); c < d; c += 8 {
			h := u8x16(sp, 2*c).AsUint16x8().ExtendToUint32()
			st8(h.ShiftAllLeft(16).AsFloat32x8(), dp, 4*c)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// decInt8Rows: bytes 0..1 of a row are its f16 scale, then d int8 codes.
func decInt8Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d uintptr) {
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		sv := bcast(f16Bits((*[2]byte)(sp)[:]))
		for c := uintptr(0); c < d; c += 8 {
			v := archsimd.BroadcastUint64x2(*(*uint64)(unsafe.Add(sp, 2+c))).AsInt8x16().ExtendLo8ToInt32()
			st8(v.ConvertToFloat32().Mul(sv), dp, 4*c)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// decE5M2Rows: E5M2 codes are the high byte of binary16 and widen as such. hdr is 2
// with a per-row f16 scale, 0 with the tensor scale whose bits are sb.
func decE5M2Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, sb uint32) {
	em, sg, ex, ei, ie := f16Consts()
	mul := bcast(0x77800000) // 2^112
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		if hdr != 0 {
			sb = f16Bits((*[2]byte)(sp)[:])
		}
		sv := bcast(sb)
		for c := uintptr(0); c < d; c += 8 {
			st8(f16x8(bytes8(sp, hdr+c).ShiftAllLeft(8), em, sg, ex, ei, ie, mul).Mul(sv), dp, 4*c)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// decE4M3Rows: normal E4M3 magnitudes m (exponent ≥ 1) are float32 bits m<<20 plus
// a rebias of 120 in the exponent; subnormals (m < 8) are m·2⁻⁹, exact through an
// integer conversion; 0x7F/0xFF are NaN. (Scaling m<<20 by 2^120 instead would feed
// float32 subnormals to the multiplier, which is slow.)
func decE4M3Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, sb uint32) {
	mag := archsimd.BroadcastUint32x8(0x7f)
	eight := archsimd.BroadcastUint32x8(8)
	rebias := archsimd.BroadcastUint32x8(120 << 23)
	nan := archsimd.BroadcastUint32x8(0x7fc00000)
	sub := bcast(0x3b000000) // 2^-9
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		if hdr != 0 {
			sb = f16Bits((*[2]byte)(sp)[:])
		}
		sv := bcast(sb)
		for c := uintptr(0); c < d; c += 8 {
			h := bytes8(sp, hdr+c)
			m := h.And(mag)
			v := m.ShiftAllLeft(20).Add(rebias)
			v = m.AsInt32x8().ConvertToFloat32().Mul(sub).AsUint32x8().Merge(v, m.Less(eight))
			v = nan.Merge(v, m.Equal(mag)).Or(h.AndNot(mag).ShiftAllLeft(24))
			st8(v.AsFloat32x8().Mul(sv), dp, 4*c)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// The Affine decoders: groups of g values (the last one d mod g, also a multiple of
// 8), each 4 header bytes (f16 scale, f16 lo) and the packed codes; value lo + s·code
// with the product rounded before the sum, as decodeCodes.

func decAffine8Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d, g uintptr) {
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		off := uintptr(0) // of the group in the row
		for c0 := uintptr(0); c0 < d; c0 += g {
			p := unsafe.Add(sp, off)
			m := min(g, d-c0)
			sv, lv := groupParams(p)
			for c := uintptr(0); c < m; c += 8 {
				st8(bytes8(p, 4+c).AsInt32x8().ConvertToFloat32().Mul(sv).Add(lv), dp, 4*(c0+c))
			}
			off += 4 + m
		}
	}
	archsimd.ClearAVXUpperBits()
}

func decAffine4Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d, g uintptr) {
	sh := archsimd.LoadUint32x8(&shifts4)
	mask := archsimd.BroadcastUint32x8(15)
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		off := uintptr(0) // of the group in the row
		for c0 := uintptr(0); c0 < d; c0 += g {
			p := unsafe.Add(sp, off)
			m := min(g, d-c0)
			sv, lv := groupParams(p)
			for c := uintptr(0); c < m; c += 8 {
				w := archsimd.BroadcastUint32x8(*(*uint32)(unsafe.Add(p, 4+c/2))).ShiftRight(sh).And(mask)
				st8(w.AsInt32x8().ConvertToFloat32().Mul(sv).Add(lv), dp, 4*(c0+c))
			}
			off += 4 + m/2
		}
	}
	archsimd.ClearAVXUpperBits()
}

func decAffine2Rows(dp0, sp0 unsafe.Pointer, stride uintptr, n int, d, g uintptr) {
	sh := archsimd.LoadUint32x8(&shifts2)
	mask := archsimd.BroadcastUint32x8(3)
	for i := range uintptr(n) {
		sp, dp := unsafe.Add(sp0, i*stride), unsafe.Add(dp0, 4*i*d)
		off := uintptr(0) // of the group in the row
		for c0 := uintptr(0); c0 < d; c0 += g {
			p := unsafe.Add(sp, off)
			m := min(g, d-c0)
			sv, lv := groupParams(p)
			for c := uintptr(0); c < m; c += 8 {
				w := archsimd.BroadcastUint32x8(uint32(*(*uint16)(unsafe.Add(p, 4+c/4)))).ShiftRight(sh).And(mask)
				st8(w.AsInt32x8().ConvertToFloat32().Mul(sv).Add(lv), dp, 4*(c0+c))
			}
			off += 4 + m/4
		}
	}
	archsimd.ClearAVXUpperBits()
}

// decBlockAVX2 is decBlockScalar for d a multiple of 8: per-channel scales and zeros
// as float32 bits in s and lo, then each token row 8 channels at a time.
func decBlockAVX2(c Channel, dst []float32, src []byte, t, d, i0, i1 int, lo, s []float32) {
	if d%8 != 0 {
		decBlockScalar(c, dst, src, t, d, i0, i1, lo, s)
		return
	}
	lb, sb := f32Bits(lo[:d]), f32Bits(s[:d])
	for ch := range d {
		sb[ch] = f16Bits(src[4*ch:])
		lb[ch] = f16Bits(src[4*ch+2:])
	}
	rb := uintptr(packedBytes(d, c.Bits))
	cp0 := unsafe.Pointer(&src[4*d+i0*int(rb)])
	dp0, lp, spp := unsafe.Pointer(&dst[0]), unsafe.Pointer(&lo[0]), unsafe.Pointer(&s[0])
	ud := uintptr(d)
	switch c.Bits {
	case 8:
		for i := range uintptr(i1 - i0) {
			cp, dp := unsafe.Add(cp0, i*rb), unsafe.Add(dp0, 4*i*ud)
			for ch := uintptr(0); ch < ud; ch += 8 {
				v := bytes8(cp, ch).AsInt32x8().ConvertToFloat32()
				st8(v.Mul(ld8(spp, 4*ch)).Add(ld8(lp, 4*ch)), dp, 4*ch)
			}
		}
	case 4:
		sh, mask := archsimd.LoadUint32x8(&shifts4), archsimd.BroadcastUint32x8(15)
		for i := range uintptr(i1 - i0) {
			cp, dp := unsafe.Add(cp0, i*rb), unsafe.Add(dp0, 4*i*ud)
			for ch := uintptr(0); ch < ud; ch += 8 {
				w := archsimd.BroadcastUint32x8(*(*uint32)(unsafe.Add(cp, ch/2))).ShiftRight(sh).And(mask)
				st8(w.AsInt32x8().ConvertToFloat32().Mul(ld8(spp, 4*ch)).Add(ld8(lp, 4*ch)), dp, 4*ch)
			}
		}
	default:
		sh, mask := archsimd.LoadUint32x8(&shifts2), archsimd.BroadcastUint32x8(3)
		for i := range uintptr(i1 - i0) {
			cp, dp := unsafe.Add(cp0, i*rb), unsafe.Add(dp0, 4*i*ud)
			for ch := uintptr(0); ch < ud; ch += 8 {
				w := archsimd.BroadcastUint32x8(uint32(*(*uint16)(unsafe.Add(cp, ch/4)))).ShiftRight(sh).And(mask)
				st8(w.AsInt32x8().ConvertToFloat32().Mul(ld8(spp, 4*ch)).Add(ld8(lp, 4*ch)), dp, 4*ch)
			}
		}
	}
	archsimd.ClearAVXUpperBits()
}

// Fused kernels: decoding and products in one pass over the codes, for the shapes
// they report true for (the rest goes through tiles). Affine rows stay on tiles: a
// fused version (raw codes, scales per group on the scores and in the weights) was
// measured slower than decoding a tile with the vector decoder, because of its
// per-row, per-group scalar work on the weights. Per-row scales are applied to
// the row's g scores (dot) or folded into its g weights (add) instead of to every
// value.

// fusedDotRows is the dotRows kernel of the AVX2 set.
func fusedDotRows(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if d%16 != 0 {
		return false
	}
	switch c.(type) {
	case F32:
		if stride%4 != 0 {
			return false
		}
		multiDotAVX2(scores, ld, q, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
		return true
	case F16:
		dot16Rows(scores, ld, q, g, src, stride, n, d, false)
		return true
	case BF16:
		dot16Rows(scores, ld, q, g, src, stride, n, d, true)
		return true
	case Int8:
	default:
		return false
	}
	sb := f32Bits(scores)
	sp, qp := unsafe.Pointer(&src[0]), unsafe.Pointer(&q[0])
	qs := uintptr(4 * d)
	for i := range n {
		row := unsafe.Add(sp, uintptr(i*stride))
		s := f16Bits((*[2]byte)(row)[:])
		j := 0
		for ; j+4 <= g; j += 4 {
			var t [4]uint32
			dotInt8Row(&t, unsafe.Add(qp, uintptr(j)*qs), qs, unsafe.Add(row, 2), uintptr(d), s)
			sb[j*ld+i], sb[(j+1)*ld+i], sb[(j+2)*ld+i], sb[(j+3)*ld+i] = t[0], t[1], t[2], t[3]
		}
		for ; j < g; j++ {
			var t [4]uint32
			dotInt8Row(&t, unsafe.Add(qp, uintptr(j)*qs), 0, unsafe.Add(row, 2), uintptr(d), s)
			sb[j*ld+i] = t[0]
		}
	}
	return true
}

// dotInt8Row stores to out[k] the bits of s·(q_k · codes) for the 4 queries q_k at
// q + k·qs bytes (qs 0: one query four times) and the d int8 codes at codes (d a
// multiple of 16), s being float32 bits.
//
//go:noinline
func dotInt8Row(out *[4]uint32, q unsafe.Pointer, qs uintptr, codes unsafe.Pointer, d uintptr, s uint32) {
	var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8 // two chains per query (FMA latency)
	q1 := unsafe.Add(q, qs)
	q2 := unsafe.Add(q1, qs)
	q3 := unsafe.Add(q2, qs)
	for c := uintptr(0); c < d; c += 16 {
		v := archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(codes, c))).ExtendToInt16()
		x0 := v.GetLo().ExtendToInt32().ConvertToFloat32()
		x1 := v.GetHi().ExtendToInt32().ConvertToFloat32()
		a0, b0 = x0.MulAdd(ld8(q, 4*c), a0), x1.MulAdd(ld8(q, 4*c+32), b0)
		a1, b1 = x0.MulAdd(ld8(q1, 4*c), a1), x1.MulAdd(ld8(q1, 4*c+32), b1)
		a2, b2 = x0.MulAdd(ld8(q2, 4*c), a2), x1.MulAdd(ld8(q2, 4*c+32), b2)
		a3, b3 = x0.MulAdd(ld8(q3, 4*c), a3), x1.MulAdd(ld8(q3, 4*c+32), b3)
	}
	a0, a1, a2, a3 = a0.Add(b0), a1.Add(b1), a2.Add(b2), a3.Add(b3)
	sum4(a0, a1, a2, a3).Mul(archsimd.BroadcastUint32x4(s).AsFloat32x4()).AsUint32x4().Store(out)
	archsimd.ClearAVXUpperBits()
}

// fusedAddRows is the addRows kernel of the AVX2 set. For Int8 rows it first folds
// each row's scale into the weights (ws[j·m+i] = w[j·ld+i]·s_i in tmp, m rows at a
// time), then streams the codes 16 columns at a time into the accumulators of 4
// queries.
func fusedAddRows(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if d%16 != 0 {
		return false
	}
	switch c.(type) {
	case F32:
		if stride%4 != 0 {
			return false
		}
		multiAxpyAVX2(acc, w, ld, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
		return true
	case F16:
		add16Rows(acc, w, ld, g, src, stride, n, d, false)
		return true
	case BF16:
		add16Rows(acc, w, ld, g, src, stride, n, d, true)
		return true
	case Int8:
		if len(tmp) < g {
			return false
		}
	default:
		return false
	}
	ap := unsafe.Pointer(&acc[0])
	step := len(tmp) / g
	for i0 := 0; i0 < n; i0 += step {
		m := min(step, n-i0)
		ws := tmp[:g*m]
		for i := range m {
			s := getF16(src[(i0+i)*stride:])
			for j := range g {
				ws[j*m+i] = w[j*ld+i0+i] * s
			}
		}
		sp, wp := unsafe.Pointer(&src[i0*stride+2]), unsafe.Pointer(&ws[0])
		for c := 0; c < d; c += 16 {
			j := 0
			for ; j+4 <= g; j += 4 {
				addInt8Cols(unsafe.Add(ap, 4*(j*d+c)), uintptr(4*d), unsafe.Add(wp, 4*j*m), uintptr(4*m), unsafe.Add(sp, c), uintptr(stride), m)
			}
			for ; j < g; j++ {
				addInt8Cols(unsafe.Add(ap, 4*(j*d+c)), 0, unsafe.Add(wp, 4*j*m), 0, unsafe.Add(sp, c), uintptr(stride), m)
			}
		}
	}
	return true
}

// addInt8Cols adds, for the 4 queries k (accumulators at acc + k·as bytes, weights
// at w + k·ws bytes; as = ws = 0: one query, applied once), Σ_i w_k[i]·codes_i over
// 16 columns, row i's codes at codes + i·stride.
//
//go:noinline
func addInt8Cols(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int) {
	one := as == 0
	p1, p2, p3 := unsafe.Add(acc, as), unsafe.Add(acc, 2*as), unsafe.Add(acc, 3*as)
	a00, a01 := ld8(acc, 0), ld8(acc, 32)
	a10, a11 := ld8(p1, 0), ld8(p1, 32)
	a20, a21 := ld8(p2, 0), ld8(p2, 32)
	a30, a31 := ld8(p3, 0), ld8(p3, 32)
	w1, w2, w3 := unsafe.Add(w, ws), unsafe.Add(w, 2*ws), unsafe.Add(w, 3*ws)
	for i := range uintptr(n) {
		v := archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(codes, i*stride))).ExtendToInt16()
		x0 := v.GetLo().ExtendToInt32().ConvertToFloat32()
		x1 := v.GetHi().ExtendToInt32().ConvertToFloat32()
		c := bcast(*(*uint32)(unsafe.Add(w, 4*i)))
		a00, a01 = x0.MulAdd(c, a00), x1.MulAdd(c, a01)
		c = bcast(*(*uint32)(unsafe.Add(w1, 4*i)))
		a10, a11 = x0.MulAdd(c, a10), x1.MulAdd(c, a11)
		c = bcast(*(*uint32)(unsafe.Add(w2, 4*i)))
		a20, a21 = x0.MulAdd(c, a20), x1.MulAdd(c, a21)
		c = bcast(*(*uint32)(unsafe.Add(w3, 4*i)))
		a30, a31 = x0.MulAdd(c, a30), x1.MulAdd(c, a31)
	}
	a00.Store((*[8]float32)(acc))
	a01.Store((*[8]float32)(unsafe.Add(acc, 32)))
	if !one {
		a10.Store((*[8]float32)(p1))
		a11.Store((*[8]float32)(unsafe.Add(p1, 32)))
		a20.Store((*[8]float32)(p2))
		a21.Store((*[8]float32)(unsafe.Add(p2, 32)))
		a30.Store((*[8]float32)(p3))
		a31.Store((*[8]float32)(unsafe.Add(p3, 32)))
	}
	archsimd.ClearAVXUpperBits()
}

// dot16Rows is fusedDotRows for F16 (bf false) and BF16 (bf true) rows.
func dot16Rows(scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, bf bool) {
	sb := f32Bits(scores)
	sp, qp := unsafe.Pointer(&src[0]), unsafe.Pointer(&q[0])
	qs := uintptr(4 * d)
	for i := range n {
		row := unsafe.Add(sp, uintptr(i*stride))
		j := 0
		for ; j+4 <= g; j += 4 {
			var t [4]uint32
			dot16Row(&t, unsafe.Add(qp, uintptr(j)*qs), qs, row, uintptr(d), bf)
			sb[j*ld+i], sb[(j+1)*ld+i], sb[(j+2)*ld+i], sb[(j+3)*ld+i] = t[0], t[1], t[2], t[3]
		}
		for ; j < g; j++ {
			var t [4]uint32
			dot16Row(&t, unsafe.Add(qp, uintptr(j)*qs), 0, row, uintptr(d), bf)
			sb[j*ld+i] = t[0]
		}
	}
}

// dot16Row stores to out[k] the bits of q_k · row for the 4 queries q_k at q + k·qs
// bytes (qs 0: one query four times) and the d binary16 (bf false) or bfloat16 (bf
// true) values at row, d a multiple of 16.
//
//go:noinline
func dot16Row(out *[4]uint32, q unsafe.Pointer, qs uintptr, row unsafe.Pointer, d uintptr, bf bool) {
	var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8 // two chains per query (FMA latency)
	q1 := unsafe.Add(q, qs)
	q2 := unsafe.Add(q1, qs)
	q3 := unsafe.Add(q2, qs)
	em, sg, ex, ei, ie := f16Consts()
	mul := bcast(0x77800000) // 2^112
	for c := uintptr(0); c < d; c += 16 {
		h0 := u8x16(row, 2*c).AsUint16x8().ExtendToUint32()
		h1 := u8x16(row, 2*c+16).AsUint16x8().ExtendToUint32()
		var x0, x1 archsimd.Float32x8
		if bf {
			x0, x1 = h0.ShiftAllLeft(16).AsFloat32x8(), h1.ShiftAllLeft(16).AsFloat32x8()
		} else {
			x0, x1 = f16x8(h0, em, sg, ex, ei, ie, mul), f16x8(h1, em, sg, ex, ei, ie, mul)
		}
		a0, b0 = x0.MulAdd(ld8(q, 4*c), a0), x1.MulAdd(ld8(q, 4*c+32), b0)
		a1, b1 = x0.MulAdd(ld8(q1, 4*c), a1), x1.MulAdd(ld8(q1, 4*c+32), b1)
		a2, b2 = x0.MulAdd(ld8(q2, 4*c), a2), x1.MulAdd(ld8(q2, 4*c+32), b2)
		a3, b3 = x0.MulAdd(ld8(q3, 4*c), a3), x1.MulAdd(ld8(q3, 4*c+32), b3)
	}
	sum4(a0.Add(b0), a1.Add(b1), a2.Add(b2), a3.Add(b3)).AsUint32x4().Store(out)
	archsimd.ClearAVXUpperBits()
}

// add16Rows is fusedAddRows for F16 (bf false) and BF16 (bf true) rows.
func add16Rows(acc, w []float32, ld, g int, src []byte, stride, n, d int, bf bool) {
	sp, wp, ap := unsafe.Pointer(&src[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&acc[0])
	for c := 0; c < d; c += 16 {
		j := 0
		for ; j+4 <= g; j += 4 {
			add16Cols(unsafe.Add(ap, 4*(j*d+c)), uintptr(4*d), unsafe.Add(wp, 4*j*ld), uintptr(4*ld), unsafe.Add(sp, 2*c), uintptr(stride), n, bf)
		}
		for ; j < g; j++ {
			add16Cols(unsafe.Add(ap, 4*(j*d+c)), 0, unsafe.Add(wp, 4*j*ld), 0, unsafe.Add(sp, 2*c), uintptr(stride), n, bf)
		}
	}
}

// add16Cols is addInt8Cols for 16 binary16 (bf false) or bfloat16 (bf true) values
// per row at vals + i·stride.
//
//go:noinline
func add16Cols(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, vals unsafe.Pointer, stride uintptr, n int, bf bool) {
	one := as == 0
	p1, p2, p3 := unsafe.Add(acc, as), unsafe.Add(acc, 2*as), unsafe.Add(acc, 3*as)
	a00, a01 := ld8(acc, 0), ld8(acc, 32)
	a10, a11 := ld8(p1, 0), ld8(p1, 32)
	a20, a21 := ld8(p2, 0), ld8(p2, 32)
	a30, a31 := ld8(p3, 0), ld8(p3, 32)
	w1, w2, w3 := unsafe.Add(w, ws), unsafe.Add(w, 2*ws), unsafe.Add(w, 3*ws)
	em, sg, ex, ei, ie := f16Consts()
	mul := bcast(0x77800000) // 2^112
	for i := range uintptr(n) {
		h0 := u8x16(vals, i*stride).AsUint16x8().ExtendToUint32()
		h1 := u8x16(vals, i*stride+16).AsUint16x8().ExtendToUint32()
		var x0, x1 archsimd.Float32x8
		if bf {
			x0, x1 = h0.ShiftAllLeft(16).AsFloat32x8(), h1.ShiftAllLeft(16).AsFloat32x8()
		} else {
			x0, x1 = f16x8(h0, em, sg, ex, ei, ie, mul), f16x8(h1, em, sg, ex, ei, ie, mul)
		}
		c := bcast(*(*uint32)(unsafe.Add(w, 4*i)))
		a00, a01 = x0.MulAdd(c, a00), x1.MulAdd(c, a01)
		c = bcast(*(*uint32)(unsafe.Add(w1, 4*i)))
		a10, a11 = x0.MulAdd(c, a10), x1.MulAdd(c, a11)
		c = bcast(*(*uint32)(unsafe.Add(w2, 4*i)))
		a20, a21 = x0.MulAdd(c, a20), x1.MulAdd(c, a21)
		c = bcast(*(*uint32)(unsafe.Add(w3, 4*i)))
		a30, a31 = x0.MulAdd(c, a30), x1.MulAdd(c, a31)
	}
	a00.Store((*[8]float32)(acc))
	a01.Store((*[8]float32)(unsafe.Add(acc, 32)))
	if !one {
		a10.Store((*[8]float32)(p1))
		a11.Store((*[8]float32)(unsafe.Add(p1, 32)))
		a20.Store((*[8]float32)(p2))
		a21.Store((*[8]float32)(unsafe.Add(p2, 32)))
		a30.Store((*[8]float32)(p3))
		a31.Store((*[8]float32)(unsafe.Add(p3, 32)))
	}
	archsimd.ClearAVXUpperBits()
}
