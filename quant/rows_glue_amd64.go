//go:build amd64

package quant

import "unsafe"

// The loops around the fused row kernels, for the assembly set (asm_amd64.go): they
// split queries into groups of four and rows into groups of four and call the
// kernels through function values. Each codec's entry in the kernel table
// (kernels.go) calls them, from the codec's own kernel file: F32 rows in
// tiles_amd64.go, BF16 in rows_bf16_amd64.go, F16 in rows_f16c_amd64.go, Int8 in
// int8_i16_amd64.go, FP8 in rows_fp8_amd64.go, Affine in fused_lossy_amd64.go. Rows
// are read through unsafe pointers: the callers checked every index first. Per-row
// scales are applied to the row's g scores (dot) or folded into its g weights (add)
// instead of to every value.

// bytesAsF32 views the first 4·n bytes of b as n float32s (F32 rows are
// little-endian float32, as amd64 stores them): F32 rows are read in place, without
// the copy into a tile.
func bytesAsF32(b []byte, n int) []float32 {
	_ = b[4*n-1]
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

// pfDist and pfNext are PFDIST and PFNEXT of prefetch_amd64.h: how far past a row the
// score kernels ask for lines, and the most the adds do.
const (
	pfDist = 4096
	pfNext = 8192
)

// aheadRows returns how many of the n rows at the start of src (stride bytes apart) a
// kernel that asks for the two lines ahead bytes past each row it reads may run over
// without asking for a line past the avail bytes of src: DotRows and AddRows callers
// end src where the bytes they read next end (package attn, where a span's rows of
// one KV head are not followed by the next head's), and lines asked for past that
// would be read from memory for nothing.
func aheadRows(avail, stride, n, ahead int) int {
	if stride <= 0 {
		return n
	}
	if avail < ahead+128 {
		return 0
	}
	return min(n, (avail-ahead-128)/stride+1)
}

// r4Kernel is the shape of the *R4 dot kernels: for each group k < ng of four rows
// at p = src + k·gstep, p+o1, p+o2, p+o3 (bytes), it stores to out[4k+r] (float32
// bits) the dot of the query at q with row r over d values, d a positive multiple of
// 16.
type r4Kernel func(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// rowOffsets returns the byte offsets of the second, third and fourth row of a group
// of four among n ≥ 1 rows stride bytes apart; with n < 4 the missing rows repeat the
// last one.
func rowOffsets(stride uintptr, n int) (o1, o2, o3 uintptr) {
	if n >= 4 {
		return stride, 2 * stride, 3 * stride
	}
	last := stride * uintptr(n-1)
	return stride * uintptr(min(1, n-1)), stride * uintptr(min(2, n-1)), last
}

// dotR4 stores to out[i], i < n, the dots of the query at q with the n rows at src +
// i·stride through the R4 kernel k: groups of four rows, the last rows (n mod 4) as
// a group that ends at row n-1 and overlaps the previous one (the rows they share get
// the same bits again), and fewer than four rows as a group with the last row
// repeated, stored through a temporary.
func dotR4(k r4Kernel, out, q, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
	o1, o2, o3 := rowOffsets(stride, n)
	if n < 4 {
		var t [4]uint32
		k(unsafe.Pointer(&t), q, src, o1, o2, o3, 0, 1, d)
		copy(unsafe.Slice((*uint32)(out), n), t[:n])
		return
	}
	k(out, q, src, o1, o2, o3, 4*stride, n/4, d)
	if n%4 != 0 {
		k(unsafe.Add(out, 4*(n-4)), q, unsafe.Add(src, uintptr(n-4)*stride), o1, o2, o3, 0, 1, d)
	}
}

// q1Kernel is the shape of the *Q1x64 and *Q1x16 add kernels: acc[c] += Σ_{i<n}
// w[i]·row_i[c] over 64 (16) columns, row i's first column at src + i·stride (for
// Int8, w already holds the rows' scales).
type q1Kernel func(acc, w, src unsafe.Pointer, stride uintptr, n int)

// addQ1 performs acc[c] += Σ_{i<n} w[i]·row_i[c] for c < d (a multiple of 16) with
// the 64-column kernel k64 and then the 16-column kernel k16; vb is the bytes of a
// value in the rows, src the first value of row 0.
func addQ1(k64, k16 q1Kernel, acc, w, src unsafe.Pointer, stride uintptr, n int, d, vb uintptr) {
	c := uintptr(0)
	for ; c+64 <= d; c += 64 {
		k64(unsafe.Add(acc, 4*c), w, unsafe.Add(src, vb*c), stride, n)
	}
	for ; c < d; c += 16 {
		k16(unsafe.Add(acc, 4*c), w, unsafe.Add(src, vb*c), stride, n)
	}
}

// dotRowsFused is the dot kernel of F16 (with F16C), BF16 and Int8 rows, d a
// multiple of 16: four queries at a time through q4, the rest one at a time through
// r4 (src: the first row).
func dotRowsFused(q4 quadDotKernel, r4 r4Kernel, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int) {
	sp, qp, op := unsafe.Pointer(&src[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&scores[0])
	us, ud, qb, ldb := uintptr(stride), uintptr(d), uintptr(4*d), uintptr(4*ld)
	j := 0
	for ; j+4 <= g; j += 4 {
		q4(unsafe.Add(op, uintptr(j)*ldb), ldb, unsafe.Add(qp, uintptr(j)*qb), qb, sp, us, n, ud)
	}
	for ; j < g; j++ {
		dotR4(r4, unsafe.Add(op, uintptr(j)*ldb), unsafe.Add(qp, uintptr(j)*qb), sp, us, n, ud)
	}
}

// quadDotKernel is the shape of the four-query score kernels that take four queries
// qs bytes apart and store to out + 4i + r·ldb for rows i < n (dotF16Q4,
// dotInt8Q4I16, dot*Q4ChanI16; dot*Q4F16C with the FP8 header and multiplier bound).
type quadDotKernel func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr)

// quadDot runs the four-query kernel y over the n ≥ 1 rows at rows (stride bytes
// apart); where haveVNNI512 and z is not nil, z (the ZMM twin, which takes n a
// multiple of 4) takes the first n rounded down to a multiple of 4 and y the rest.
// quadI8 is the same for the int8-query kernels' shape.
func quadDot(y, z quadDotKernel, out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, rows unsafe.Pointer, stride uintptr, n int, d uintptr) {
	m := 0
	if haveVNNI512 && z != nil {
		if m = n &^ 3; m > 0 {
			z(out, ldb, q, qs, rows, stride, m, d)
		}
	}
	if m < n {
		y(unsafe.Add(out, 4*m), ldb, q, qs, unsafe.Add(rows, uintptr(m)*stride), stride, n-m, d)
	}
}

// q4AddKernel is the shape of the four-query add kernels (addInt8Q4asm; contract in
// addq4_amd64.h).
type q4AddKernel func(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, src unsafe.Pointer, stride uintptr, n int)

// addRowsFused is the add kernel of F16 (with F16C), BF16, Int8 and FP8 rows, d a
// multiple of 16: 16 columns of four queries at a time through q4 or, with AVX-512F,
// 64 at a time through its ZMM twin q4z (nil if none; the same sums), the rest one
// query at a time through k64 and k16 (nil where g is a multiple of 4). w holds each
// query's n weights ws bytes apart (for Int8, already times the rows' scales); src is
// the first value of row 0 and vb the bytes of a value.
func addRowsFused(q4, q4z q4AddKernel, k64, k16 q1Kernel, acc []float32, w unsafe.Pointer, ws uintptr, g int, src unsafe.Pointer, stride, n, d int, vb uintptr) {
	ap := unsafe.Pointer(&acc[0])
	us, ud, ab := uintptr(stride), uintptr(d), uintptr(4*d)
	z := uintptr(0) // columns through q4z
	if haveAVX512F && q4z != nil {
		z = ud &^ 63
	}
	j := 0
	for ; j+4 <= g; j += 4 {
		aj, wj := unsafe.Add(ap, uintptr(j)*ab), unsafe.Add(w, uintptr(j)*ws)
		c := uintptr(0)
		for ; c < z; c += 64 {
			q4z(unsafe.Add(aj, 4*c), ab, wj, ws, unsafe.Add(src, vb*c), us, n)
		}
		for ; c < ud; c += 16 {
			q4(unsafe.Add(aj, 4*c), ab, wj, ws, unsafe.Add(src, vb*c), us, n)
		}
	}
	for ; j < g; j++ {
		addQ1(k64, k16, unsafe.Add(ap, uintptr(j)*ab), unsafe.Add(w, uintptr(j)*ws), src, us, n, ud, vb)
	}
}
