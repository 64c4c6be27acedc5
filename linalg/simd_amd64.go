//go:build amd64 && goexperiment.simd

package linalg

import (
	"encoding/binary"
	"simd/archsimd"
	"unsafe"

	"kvq/internal/cpufeat"
)

// The AVX2+FMA kernels. Each computes what its scalar twin in kernels.go computes (the
// twin is the reference): integer parts exactly, float sums in a different order.
// Slices are resliced and loaded through array pointers so bounds checks fold away;
// tails shorter than a vector run the scalar loop.

func detectSIMD() *kernelSet {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		return nil
	}
	k := &kernelSet{
		name:        "avx2",
		dotF32:      dotF32FMA,
		dotF32T:     dotF32TAsm,
		dotF16:      dotF16AVX2,
		widenF16:    widenF16AVX2,
		dotQ8:       dotQ8AVX2,
		dotQ8Rows:   dotQ8RowsAVX2,
		dotQ4:       dotQ4AVX2,
		dotQ4Rows:   dotQ4RowsAVX2,
		dotQ4Rows2:  rows2(dotQ4RowsAVX2),
		dotQ5:       dotQ5Scalar,
		dotQ5Rows:   dotQ5RowsScalar,
		dotQ5Rows2:  rows2(dotQ5RowsScalar),
		dotQ4K:      dotQ4KAVX2,
		dotQ4KRows:  dotQ4KRowsAVX2,
		dotQ4KRows2: rows2K(dotQ4KRowsAVX2),
		dotQ6K:      dotQ6KAVX2,
		dotQ6KRows:  dotQ6KRowsAVX2,
		dotQ6KRows2: rows2(dotQ6KRowsAVX2),
		dotQ8x4N:    dotQ8x4NAVX2,
		axpy:        axpyAVX2,
		siluMul:     siluMulAsm,
		quantQ8:     quantQ8Asm,
	}
	setTileKernels(k)
	if cpufeat.F16C {
		plain := *k
		plain.name = "avx2-nof16c"
		alternateKernels = append(alternateKernels, &plain)
		k.dotF16, k.widenF16 = dotF16F16C, widenF16F16C
		k.dotQ8, k.dotQ8Rows, k.dotQ8Prefetches = dotQ8F16C, dotQ8RowsF16C, true
		k.dotQ8x4N = dotQ8x4NF16C
		// The assembly Q4_0, Q4_K and Q6_K kernels are faster than dotQ4AVX2, dotQ4KAVX2
		// and dotQ6KAVX2, which the set without F16C keeps.
		k.dotQ4, k.dotQ4Rows, k.dotQ4Rows2 = dotQ4Asm, dotQ4RowsAsm, dotQ4Rows2Asm
		k.dotQ5, k.dotQ5Rows, k.dotQ5Rows2 = dotQ5Asm, dotQ5RowsAsm, dotQ5Rows2Asm
		k.dotQ4K, k.dotQ4KRows, k.dotQ4KRows2 = dotQ4KAsm, dotQ4KRowsAsm, dotQ4KRows2Asm
		k.dotQ6K, k.dotQ6KRows, k.dotQ6KRows2 = dotQ6KAsm, dotQ6KRowsAsm, dotQ6KRows2Asm
	}
	return k
}

// hsum returns the sum of the 8 lanes of v. It clears the upper halves of the vector
// registers (VZEROUPPER) before the scalar adds: legacy-SSE scalar float instructions,
// which Go emits for float32 arithmetic, stall while those halves are dirty. Every kernel
// ends this way, or with an explicit clear, before any scalar float code.
func hsum(v archsimd.Float32x8) float32 {
	var a [4]float32
	v.GetLo().Add(v.GetHi()).Store(&a)
	archsimd.ClearAVXUpperBits()
	return (a[0] + a[1]) + (a[2] + a[3])
}

