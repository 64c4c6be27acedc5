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
		name:      "avx2",
		multiDot:  multiDotAsm,
		multiAxpy: multiAxpyAsm,
		decRows:   decRowsAVX2,
		decBlock:  decBlockAsm,
		encF16:    encodeF16,
		dotRows:   fusedDotRows,
		addRows:   fusedAddRows,
		i8Query:   i8Query,
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

// decRowsAVX2 is decRowsScalar for d a multiple of 8; other shapes run the scalar
// twin. Affine and BF16 rows, and on CPUs with F16C F16, Int8 and FP8 rows, are
// decoded by the assembly of decRowsAsm, which measured faster (32 rows, ns asm vs
// archsimd: F16 d=8 29–39 vs 120–140, d=64 138–206 vs 517–728; Int8 d=8 57–61 vs
// 170–195, d=64 379–455 vs 474–630; BF16 d=8 59–81 vs 91–118, d=64 187–207 vs
// 294–326; FP8 E4M3 d=8 73–105 vs 204–252, d=64 459–493 vs 755–891; E5M2 d=8 70–81
// vs 252–268, d=64 380–506 vs 795–861); the archsimd F16, Int8 and FP8 decoders
// remain for CPUs without F16C. Rows are read and written through unsafe pointers
// (DecodeRows checked every index first); scales are read as float32 bits (f16Bits)
// and broadcast from integer registers.
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
		if haveF16C {
			decRowsAsm(c, dst, src, stride, n, d)
		} else {
			decF16Rows(dp, sp, uintptr(stride), n, uintptr(d))
		}
	case BF16:
		decRowsAsm(c, dst, src, stride, n, d)
	case Int8:
		if haveF16C {
			decRowsAsm(c, dst, src, stride, n, d)
		} else {
			decInt8Rows(dp, sp, uintptr(stride), n, uintptr(d))
		}
	case FP8:
		if haveF16C {
			decRowsAsm(c, dst, src, stride, n, d)
			return
		}
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
		decRowsAsm(c, dst, src, stride, n, d)
	default:
		decRowsScalar(c, dst, src, stride, n, d)
	}
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

// Fused kernels: decoding and products in one pass over the codes, for the shapes
// they report true for (the rest goes through tiles): F32 rows in tiles_amd64.s, BF16
// rows in rows_bf16_amd64.s, F16 and Int8 rows in rows_f16c_amd64.s (Int8 without
// F16C in rows_amd64.go), FP8 rows in rows_fp8_amd64.s (with F16C;
// without, through tiles), Affine rows in fused_lossy_amd64.go. Per-row scales are
// applied to the row's g scores (dot) or folded into its g weights (add) instead of
// to every value.

// fusedDotRows is the dotRows kernel of the AVX2 set: F32 rows of any d read in
// place by the tile kernel; for d a multiple of 16, BF16 rows (rows_bf16_amd64.s),
// F16 and Int8 rows on CPUs with F16C (rows_f16c_amd64.s; Int8 without F16C:
// rows_amd64.go), FP8 rows (rows_fp8_amd64.s) and Affine rows
// (fused_lossy_amd64.go).
func fusedDotRows(c RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if _, ok := c.(F32); ok && stride%4 == 0 {
		multiDotAsm(scores, ld, q, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
		return true
	}
	if d%16 != 0 {
		return false
	}
	switch c := c.(type) {
	case F32:
		return false
	case F16:
		if !haveF16C {
			return false
		}
		dotRowsFused(dotF16Q4, dotF16R4, scores, ld, q, g, src, stride, n, d)
	case BF16:
		dotRowsFused(dotBF16Q4asm, dotBF16R4asm, scores, ld, q, g, src, stride, n, d)
	case Int8:
		if haveF16C {
			dotRowsFused(dotInt8Q4F16C, dotInt8R4F16C, scores, ld, q, g, src, stride, n, d)
		} else {
			dotRowsFused(dotInt8Q4, dotInt8R4, scores, ld, q, g, src, stride, n, d)
		}
	case FP8:
		// Without F16C, FP8 rows go through tiles.
		return haveF16C && dotFP8Rows(c, scores, ld, q, g, src, stride, n, d)
	default:
		return fusedDotRowsLossy(c, scores, ld, q, g, src, stride, n, d, tmp)
	}
	return true
}

// fusedAddRows is the addRows kernel of the AVX2 set, for d a multiple of 16 (see
// fusedDotRows). For Int8 rows without F16C it first folds each row's scale into the
// weights (ws[j·m+i] = w[j·ld+i]·s_i in tmp, m rows at a time), then streams the
// codes; with F16C, addInt8RowsF16C.
func fusedAddRows(c RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
	if _, ok := c.(F32); ok && stride%4 == 0 {
		multiAxpyAsm(acc, w, ld, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
		return true
	}
	if d%16 != 0 {
		return false
	}
	switch c := c.(type) {
	case F32:
		return false
	case F16:
		if !haveF16C {
			return false
		}
		addRowsFused(addF16Q4F16C, addF16Q1x64, addF16Q1x16, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, n, d, 2)
	case BF16:
		addRowsFused(addBF16Q4asm, addBF16Q1x64asm, addBF16Q1x16asm, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, n, d, 2)
	case Int8:
		if haveF16C {
			return addInt8RowsF16C(acc, w, ld, g, src, stride, n, d, tmp)
		}
		if len(tmp) < g {
			return false
		}
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
			addRowsFused(addInt8Q4asm, addInt8Q1x64, addInt8Q1x16, acc, unsafe.Pointer(&ws[0]), uintptr(4*m), g, unsafe.Pointer(&src[i0*stride+2]), stride, m, d, 1)
		}
	case FP8:
		return haveF16C && addFP8Rows(c, acc, w, ld, g, src, stride, n, d, tmp)
	default:
		return fusedAddRowsLossy(c, acc, w, ld, g, src, stride, n, d, tmp)
	}
	return true
}
