//go:build amd64 && goexperiment.simd

package quant

import (
	"simd/archsimd"
	"unsafe"
)

// Fused row kernels for Int8 rows on CPUs without F16C, shaped so that no group size
// computes products it throws away (F16 rows, Int8 rows on CPUs with F16C and BF16
// rows run assembly kernels of the same shapes: rows_f16c_amd64.s, rows_bf16_amd64.s;
// F32 rows the tile kernels):
//
//   - dot, four queries at a time (*Q4): one row decoded once for four queries,
//     two accumulators per query, one horizontal sum per row and four queries;
//   - dot, the queries left over (all of them when g < 4) one at a time (*R4): four
//     rows per pass, two accumulators per row, one horizontal sum per four rows;
//   - add, four queries at a time (*Q4, in assembly for every build: addInt8Q4asm):
//     16 columns of four accumulators;
//   - add, the queries left over (*Q1x64, *Q1x16): 64 columns of one accumulator in
//     eight registers (eight independent FMA chains) while the rows stream by,
//     weights broadcast; the last columns 16 at a time.
//
// Each kernel is a separate noinline function whose loop over the rows is inside,
// so the loop has the registers to itself and a call covers a whole span. Rows are
// read through unsafe pointers: the callers checked every index first.

// i8x16 widens the 16 int8 codes at p + off to float32 (exactly).
func i8x16(p unsafe.Pointer, off uintptr) (x0, x1 archsimd.Float32x8) {
	v := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(p, off)))
	h := v.ConcatShiftBytesRight(8, v) // the high 8 codes in the low half
	return v.AsInt8x16().ExtendLo8ToInt32().ConvertToFloat32(), h.AsInt8x16().ExtendLo8ToInt32().ConvertToFloat32()
}

// rowScales returns the f16 scales at the starts of the four Int8 rows p0..p3, as
// float32.
func rowScales(p0, p1, p2, p3 unsafe.Pointer) archsimd.Float32x4 {
	s := [4]uint32{f16Bits((*[2]byte)(p0)[:]), f16Bits((*[2]byte)(p1)[:]), f16Bits((*[2]byte)(p2)[:]), f16Bits((*[2]byte)(p3)[:])}
	return archsimd.LoadUint32x4(&s).AsFloat32x4()
}

// dotInt8R4 is the r4Kernel of Int8 rows (f16 scale, then d int8 codes): the plain
// dot with the codes, times the row's scale.
//
//go:noinline
func dotInt8R4(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr) {
	for k := range uintptr(ng) {
		p0 := unsafe.Add(src, k*gstep)
		p1, p2, p3 := unsafe.Add(p0, o1), unsafe.Add(p0, o2), unsafe.Add(p0, o3)
		var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8
		for c := uintptr(0); c < d; c += 16 {
			qv, qw := ld8(q, 4*c), ld8(q, 4*c+32)
			x, y := i8x16(p0, 2+c)
			a0, b0 = x.MulAdd(qv, a0), y.MulAdd(qw, b0)
			x, y = i8x16(p1, 2+c)
			a1, b1 = x.MulAdd(qv, a1), y.MulAdd(qw, b1)
			x, y = i8x16(p2, 2+c)
			a2, b2 = x.MulAdd(qv, a2), y.MulAdd(qw, b2)
			x, y = i8x16(p3, 2+c)
			a3, b3 = x.MulAdd(qv, a3), y.MulAdd(qw, b3)
		}
		s := sum4(a0.Add(b0), a1.Add(b1), a2.Add(b2), a3.Add(b3)).Mul(rowScales(p0, p1, p2, p3))
		s.AsUint32x4().Store((*[4]uint32)(unsafe.Add(out, 16*k)))
	}
	archsimd.ClearAVXUpperBits()
}

// q4Store stores the four query sums s of row i to out + 4i + r·ldb, r < 4.
func q4Store(out unsafe.Pointer, ldb uintptr, i uintptr, s archsimd.Float32x4) {
	var t [4]uint32
	s.AsUint32x4().Store(&t)
	o := unsafe.Add(out, 4*i)
	*(*uint32)(o) = t[0]
	*(*uint32)(unsafe.Add(o, ldb)) = t[1]
	*(*uint32)(unsafe.Add(o, 2*ldb)) = t[2]
	*(*uint32)(unsafe.Add(o, 3*ldb)) = t[3]
}