// axpyAVX2 is axpyScalar with 8-lane FMAs.
func axpyAVX2(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	av := archsimd.BroadcastFloat32x8(a)
	for len(dst) >= 8 && len(x) >= 8 {
		d := (*[8]float32)(dst[0:8])
		av.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(x[0:8])), archsimd.LoadFloat32x8(d)).Store(d)
		dst, x = dst[8:], x[8:]
	}
	archsimd.ClearAVXUpperBits()
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

// f16x8 widens 8 little-endian binary16 values at p to float32 exactly: the exponent and
// mantissa shifted into float32 position and scaled by 2^112 (which also makes subnormals
// right), the sign put back, and exponent 31 (infinity, NaN) mapped to 255.
func f16x8(p *[16]byte, expMant, sign, exp, expInc, infExp archsimd.Uint32x8, mul archsimd.Float32x8) archsimd.Float32x8 {
	h := archsimd.LoadUint16x8((*[8]uint16)(unsafe.Pointer(p))).ExtendToUint32()
	em := h.And(expMant).ShiftAllLeft(13).AsFloat32x8().Mul(mul)
	sg := h.And(sign).ShiftAllLeft(16)
	// exponent 31 carries into bit 15; moved to bit 31 and smeared over the exponent field.
	inf := h.And(exp).Add(expInc).And(sign).ShiftAllLeft(16).AsInt32x8().ShiftAllRight(8).
		AsUint32x8().And(infExp)
	return em.AsUint32x8().Or(sg).Or(inf).AsFloat32x8()
}

// f16Consts returns the constants of f16x8 (separate values: a struct of vectors is copied
// with legacy-SSE moves, which stall).
func f16Consts() (expMant, sign, exp, expInc, infExp archsimd.Uint32x8, mul archsimd.Float32x8) {
	return archsimd.BroadcastUint32x8(0x7fff), archsimd.BroadcastUint32x8(0x8000),
		archsimd.BroadcastUint32x8(0x7c00), archsimd.BroadcastUint32x8(0x0400),
		archsimd.BroadcastUint32x8(0x7f800000), archsimd.BroadcastFloat32x8(0x1p112)
}

// dotF16AVX2 is dotF16Scalar with the binary16 values widened 8 at a time in registers.
func dotF16AVX2(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	em, sg, ex, ei, ie, mu := f16Consts()
	var s0, s1 archsimd.Float32x8
	for len(x) >= 16 && len(w) >= 32 {
		s0 = f16x8((*[16]byte)(w[0:16]), em, sg, ex, ei, ie, mu).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(x[0:8])), s0)
		s1 = f16x8((*[16]byte)(w[16:32]), em, sg, ex, ei, ie, mu).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(x[8:16])), s1)
		w, x = w[32:], x[16:]
	}
	s := hsum(s0.Add(s1))
	w = w[:2*len(x)]
	for i := range x {
		s += f16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8] * x[i]
	}
	return s
}

// widenF16AVX2 is widenF16Scalar with 8 values widened at a time in registers.
func widenF16AVX2(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	em, sg, ex, ei, ie, mu := f16Consts()
	for len(dst) >= 8 && len(src) >= 16 {
		f16x8((*[16]byte)(src[:16]), em, sg, ex, ei, ie, mu).Store((*[8]float32)(dst[:8]))
		dst, src = dst[8:], src[16:]
	}
	archsimd.ClearAVXUpperBits()
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = f16Table[uint16(src[2*i])|uint16(src[2*i+1])<<8]
	}
}

// f16Bits views f16Table as float32 bit patterns, for loads that stay in integer
// registers (a view, not a copy: a second table would be 256 KiB more memory).
var f16Bits = (*[1 << 16]uint32)(unsafe.Pointer(&f16Table))

// scale returns d_w·d_x broadcast to 8 lanes, from the binary16 weight scale at h and the
// float32 activation scale bits at x, computed in vector registers only: a scalar SSE
// float operation between AVX instructions stalls on the upper register halves.
func scale(h []byte, x []uint32) archsimd.Float32x8 {
	dw := archsimd.BroadcastUint32x8(f16Bits[uint16(h[0])|uint16(h[1])<<8]).AsFloat32x8()
	return dw.Mul(archsimd.BroadcastUint32x8(x[0]).AsFloat32x8())
}

