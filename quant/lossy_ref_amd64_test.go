//go:build amd64 && goexperiment.simd

package quant

import (
	"simd/archsimd"
	"unsafe"
)

// The archsimd 4-bit and 2-bit lossy kernels: the production tables (lossyU4,
// lossyU2) run their Go-assembly versions (lossy_asm_amd64.s), which measured
// faster; these stay as the references the assembly is tested against.

// Lane shifts of the second 8 of 16 2-bit codes in one 32-bit word.
var shifts2hi = [8]uint32{16, 18, 20, 22, 24, 26, 28, 30}

func unpackU4(p unsafe.Pointer, sh, mask archsimd.Uint32x8) (x0, x1 archsimd.Float32x8) {
	w0 := archsimd.BroadcastUint32x8(*(*uint32)(p)).ShiftRight(sh).And(mask)
	w1 := archsimd.BroadcastUint32x8(*(*uint32)(unsafe.Add(p, 4))).ShiftRight(sh).And(mask)
	return w0.AsInt32x8().ConvertToFloat32(), w1.AsInt32x8().ConvertToFloat32()
}

func unpackU2(p unsafe.Pointer, sh0, sh1, mask archsimd.Uint32x8) (x0, x1 archsimd.Float32x8) {
	w := archsimd.BroadcastUint32x8(*(*uint32)(p))
	return w.ShiftRight(sh0).And(mask).AsInt32x8().ConvertToFloat32(), w.ShiftRight(sh1).And(mask).AsInt32x8().ConvertToFloat32()
}

// dotU4Rows4 is rows4 for 4-bit codes.
//
//go:noinline
func dotU4Rows4(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr) {
	var t0, t1, t2, t3 archsimd.Float32x8
	sh, mask := archsimd.LoadUint32x8(&shifts4), archsimd.BroadcastUint32x8(15)
	// Offsets of the group in the rows, the query and the table (pointers stepped past
	// the last group would leave their allocation).
	po, qo, so := uintptr(0), uintptr(0), uintptr(0)
	for range np {
		var a0, a1, a2, a3 archsimd.Float32x8
		for c := uintptr(0); c < gs; c += 16 {
			qv, qw := ld8(q, qo+4*c), ld8(q, qo+4*c+32)
			o := po + c/2
			x0, x1 := unpackU4(unsafe.Add(p0, o), sh, mask)
			a0 = x1.MulAdd(qw, x0.MulAdd(qv, a0))
			x0, x1 = unpackU4(unsafe.Add(p1, o), sh, mask)
			a1 = x1.MulAdd(qw, x0.MulAdd(qv, a1))
			x0, x1 = unpackU4(unsafe.Add(p2, o), sh, mask)
			a2 = x1.MulAdd(qw, x0.MulAdd(qv, a2))
			x0, x1 = unpackU4(unsafe.Add(p3, o), sh, mask)
			a3 = x1.MulAdd(qw, x0.MulAdd(qv, a3))
		}
		s := unsafe.Add(st, so)
		t0 = a0.MulAdd(bcast(*(*uint32)(s)), t0)
		t1 = a1.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 4))), t1)
		t2 = a2.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 8))), t2)
		t3 = a3.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 12))), t3)
		po, qo, so = po+gb, qo+4*gs, so+stM
	}
	sum4(t0, t1, t2, t3).AsUint32x4().Store(out)
	archsimd.ClearAVXUpperBits()
}