// dotInt8Q4 stores to out + 4i + r·ldb (float32 bits) the scores of the four queries
// at q + r·qs bytes with the n Int8 rows at src + i·stride, d a positive multiple of
// 16: each row's codes are widened once for the four queries.
//
//go:noinline
func dotInt8Q4(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
	q1 := unsafe.Add(q, qs)
	q2 := unsafe.Add(q1, qs)
	q3 := unsafe.Add(q2, qs)
	for i := range uintptr(n) {
		row := unsafe.Add(src, i*stride)
		var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8 // two chains per query (FMA latency)
		for c := uintptr(0); c < d; c += 16 {
			x0, x1 := i8x16(row, 2+c)
			a0, b0 = x0.MulAdd(ld8(q, 4*c), a0), x1.MulAdd(ld8(q, 4*c+32), b0)
			a1, b1 = x0.MulAdd(ld8(q1, 4*c), a1), x1.MulAdd(ld8(q1, 4*c+32), b1)
			a2, b2 = x0.MulAdd(ld8(q2, 4*c), a2), x1.MulAdd(ld8(q2, 4*c+32), b2)
			a3, b3 = x0.MulAdd(ld8(q3, 4*c), a3), x1.MulAdd(ld8(q3, 4*c+32), b3)
		}
		s := archsimd.BroadcastUint32x4(f16Bits((*[2]byte)(row)[:])).AsFloat32x4()
		q4Store(out, ldb, i, sum4(a0.Add(b0), a1.Add(b1), a2.Add(b2), a3.Add(b3)).Mul(s))
	}
	archsimd.ClearAVXUpperBits()
}

// addInt8Q1x64 is the 64-column q1Kernel of int8 codes.
//
//go:noinline
func addInt8Q1x64(acc, w, src unsafe.Pointer, stride uintptr, n int) {
	a0, a1, a2, a3 := ld8(acc, 0), ld8(acc, 32), ld8(acc, 64), ld8(acc, 96)
	a4, a5, a6, a7 := ld8(acc, 128), ld8(acc, 160), ld8(acc, 192), ld8(acc, 224)
	for i := range uintptr(n) {
		p := unsafe.Add(src, i*stride)
		v := bcast(*(*uint32)(unsafe.Add(w, 4*i)))
		x, y := i8x16(p, 0)
		a0, a1 = x.MulAdd(v, a0), y.MulAdd(v, a1)
		x, y = i8x16(p, 16)
		a2, a3 = x.MulAdd(v, a2), y.MulAdd(v, a3)
		x, y = i8x16(p, 32)
		a4, a5 = x.MulAdd(v, a4), y.MulAdd(v, a5)
		x, y = i8x16(p, 48)
		a6, a7 = x.MulAdd(v, a6), y.MulAdd(v, a7)
	}
	st8(a0, acc, 0)
	st8(a1, acc, 32)
	st8(a2, acc, 64)
	st8(a3, acc, 96)
	st8(a4, acc, 128)
	st8(a5, acc, 160)
	st8(a6, acc, 192)
	st8(a7, acc, 224)
	archsimd.ClearAVXUpperBits()
}

// addInt8Q1x16 is the 16-column q1Kernel of int8 codes: even and odd rows in
// separate accumulators (four chains).
//
//go:noinline
func addInt8Q1x16(acc, w, src unsafe.Pointer, stride uintptr, n int) {
	a0, a1 := ld8(acc, 0), ld8(acc, 32)
	var b0, b1 archsimd.Float32x8
	i := uintptr(0)
	for ; i+2 <= uintptr(n); i += 2 {
		p := unsafe.Add(src, i*stride)
		v, u := bcast(*(*uint32)(unsafe.Add(w, 4*i))), bcast(*(*uint32)(unsafe.Add(w, 4*i+4)))
		x, y := i8x16(p, 0)
		a0, a1 = x.MulAdd(v, a0), y.MulAdd(v, a1)
		x, y = i8x16(p, stride)
		b0, b1 = x.MulAdd(u, b0), y.MulAdd(u, b1)
	}
	if i < uintptr(n) {
		v := bcast(*(*uint32)(unsafe.Add(w, 4*i)))
		x, y := i8x16(src, i*stride)
		a0, a1 = x.MulAdd(v, a0), y.MulAdd(v, a1)
	}
	st8(a0.Add(b0), acc, 0)
	st8(a1.Add(b1), acc, 32)
	archsimd.ClearAVXUpperBits()
}

// dotInt8RowsNoF16C is fusedDotRows for Int8 rows on CPUs without F16C.
func dotInt8RowsNoF16C(scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int) bool {
	dotRowsFused(dotInt8Q4, dotInt8R4, scores, ld, q, g, src, stride, n, d)
	return true
}

// addInt8RowsNoF16C is fusedAddRows for Int8 rows on CPUs without F16C: it first
// folds each row's scale into the weights (ws[j·m+i] = w[j·ld+i]·s_i in tmp, m rows
// at a time), then streams the codes.
func addInt8RowsNoF16C(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32) bool {
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
		addRowsFused(addInt8Q4asm, addInt8Q4Z, addInt8Q1x64, addInt8Q1x16, acc, unsafe.Pointer(&ws[0]), uintptr(4*m), g, unsafe.Pointer(&src[i0*stride+2]), stride, m, d, 1)
	}
	return true
}