// int8x32 loads 32 bytes at p as signed codes.
func int8x32(p *[32]byte) archsimd.Int8x32 {
	return archsimd.LoadInt8x32((*[32]int8)(unsafe.Pointer(p)))
}

// dotCodes returns the 8 partial int32 sums of Σ w[j]·x[j] over 32 codes as float32 lanes:
// |w| (unsigned) times x with w's sign (VPMADDUBSW; |w| ≤ 128 and |x| ≤ 127 cannot
// saturate), then pairs of int16 summed to int32 (VPMADDWD).
func dotCodes(w, x archsimd.Int8x32, ones archsimd.Int16x16) archsimd.Float32x8 {
	return w.Abs().AsUint8x32().DotProductPairsSaturated(x.CopySign(w)).DotProductPairs(ones).ConvertToFloat32()
}

// scale4x2 returns d_w(b)·d_x(b) for the 4 blocks (stride bytes apart: 34 for Q8_0, 18
// for Q4_0) starting at w, with activation scales xd, in lanes b and 4+b. The binary16
// weight scales are looked up as bit patterns and inserted, so no scalar float
// instruction runs between the vector ones.
func scale4x2(w []byte, stride int, xd *[4]float32) archsimd.Float32x8 {
	var u archsimd.Uint32x4
	u = u.SetElem(0, f16Bits[uint16(w[0])|uint16(w[1])<<8])
	u = u.SetElem(1, f16Bits[uint16(w[stride])|uint16(w[stride+1])<<8])
	u = u.SetElem(2, f16Bits[uint16(w[2*stride])|uint16(w[2*stride+1])<<8])
	u = u.SetElem(3, f16Bits[uint16(w[3*stride])|uint16(w[3*stride+1])<<8])
	s := u.AsFloat32x4().Mul(archsimd.LoadFloat32x4(xd))
	var z archsimd.Float32x8
	return z.SetLo(s).SetHi(s)
}

// codes32 returns the 8 int32 partial sums of the 32-code dot of w and x.
func codes32(w, x archsimd.Int8x32, ones archsimd.Int16x16) archsimd.Int32x8 {
	return w.Abs().AsUint8x32().DotProductPairsSaturated(x.CopySign(w)).DotProductPairs(ones)
}

// dotQ8AVX2 is dotQ8Scalar: integer dots of 4 blocks in registers, their 8-lane partial
// sums folded by 2 levels of VPHADDD into one vector (lane b and 4+b: block b), then one
// conversion and one FMA by the 4 scale products.
func dotQ8AVX2(w []byte, xq []int8, xd []float32) float32 {
	nb := len(xd)
	w = w[:nb*q8BlockBytes]
	xq = xq[:nb*blockElems]
	ones := archsimd.BroadcastInt16x16(1)
	var s0 archsimd.Float32x8
	i := 0
	for ; i+4 <= nb; i += 4 {
		blk := (*[4 * q8BlockBytes]byte)(w[i*q8BlockBytes : (i+4)*q8BlockBytes])
		xb := (*[4 * blockElems]int8)(xq[i*blockElems : (i+4)*blockElems])
		sc := scale4x2(blk[:], q8BlockBytes, (*[4]float32)(xd[i:i+4]))
		p0 := codes32(int8x32((*[32]byte)(blk[2:34])), archsimd.LoadInt8x32((*[32]int8)(xb[0:32])), ones)
		p1 := codes32(int8x32((*[32]byte)(blk[36:68])), archsimd.LoadInt8x32((*[32]int8)(xb[32:64])), ones)
		p2 := codes32(int8x32((*[32]byte)(blk[70:102])), archsimd.LoadInt8x32((*[32]int8)(xb[64:96])), ones)
		p3 := codes32(int8x32((*[32]byte)(blk[104:136])), archsimd.LoadInt8x32((*[32]int8)(xb[96:128])), ones)
		h := p0.AddPairsGrouped(p1).AddPairsGrouped(p2.AddPairsGrouped(p3))
		s0 = h.ConvertToFloat32().MulAdd(sc, s0)
	}
	xdBits := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(xd))), len(xd))
	for ; i < nb; i++ {
		blk := (*[q8BlockBytes]byte)(w[i*q8BlockBytes : (i+1)*q8BlockBytes])
		p := dotCodes(int8x32((*[32]byte)(blk[2:34])), archsimd.LoadInt8x32((*[32]int8)(xq[i*blockElems:(i+1)*blockElems])), ones)
		s0 = p.MulAdd(scale(blk[0:2], xdBits[i:i+1]), s0)
	}
	return hsum(s0)
}

