//go:build amd64

package quant

import "unsafe"

// Tile kernels in AVX2 + FMA assembly (tiles_amd64.s), on CPUs with AVX2 and FMA
// (asm_amd64.go; they measured faster than the archsimd kernels they replaced): MultiDot and
// MultiAxpy for every d ≥ 1, such as the decoded tiles of head dimension 8 of small
// models, whose float sums differ from the scalar twins' only in order and fused
// multiply-adds; and the decoders of Channel blocks and Affine rows into those
// tiles, bit for bit the codecs' Decode.

// dotRowsF32 writes out[i] = Σ_{c<d} q[c]·x[i·xs/4 + c] for i < n (xs in bytes),
// n, d ≥ 1; it reads nothing past each row's d values.
//
//go:noescape
func dotRowsF32(out, q, x *float32, xs uintptr, n, d int)

// axpyRowsF32 does acc[c] += Σ_{i<n} w[i]·x[i·xs/4 + c] for c < d (xs in bytes), n,
// d ≥ 1, adding the rows into acc in row order with fused multiply-adds; it reads
// nothing past each row's d values and writes only acc[:d].
//
//go:noescape
func axpyRowsF32(acc, w, x *float32, xs uintptr, n, d int)

// axpyRows2F32 is axpyRowsF32 for two queries at once (each row loaded once): the
// second query's acc and w at as and ws bytes past the first's. Each query's result
// is bit for bit axpyRowsF32's.
//
//go:noescape
func axpyRows2F32(acc *float32, as uintptr, w *float32, ws uintptr, x *float32, xs uintptr, n, d int)

// multiDotAsm is multiDotScalar: per query, all rows in one dotRowsF32 call. The
// arguments are checked by MultiDot (g, n, d ≥ 1 and every slice long enough). A
// score depends only on its query and row, not on n or the row's place in x. Against
// the archsimd kernel it replaced (four rows per step), ns: g=2 n=32 d=8 73–88 vs
// 137–155, g=2 n=256 d=8 492–560 vs 888–1030, g=4 n=32 d=64 322–457 vs 819–1095,
// g=4 n=256 d=64 3.3–5.2 vs 7.9–9.6 µs.
func multiDotAsm(scores []float32, ld int, q []float32, g int, x []float32, xs, n, d int) {
	for j := range g {
		dotRowsF32(&scores[j*ld], &q[j*d], &x[0], uintptr(4*xs), n, d)
	}
}

// multiAxpyAsm is multiAxpyScalar: for d ≥ 16, queries four at a time over strips
// of 16 columns (addF32Q4asm, each row loaded once for the four; the last d%16
// columns of the four as two pairs), then the rest two at a time (axpyRows2F32) and
// an odd last one alone. The arguments are checked by MultiAxpy. Every kernel adds
// the rows in order into acc with one fused multiply-add per value, as the scalar
// twin adds them, so splitting rows or queries between calls gives the same sums
// bit for bit. Every amd64 build uses it. Against the archsimd kernel it replaced,
// ns: g=2 n=32 d=8 58–75 vs 116–133, g=2 n=256 d=8 355–403 vs 764–1013; the quads
// are that kernel's own (at g=4 d=64 it was 1.3–1.5× faster than pairs).
func multiAxpyAsm(acc, w []float32, ld, g int, x []float32, xs, n, d int) {
	j := 0
	if d >= 16 && g >= 4 {
		ap, wp := unsafe.Pointer(&acc[0]), unsafe.Pointer(&w[0])
		ab, wb, rowB := uintptr(4*d), uintptr(4*ld), uintptr(4*xs)
		d16 := d &^ 15
		for ; j+4 <= g; j += 4 {
			for c := 0; c < d16; c += 16 {
				addF32Q4asm(unsafe.Add(ap, uintptr(j)*ab+uintptr(4*c)), ab, unsafe.Add(wp, uintptr(j)*wb), wb, unsafe.Pointer(&x[c]), rowB, n)
			}
			if d16 < d {
				for r := j; r < j+4; r += 2 {
					axpyRows2F32(&acc[r*d+d16], ab, &w[r*ld], wb, &x[d16], rowB, n, d-d16)
				}
			}
		}
	}
	for ; j+2 <= g; j += 2 {
		axpyRows2F32(&acc[j*d], uintptr(4*d), &w[j*ld], uintptr(4*ld), &x[0], uintptr(4*xs), n, d)
	}
	if j < g {
		axpyRowsF32(&acc[j*d], &w[j*ld], &x[0], uintptr(4*xs), n, d)
	}
}