// dotU4Q4 is q4 for 4-bit codes.
//
//go:noinline
func dotU4Q4(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr) {
	sh, mask := archsimd.LoadUint32x8(&shifts4), archsimd.BroadcastUint32x8(15)
	for i := range uintptr(m) {
		var t0, t1, t2, t3 archsimd.Float32x8
		po, so, qo := i*stride, i*sr, uintptr(0) // offsets, as in dotU4Rows4
		for range np {
			var a0, a1, a2, a3 archsimd.Float32x8
			for c := uintptr(0); c < gs; c += 16 {
				x0, x1 := unpackU4(unsafe.Add(rows, po+c/2), sh, mask)
				o := qo + 4*c
				a0 = ld8(q0, o+32).MulAdd(x1, ld8(q0, o).MulAdd(x0, a0))
				a1 = ld8(q1, o+32).MulAdd(x1, ld8(q1, o).MulAdd(x0, a1))
				a2 = ld8(q2, o+32).MulAdd(x1, ld8(q2, o).MulAdd(x0, a2))
				a3 = ld8(q3, o+32).MulAdd(x1, ld8(q3, o).MulAdd(x0, a3))
			}
			s := bcast(*(*uint32)(unsafe.Add(st, so)))
			t0, t1, t2, t3 = a0.MulAdd(s, t0), a1.MulAdd(s, t1), a2.MulAdd(s, t2), a3.MulAdd(s, t3)
			po, so, qo = po+gb, so+stM, qo+4*gs
		}
		r := sum4(t0, t1, t2, t3).AsUint32x4()
		o := unsafe.Add(out, 4*i)
		*(*uint32)(o) = r.GetElem(0)
		*(*uint32)(unsafe.Add(o, ldo)) = r.GetElem(1)
		*(*uint32)(unsafe.Add(o, 2*ldo)) = r.GetElem(2)
		if nq > 3 {
			*(*uint32)(unsafe.Add(o, 3*ldo)) = r.GetElem(3)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// addU4Q4 is addQ4 for 4-bit codes.
//
//go:noinline
func addU4Q4(a0p, a1p, a2p, a3p, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int) {
	a00, a01 := ld8(a0p, 0), ld8(a0p, 32)
	a10, a11 := ld8(a1p, 0), ld8(a1p, 32)
	a20, a21 := ld8(a2p, 0), ld8(a2p, 32)
	a30, a31 := ld8(a3p, 0), ld8(a3p, 32)
	sh, mask := archsimd.LoadUint32x8(&shifts4), archsimd.BroadcastUint32x8(15)
	co := uintptr(0) // of row i's codes (a pointer stepped past the last row would leave its allocation)
	for i := uintptr(0); i < uintptr(4*n); i += 4 {
		x0, x1 := unpackU4(unsafe.Add(cp, co), sh, mask)
		co += stride
		a00, a01 = bcast(*(*uint32)(unsafe.Add(w0, i))).MulAdd(x0, a00), bcast(*(*uint32)(unsafe.Add(w0, i))).MulAdd(x1, a01)
		a10, a11 = bcast(*(*uint32)(unsafe.Add(w1, i))).MulAdd(x0, a10), bcast(*(*uint32)(unsafe.Add(w1, i))).MulAdd(x1, a11)
		a20, a21 = bcast(*(*uint32)(unsafe.Add(w2, i))).MulAdd(x0, a20), bcast(*(*uint32)(unsafe.Add(w2, i))).MulAdd(x1, a21)
		a30, a31 = bcast(*(*uint32)(unsafe.Add(w3, i))).MulAdd(x0, a30), bcast(*(*uint32)(unsafe.Add(w3, i))).MulAdd(x1, a31)
	}
	// A repeated query's accumulators hold the same sums: any store order is right.
	st8(a30, a3p, 0)
	st8(a31, a3p, 32)
	st8(a20, a2p, 0)
	st8(a21, a2p, 32)
	st8(a10, a1p, 0)
	st8(a11, a1p, 32)
	st8(a00, a0p, 0)
	st8(a01, a0p, 32)
	archsimd.ClearAVXUpperBits()
}

// addU4Q1 is addQ1 for 4-bit codes.
//
//go:noinline
func addU4Q1(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int) {
	a0, a1, a2, a3 := ld8(a, 0), ld8(a, 32), ld8(a, 64), ld8(a, 96)
	sh, mask := archsimd.LoadUint32x8(&shifts4), archsimd.BroadcastUint32x8(15)
	co := uintptr(0) // as in addU4Q4
	for i := uintptr(0); i < uintptr(4*n); i += 4 {
		x0, x1 := unpackU4(unsafe.Add(cp0, co), sh, mask)
		x2, x3 := unpackU4(unsafe.Add(cp1, co), sh, mask)
		co += stride
		v, u := bcast(*(*uint32)(unsafe.Add(w0, i))), bcast(*(*uint32)(unsafe.Add(w1, i)))
		a0, a1, a2, a3 = x0.MulAdd(v, a0), x1.MulAdd(v, a1), x2.MulAdd(u, a2), x3.MulAdd(u, a3)
	}
	st8(a0, a, 0)
	st8(a1, a, 32)
	st8(a2, a, 64)
	st8(a3, a, 96)
	archsimd.ClearAVXUpperBits()
}

// dotU2Rows4 is rows4 for 2-bit codes.
//
//go:noinline
func dotU2Rows4(out *[4]uint32, q, p0, p1, p2, p3, st unsafe.Pointer, stM uintptr, np int, gs, gb uintptr) {
	var t0, t1, t2, t3 archsimd.Float32x8
	sh0, sh1, mask := archsimd.LoadUint32x8(&shifts2), archsimd.LoadUint32x8(&shifts2hi), archsimd.BroadcastUint32x8(3)
	// Offsets of the group in the rows, the query and the table (pointers stepped past
	// the last group would leave their allocation).
	po, qo, so := uintptr(0), uintptr(0), uintptr(0)
	for range np {
		var a0, a1, a2, a3 archsimd.Float32x8
		for c := uintptr(0); c < gs; c += 16 {
			qv, qw := ld8(q, qo+4*c), ld8(q, qo+4*c+32)
			o := po + c/4
			x0, x1 := unpackU2(unsafe.Add(p0, o), sh0, sh1, mask)
			a0 = x1.MulAdd(qw, x0.MulAdd(qv, a0))
			x0, x1 = unpackU2(unsafe.Add(p1, o), sh0, sh1, mask)
			a1 = x1.MulAdd(qw, x0.MulAdd(qv, a1))
			x0, x1 = unpackU2(unsafe.Add(p2, o), sh0, sh1, mask)
			a2 = x1.MulAdd(qw, x0.MulAdd(qv, a2))
			x0, x1 = unpackU2(unsafe.Add(p3, o), sh0, sh1, mask)
			a3 = x1.MulAdd(qw, x0.MulAdd(qv, a3))
		}
		s := unsafe.Add(st, so)
		t0 = a0.MulAdd(bcast(*(*uint32)(s)), t0)
		t1 = a1.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 4))), t1)
		t2 = a2.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 8))), t2)
		t3 = a3.MulAdd(bcast(*(*uint32)(unsafe.Add(s, 12))), t3)
		po, qo, so = po+gb, qo+4*gs, so+stM
	}
	sum4(t0, t1, t2, t3).AsUint32x4().Store(out)
	archsimd.ClearAVXUpperBits()
}