// dotQ8RowsAVX2 is dotQ8RowsScalar: dotQ8AVX2 of each row.
func dotQ8RowsAVX2(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)*q8BlockBytes, xq, xd, dotQ8AVX2)
}

// dotQ8x4NAVX2 is dotQ8x4NScalar: dotQ8x4AVX2 per group.
func dotQ8x4NAVX2(out []float32, rows int, w []byte, xi []int8, xs []float32, groups int) {
	dot4xN(dotQ8x4AVX2, out, rows, w, xi, xs, groups)
}

// step4 returns acc + the block of weight codes wv (binary16 scale bytes h0, h1) dotted
// with the 4 tokens' codes xb (interleaved), as lanes t and 4+t for token t, scaled by
// the interleaved activation scales xs.
func step4(wv archsimd.Int8x32, xb *[128]int8, h0, h1 byte, xs *[8]float32, ones archsimd.Int16x16, acc archsimd.Float32x8) archsimd.Float32x8 {
	aw := wv.Abs().AsUint8x32()
	p0 := aw.DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[0:32])).CopySign(wv)).DotProductPairs(ones)
	p1 := aw.DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[32:64])).CopySign(wv)).DotProductPairs(ones)
	p2 := aw.DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[64:96])).CopySign(wv)).DotProductPairs(ones)
	p3 := aw.DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[96:128])).CopySign(wv)).DotProductPairs(ones)
	h := p0.AddPairsGrouped(p1).AddPairsGrouped(p2.AddPairsGrouped(p3))
	dw := archsimd.BroadcastUint32x8(f16Bits[uint16(h0)|uint16(h1)<<8]).AsFloat32x8()
	return h.ConvertToFloat32().MulAdd(dw.Mul(archsimd.LoadFloat32x8(xs)), acc)
}

// sumHalves stores lane t + lane 4+t of a in out[t].
func sumHalves(out *[4]float32, a archsimd.Float32x8) {
	var v [8]float32
	a.Store(&v)
	archsimd.ClearAVXUpperBits()
	for t := range out {
		out[t] = v[t] + v[4+t]
	}
}

// dotQ8x4AVX2 is dotQ8x4Scalar: each weight block is loaded and its sign split off once
// for the 4 tokens; the 4 tokens' 8-lane partial sums are folded by VPHADDD into one
// vector (lanes t and 4+t: token t), converted once and scaled by one FMA with the
// interleaved activation scales times the weight scale.
func dotQ8x4AVX2(out *[4]float32, w []byte, xi []int8, xs []float32) {
	nb := len(xs) / 8
	w = w[:nb*q8BlockBytes]
	xi = xi[:nb*4*blockElems]
	ones := archsimd.BroadcastInt16x16(1)
	var acc0, acc1 archsimd.Float32x8
	// Two blocks per step.
	for len(xs) >= 16 && len(w) >= 2*q8BlockBytes && len(xi) >= 8*blockElems {
		blk := (*[2 * q8BlockBytes]byte)(w[:2*q8BlockBytes])
		xb := (*[8 * blockElems]int8)(xi[:8*blockElems])
		sb := (*[16]float32)(xs[:16])
		acc0 = step4(int8x32((*[32]byte)(blk[2:34])), (*[128]int8)(xb[0:128]), blk[0], blk[1], (*[8]float32)(sb[0:8]), ones, acc0)
		acc1 = step4(int8x32((*[32]byte)(blk[36:68])), (*[128]int8)(xb[128:256]), blk[34], blk[34+1], (*[8]float32)(sb[8:16]), ones, acc1)
		w, xi, xs = w[2*q8BlockBytes:], xi[8*blockElems:], xs[16:]
	}
	if len(xs) >= 8 && len(w) >= q8BlockBytes && len(xi) >= 4*blockElems {
		blk := (*[q8BlockBytes]byte)(w[:q8BlockBytes])
		acc0 = step4(int8x32((*[32]byte)(blk[2:34])), (*[128]int8)(xi[:128]), blk[0], blk[1], (*[8]float32)(xs[:8]), ones, acc0)
	}
	sumHalves(out, acc0.Add(acc1))
}