// decChannelRows writes dst[i·d+c] = lo[c] + code(i, c)·s[c] for i < n, c < d: the n
// code rows of a Channel block of the given bits (8, 4, 3 or 2) at codes, one after the
// other (n·d·bits/8 bytes), d a multiple of 8, n ≥ 1; bit for bit Channel.Decode's
// values (a multiply, then an add).
//
//go:noescape
func decChannelRows(dst *float32, codes *byte, lo, s *float32, n, d, bits int)

// widenChanParams writes the scales and zeros of the d channels of a Channel block's
// header at hdr (4·d bytes) to s and lo, d a multiple of 8, with F16C; exactly
// getF16's values (chanParams), but for signaling NaNs, which come back quiet.
//
//go:noescape
func widenChanParams(s, lo *float32, hdr *byte, d int)

// decBlockAsm is decBlockScalar, the code rows widened in decChannelRows when d is a
// multiple of 8 (else the scalar twin); the block's scales and zeros are widened into
// s and lo first, as there. Against the archsimd decoder it replaced (32 tokens), ns:
// d=8 110–165 vs 168–241, d=64 724–1107 vs 828–1137.
func decBlockAsm(c Channel, dst []float32, src []byte, t, d, i0, i1 int, lo, s []float32) {
	if d%8 != 0 || (c.Bits != 8 && c.Bits != 4 && c.Bits != 3 && c.Bits != 2) {
		decBlockScalar(c, dst, src, t, d, i0, i1, lo, s)
		return
	}
	if haveF16C {
		_, _, _ = s[d-1], lo[d-1], src[4*d-1]
		widenChanParams(&s[0], &lo[0], &src[0], d)
	} else {
		chanParams(s, lo, src, d)
	}
	rb := packedBytes(d, c.Bits)
	codes := src[4*d+i0*rb : 4*d+i1*rb]
	_ = dst[(i1-i0)*d-1]
	decChannelRows(&dst[0], &codes[0], &lo[0], &s[0], i1-i0, d, c.Bits)
}

// decAffineRows writes Affine.Decode of the n rows at src + i·stride bytes (Bits 8,
// 4 or 2; groups of group values, group and d multiples of 8, group dividing d) to
// dst[i·d:(i+1)·d], bit for bit. It needs F16C.
//
//go:noescape
func decAffineRows(dst *float32, src *byte, stride uintptr, n, d, group, bits int)

// F32 rows are little-endian float32, as amd64 stores them: the tile kernels score
// and add them in place for any d (strides of whole values), and their decoding is
// a copy.
func init() {
	f32Kernels = rowKernels{
		dot: func(_ RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, _ []float32) bool {
			if stride%4 != 0 {
				return false
			}
			multiDotAsm(scores, ld, q, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
			return true
		},
		add: func(_ RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, _ []float32) bool {
			if stride%4 != 0 {
				return false
			}
			multiAxpyAsm(acc, w, ld, g, bytesAsF32(src, (n-1)*stride/4+d), stride/4, n, d)
			return true
		},
		decode: func(_ RowCodec, dst []float32, src []byte, stride, n, d int) bool {
			rb := 4 * d
			dp := unsafe.Pointer(&dst[0])
			for i := range n {
				copy(unsafe.Slice((*byte)(unsafe.Add(dp, i*rb)), rb), src[i*stride:][:rb])
			}
			return true
		},
		independent: true,
	}
}