// dotU2Q4 is q4 for 2-bit codes.
//
//go:noinline
func dotU2Q4(out unsafe.Pointer, ldo uintptr, nq int, q0, q1, q2, q3, rows unsafe.Pointer, stride uintptr, m int, st unsafe.Pointer, sr, stM uintptr, np int, gs, gb uintptr) {
	sh0, sh1, mask := archsimd.LoadUint32x8(&shifts2), archsimd.LoadUint32x8(&shifts2hi), archsimd.BroadcastUint32x8(3)
	for i := range uintptr(m) {
		var t0, t1, t2, t3 archsimd.Float32x8
		po, so, qo := i*stride, i*sr, uintptr(0) // offsets, as in dotU2Rows4
		for range np {
			var a0, a1, a2, a3 archsimd.Float32x8
			for c := uintptr(0); c < gs; c += 16 {
				x0, x1 := unpackU2(unsafe.Add(rows, po+c/4), sh0, sh1, mask)
				o := qo + 4*c
				a0 = ld8(q0, o+32).MulAdd(x1, ld8(q0, o).MulAdd(x0, a0))
				a1 = ld8(q1, o+32).MulAdd(x1, ld8(q1, o).MulAdd(x0, a1))
				a2 = ld8(q2, o+32).MulAdd(x1, ld8(q2, o).MulAdd(x0, a2))
				a3 = ld8(q3, o+32).MulAdd(x1, ld8(q3, o).MulAdd(x0, a3))
			}
			s := bcast(*(*uint32)(unsafe.Add(st, so)))
			t0, t1, t2, t3 = a0.MulAdd(s, t0), a1.MulAdd(s, t1), a2.MulAdd(s, t2), a3.MulAdd(s, t3)
			po, so, qo = po+gb, so+stM, qo+4*gs
		}
		r := sum4(t0, t1, t2, t3).AsUint32x4()
		o := unsafe.Add(out, 4*i)
		*(*uint32)(o) = r.GetElem(0)
		*(*uint32)(unsafe.Add(o, ldo)) = r.GetElem(1)
		*(*uint32)(unsafe.Add(o, 2*ldo)) = r.GetElem(2)
		if nq > 3 {
			*(*uint32)(unsafe.Add(o, 3*ldo)) = r.GetElem(3)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// addU2Q4 is addQ4 for 2-bit codes.
//
//go:noinline
func addU2Q4(a0p, a1p, a2p, a3p, w0, w1, w2, w3, cp unsafe.Pointer, stride uintptr, n int) {
	a00, a01 := ld8(a0p, 0), ld8(a0p, 32)
	a10, a11 := ld8(a1p, 0), ld8(a1p, 32)
	a20, a21 := ld8(a2p, 0), ld8(a2p, 32)
	a30, a31 := ld8(a3p, 0), ld8(a3p, 32)
	sh0, sh1, mask := archsimd.LoadUint32x8(&shifts2), archsimd.LoadUint32x8(&shifts2hi), archsimd.BroadcastUint32x8(3)
	co := uintptr(0) // of row i's codes (a pointer stepped past the last row would leave its allocation)
	for i := uintptr(0); i < uintptr(4*n); i += 4 {
		x0, x1 := unpackU2(unsafe.Add(cp, co), sh0, sh1, mask)
		co += stride
		a00, a01 = bcast(*(*uint32)(unsafe.Add(w0, i))).MulAdd(x0, a00), bcast(*(*uint32)(unsafe.Add(w0, i))).MulAdd(x1, a01)
		a10, a11 = bcast(*(*uint32)(unsafe.Add(w1, i))).MulAdd(x0, a10), bcast(*(*uint32)(unsafe.Add(w1, i))).MulAdd(x1, a11)
		a20, a21 = bcast(*(*uint32)(unsafe.Add(w2, i))).MulAdd(x0, a20), bcast(*(*uint32)(unsafe.Add(w2, i))).MulAdd(x1, a21)
		a30, a31 = bcast(*(*uint32)(unsafe.Add(w3, i))).MulAdd(x0, a30), bcast(*(*uint32)(unsafe.Add(w3, i))).MulAdd(x1, a31)
	}
	// A repeated query's accumulators hold the same sums: any store order is right.
	st8(a30, a3p, 0)
	st8(a31, a3p, 32)
	st8(a20, a2p, 0)
	st8(a21, a2p, 32)
	st8(a10, a1p, 0)
	st8(a11, a1p, 32)
	st8(a00, a0p, 0)
	st8(a01, a0p, 32)
	archsimd.ClearAVXUpperBits()
}

// addU2Q1 is addQ1 for 2-bit codes.
//
//go:noinline
func addU2Q1(a, w0, w1, cp0, cp1 unsafe.Pointer, stride uintptr, n int) {
	a0, a1, a2, a3 := ld8(a, 0), ld8(a, 32), ld8(a, 64), ld8(a, 96)
	sh0, sh1, mask := archsimd.LoadUint32x8(&shifts2), archsimd.LoadUint32x8(&shifts2hi), archsimd.BroadcastUint32x8(3)
	co := uintptr(0) // as in addU2Q4
	for i := uintptr(0); i < uintptr(4*n); i += 4 {
		x0, x1 := unpackU2(unsafe.Add(cp0, co), sh0, sh1, mask)
		x2, x3 := unpackU2(unsafe.Add(cp1, co), sh0, sh1, mask)
		co += stride
		v, u := bcast(*(*uint32)(unsafe.Add(w0, i))), bcast(*(*uint32)(unsafe.Add(w1, i)))
		a0, a1, a2, a3 = x0.MulAdd(v, a0), x1.MulAdd(v, a1), x2.MulAdd(u, a2), x3.MulAdd(u, a3)
	}
	st8(a0, a, 0)
	st8(a1, a, 32)
	st8(a2, a, 64)
	st8(a3, a, 96)
	archsimd.ClearAVXUpperBits()
}