// q4consts are the constants of q4codes, built once per kernel call.
type q4consts struct {
	shifts archsimd.Uint32x8 // 0 in the low 128 bits, 4 in the high
	mask   archsimd.Uint8x32
	eight  archsimd.Int8x32
}

var q4shifts = [8]uint32{0, 0, 0, 0, 4, 4, 4, 4}

func newQ4consts() q4consts {
	return q4consts{
		shifts: archsimd.LoadUint32x8(&q4shifts),
		mask:   archsimd.BroadcastUint8x32(0x0f),
		eight:  archsimd.BroadcastInt8x32(8),
	}
}

// q4codes unpacks the 16 bytes of a Q4_0 block at p into its 32 signed codes (value-8):
// low nibbles are values 0..15, high nibbles values 16..31. The 16 bytes go to both
// halves of a vector, the high half is shifted right by 4 (VPSRLVD with per-lane counts;
// Uint16x8.ShiftAllRight moves its count with a legacy-SSE MOVQ, which stalls), and both
// are masked to 4 bits.
func q4codes(p *[16]byte, c *q4consts) archsimd.Int8x32 {
	v := archsimd.LoadUint8x16(p)
	var z archsimd.Uint8x32
	return z.SetLo(v).SetHi(v).AsUint32x8().ShiftRight(c.shifts).AsUint8x32().And(c.mask).AsInt8x32().Sub(c.eight)
}

// dotQ4AVX2 is dotQ4Scalar: the nibbles unpacked in registers, then as dotQ8AVX2.
func dotQ4AVX2(w []byte, xq []int8, xd []float32) float32 {
	nb := len(xd)
	w = w[:nb*q4BlockBytes]
	xq = xq[:nb*blockElems]
	ones := archsimd.BroadcastInt16x16(1)
	q4c := newQ4consts()
	var s0 archsimd.Float32x8
	i := 0
	for ; i+4 <= nb; i += 4 {
		blk := (*[4 * q4BlockBytes]byte)(w[i*q4BlockBytes : (i+4)*q4BlockBytes])
		xb := (*[4 * blockElems]int8)(xq[i*blockElems : (i+4)*blockElems])
		sc := scale4x2(blk[:], q4BlockBytes, (*[4]float32)(xd[i:i+4]))
		p0 := codes32(q4codes((*[16]byte)(blk[2:18]), &q4c), archsimd.LoadInt8x32((*[32]int8)(xb[0:32])), ones)
		p1 := codes32(q4codes((*[16]byte)(blk[20:36]), &q4c), archsimd.LoadInt8x32((*[32]int8)(xb[32:64])), ones)
		p2 := codes32(q4codes((*[16]byte)(blk[38:54]), &q4c), archsimd.LoadInt8x32((*[32]int8)(xb[64:96])), ones)
		p3 := codes32(q4codes((*[16]byte)(blk[56:72]), &q4c), archsimd.LoadInt8x32((*[32]int8)(xb[96:128])), ones)
		h := p0.AddPairsGrouped(p1).AddPairsGrouped(p2.AddPairsGrouped(p3))
		s0 = h.ConvertToFloat32().MulAdd(sc, s0)
	}
	xdBits := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(xd))), len(xd))
	for ; i < nb; i++ {
		blk := (*[q4BlockBytes]byte)(w[i*q4BlockBytes : (i+1)*q4BlockBytes])
		p := dotCodes(q4codes((*[16]byte)(blk[2:18]), &q4c), archsimd.LoadInt8x32((*[32]int8)(xq[i*blockElems:(i+1)*blockElems])), ones)
		s0 = p.MulAdd(scale(blk[0:2], xdBits[i:i+1]), s0)
	}
	return hsum(s0)
}

