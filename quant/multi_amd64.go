//go:build amd64 && goexperiment.simd

package quant

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// The AVX2+FMA batched kernels. Each computes what its scalar twin in multi.go
// computes: decoders bit for bit (NaN payloads aside), multiDot and multiAxpy up to
// the order of their float sums. MultiDot, MultiAxpy, the Channel block decoder and
// the Affine row decoder are the assembly kernels of tiles_amd64.go, which measured
// faster than archsimd versions of theirs. Slices are loaded through array pointers so bounds
// checks fold away; tails shorter than a vector run the scalar twin. Every kernel
// clears the upper halves of the vector registers before returning (scalar float code
// is legacy SSE in Go and stalls while they are dirty), and scalar floats that feed
// vectors are broadcast from their integer bits for the same reason.

func detectSIMD() *kernelSet {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		return nil
	}
	return &kernelSet{
		name:        "avx2",
		multiDot:    multiDotAsm,
		multiAxpy:   multiAxpyAsm,
		decRows:     decRowsAsm,
		decBlock:    decBlockAsm,
		encF16:      encodeF16,
		encRange:    groupRangeAsm,
		encPack:     packCodesAsm,
		dotRows:     fusedDotRows,
		addRows:     fusedAddRows,
		scoredQuery: scoredQueryAsm,
		addRounding: addRoundingAsm,
	}
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

// decRowsNoF16C decodes, on CPUs without F16C, F16, Int8 and FP8 rows of d a
// multiple of 8 with the archsimd decoders below and reports true; other codecs and
// shapes it leaves to decRowsAsm. On CPUs with F16C the assembly of decRowsAsm
// measured faster (32 rows, ns asm vs archsimd: F16 d=8 29–39 vs 120–140, d=64
// 138–206 vs 517–728; Int8 d=8 57–61 vs 170–195, d=64 379–455 vs 474–630; FP8 E4M3
// d=8 73–105 vs 204–252, d=64 459–493 vs 755–891; E5M2 d=8 70–81 vs 252–268, d=64
// 380–506 vs 795–861; BF16, which needs no F16C, d=8 59–81 vs 91–118, d=64 187–207
// vs 294–326). Rows are read and written through unsafe pointers (DecodeRows checked
// every index first); scales are read as float32 bits (f16Bits) and broadcast from
// integer registers.
func decRowsNoF16C(c RowCodec, dst []float32, src []byte, stride, n, d int) bool {
	if d%8 != 0 {
		return false
	}
	sp, dp := unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0])
	switch c := c.(type) {
	case F16:
		decF16Rows(dp, sp, uintptr(stride), n, uintptr(d))
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
	default:
		return false
	}
	return true
}

// The row decoders below take dst (n rows of d float32s, contiguous), src (row i at
// i·stride bytes) and d a multiple of 8; each ends with the vector
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