// Q4_K scale unpacking masks (see q4KScaleWords).
const q4KMask1, q4KMask2, q4KMask3 = 0x3f3f3f3f, 0x0f0f0f0f, 0x03030303

// q4KScaleWords returns a Q4_K super-block's 8 six-bit scales (scw) and minimums (mw), one
// per byte, computed on the 32-bit words u0, u1, u2 of its 12 scale bytes in integer
// registers (the layout is in kernels.go). Small enough to inline into the kernel loop.
func q4KScaleWords(u0, u1, u2 uint32) (scw, mw uint64) {
	return uint64(u0&q4KMask1) | uint64(u2&q4KMask2|(u0>>6&q4KMask3)<<4)<<32,
		uint64(u1&q4KMask1) | uint64(u2>>4&q4KMask2|(u1>>6&q4KMask3)<<4)<<32
}

// dotQ4KAVX2 is dotQ4KScalar: per super-block, the 8 sub-block integer dots (unsigned
// 4-bit codes straight into VPMADDUBSW, pairs by VPMADDWD) folded by VPHADDD and
// VPERM2I128 into one vector (lane i: sub-block i), then scaled as a whole by the sub-block
// scales, minimums, activation scales and code sums, all 8 at once.
func dotQ4KAVX2(w []byte, xq []int8, xd []float32, xsum []int32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q4KBlockBytes]
	xq = xq[:nsb*256]
	xd = xd[:nsb*8]
	xsum = xsum[:nsb*8]
	ones := archsimd.BroadcastInt16x16(1)
	mask := archsimd.BroadcastUint8x32(0x0f)
	fours := archsimd.BroadcastUint32x8(4)
	var acc archsimd.Float32x8
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q4KBlockBytes]byte)(w[sb*q4KBlockBytes : (sb+1)*q4KBlockBytes])
		xb := (*[256]int8)(xq[sb*256 : (sb+1)*256])
		v := archsimd.LoadUint8x32((*[32]uint8)(blk[16:48]))
		p0 := v.And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[0:32]))).DotProductPairs(ones)
		p1 := v.AsUint32x8().ShiftRight(fours).AsUint8x32().And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[32:64]))).DotProductPairs(ones)
		v = archsimd.LoadUint8x32((*[32]uint8)(blk[48:80]))
		p2 := v.And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[64:96]))).DotProductPairs(ones)
		p3 := v.AsUint32x8().ShiftRight(fours).AsUint8x32().And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[96:128]))).DotProductPairs(ones)
		v = archsimd.LoadUint8x32((*[32]uint8)(blk[80:112]))
		p4 := v.And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[128:160]))).DotProductPairs(ones)
		p5 := v.AsUint32x8().ShiftRight(fours).AsUint8x32().And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[160:192]))).DotProductPairs(ones)
		v = archsimd.LoadUint8x32((*[32]uint8)(blk[112:144]))
		p6 := v.And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[192:224]))).DotProductPairs(ones)
		p7 := v.AsUint32x8().ShiftRight(fours).AsUint8x32().And(mask).DotProductPairsSaturated(archsimd.LoadInt8x32((*[32]int8)(xb[224:256]))).DotProductPairs(ones)
		lo := p0.AddPairsGrouped(p1).AddPairsGrouped(p2.AddPairsGrouped(p3)) // [0..3 | 0..3]
		hi := p4.AddPairsGrouped(p5).AddPairsGrouped(p6.AddPairsGrouped(p7)) // [4..7 | 4..7]
		dots := lo.Select128FromPair(0, 2, hi).Add(lo.Select128FromPair(1, 3, hi)).ConvertToFloat32()

		scw, mw := q4KScaleWords(binary.LittleEndian.Uint32(blk[4:8]), binary.LittleEndian.Uint32(blk[8:12]),
			binary.LittleEndian.Uint32(blk[12:16]))
		var u archsimd.Uint64x2
		sc := u.SetElem(0, scw).AsUint8x16().ExtendLo8ToUint32().AsInt32x8().ConvertToFloat32()
		mn := u.SetElem(0, mw).AsUint8x16().ExtendLo8ToUint32().AsInt32x8().ConvertToFloat32()
		dx := archsimd.LoadFloat32x8((*[8]float32)(xd[8*sb : 8*sb+8]))
		bs := archsimd.LoadInt32x8((*[8]int32)(xsum[8*sb : 8*sb+8])).ConvertToFloat32()
		d := archsimd.BroadcastUint32x8(f16Bits[uint16(blk[0])|uint16(blk[1])<<8]).AsFloat32x8()
		dmin := archsimd.BroadcastUint32x8(f16Bits[uint16(blk[2])|uint16(blk[3])<<8]).AsFloat32x8()
		acc = dots.Mul(sc).Mul(dx).MulAdd(d, acc)
		acc = acc.Sub(mn.Mul(dx).Mul(bs).Mul(dmin))
	}
	return hsum(acc)
}

var q6kPick = [4][8]uint32{{0, 0, 0, 0, 1, 1, 1, 1}, {2, 2, 2, 2, 3, 3, 3, 3}, {4, 4, 4, 4, 5, 5, 5, 5}, {6, 6, 6, 6, 7, 7, 7, 7}}

// q6kBlock returns the contribution of one activation block: the 32 codes c (0..63) times
// the codes xv, minus 32·xv, as 8 int32 partial sums (lanes 0-3: first 16 values, 4-7: last
// 16), converted, times the block's scale pair sc (lanes as the sums) and dx, added to acc.
func q6kBlock(c archsimd.Uint8x32, xv archsimd.Int8x32, sc, dx archsimd.Float32x8, off archsimd.Uint8x32, ones archsimd.Int16x16, acc archsimd.Float32x8) archsimd.Float32x8 {
	p := c.DotProductPairsSaturated(xv).Sub(off.DotProductPairsSaturated(xv)).DotProductPairs(ones).ConvertToFloat32()
	return p.Mul(sc).MulAdd(dx, acc)
}

// dotQ4KRowsAVX2 is dotQ4KRowsScalar: dotQ4KAVX2 of each row.
func dotQ4KRowsAVX2(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	rb := len(xd) / 8 * q4KBlockBytes
	for r := range out {
		out[r] = dotQ4KAVX2(w[r*rowBytes:r*rowBytes+rb], xq, xd, xsum)
	}
}

// dotQ4RowsAVX2 is dotQ4RowsScalar: dotQ4AVX2 of each row.
func dotQ4RowsAVX2(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)*q4BlockBytes, xq, xd, dotQ4AVX2)
}

// dotQ6KRowsAVX2 is dotQ6KRowsScalar: dotQ6KAVX2 of each row.
func dotQ6KRowsAVX2(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)/8*q6KBlockBytes, xq, xd, dotQ6KAVX2)
}

// dotQ6KAVX2 is dotQ6KScalar: per half super-block, the 4 blocks of 32 six-bit codes are
// assembled from the low and high bit planes with masks and 32-bit shifts (bits crossing
// into a neighbouring byte are masked off), multiplied unsigned in VPMADDUBSW with the
// offset 32 subtracted through a second VPMADDUBSW (|code−32|·|x| ≤ 32·127 cannot
// saturate), and scaled per 16 values by the int8 sub-block scales, widened once per
// super-block and picked by VPERMD.
func dotQ6KAVX2(w []byte, xq []int8, xd []float32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q6KBlockBytes]
	xq = xq[:nsb*256]
	xd = xd[:nsb*8]
	xdBits := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(xd))), len(xd))
	// Constants as separate variables: a struct or array of vectors is copied with
	// legacy-SSE moves, which stall.
	lo4, hi2 := archsimd.BroadcastUint8x32(0x0f), archsimd.BroadcastUint8x32(0x30)
	sh2, sh4 := archsimd.BroadcastUint32x8(2), archsimd.BroadcastUint32x8(4)
	ones, off := archsimd.BroadcastInt16x16(1), archsimd.BroadcastUint8x32(32)
	var acc archsimd.Float32x8
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q6KBlockBytes]byte)(w[sb*q6KBlockBytes : (sb+1)*q6KBlockBytes])
		xb := (*[256]int8)(xq[sb*256 : (sb+1)*256])
		d := archsimd.BroadcastUint32x8(f16Bits[uint16(blk[208])|uint16(blk[209])<<8]).AsFloat32x8()
		// The 16 scales widened to two 256-bit vectors up front: a 128-bit vector live
		// across the loop would be spilled with legacy-SSE moves, which stall.
		scales := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&blk[192])))
		scLo := scales.ExtendLo8ToInt32().ConvertToFloat32().Mul(d)
		scHi := scales.AsUint64x2().SetElem(0, scales.AsUint64x2().GetElem(1)).AsInt8x16().ExtendLo8ToInt32().ConvertToFloat32().Mul(d)
		for h := 0; h < 2; h++ {
			sc8 := scLo
			if h == 1 {
				sc8 = scHi
			}
			L0 := archsimd.LoadUint8x32((*[32]uint8)(blk[64*h : 64*h+32]))
			L1 := archsimd.LoadUint8x32((*[32]uint8)(blk[64*h+32 : 64*h+64]))
			H := archsimd.LoadUint8x32((*[32]uint8)(blk[128+32*h : 160+32*h]))
			c0 := L0.And(lo4).Or(H.AsUint32x8().ShiftLeft(sh4).AsUint8x32().And(hi2))
			c1 := L1.And(lo4).Or(H.AsUint32x8().ShiftLeft(sh2).AsUint8x32().And(hi2))
			c2 := L0.AsUint32x8().ShiftRight(sh4).AsUint8x32().And(lo4).Or(H.And(hi2))
			c3 := L1.AsUint32x8().ShiftRight(sh4).AsUint8x32().And(lo4).Or(H.AsUint32x8().ShiftRight(sh2).AsUint8x32().And(hi2))
			b := 8*sb + 4*h
			x := xb[128*h : 128*h+128]
			acc = q6kBlock(c0, archsimd.LoadInt8x32((*[32]int8)(x[0:32])), sc8.Permute(archsimd.LoadUint32x8(&q6kPick[0])), archsimd.BroadcastUint32x8(xdBits[b+0]).AsFloat32x8(), off, ones, acc)
			acc = q6kBlock(c1, archsimd.LoadInt8x32((*[32]int8)(x[32:64])), sc8.Permute(archsimd.LoadUint32x8(&q6kPick[1])), archsimd.BroadcastUint32x8(xdBits[b+1]).AsFloat32x8(), off, ones, acc)
			acc = q6kBlock(c2, archsimd.LoadInt8x32((*[32]int8)(x[64:96])), sc8.Permute(archsimd.LoadUint32x8(&q6kPick[2])), archsimd.BroadcastUint32x8(xdBits[b+2]).AsFloat32x8(), off, ones, acc)
			acc = q6kBlock(c3, archsimd.LoadInt8x32((*[32]int8)(x[96:128])), sc8.Permute(archsimd.LoadUint32x8(&q6kPick[3])), archsimd.BroadcastUint32x8(xdBits[b+3]).AsFloat32x8(), off, ones, acc)
		}
	}
	return hsum(acc)
}

// dotF16Tail finishes dotF16F16C's last values.
func dotF16Tail(w []byte, x []float32) float32 { return dotF16AVX2(w, x) }
