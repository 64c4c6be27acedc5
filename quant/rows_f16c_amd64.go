//go:build amd64

package quant

import (
	"os"
	"unsafe"

	"kvq/internal/cpufeat"
)

// The F16 and Int8 row kernels in rows_f16c_amd64.s, in assembly because archsimd
// has no VCVTPH2PS: binary16 values (and Int8 row scales) are widened by it, exactly,
// as F16ToF32; int8 codes by VPMOVSXBD straight from memory. Products are float32
// FMAs, so the kernels equal the decoded reference up to the order of the float sums.
// They replaced archsimd kernels of the same shapes, whose compiled loops (vectors
// kept in registers across iterations moved and spilled) ran two to three times
// slower for Int8 in BenchmarkRowKernels. They need AVX2, FMA and F16C (haveF16C);
// without F16C, F16 and Int8 rows go through tiles (DecodeRows, then MultiDot or
// MultiAxpy).

// haveF16C is whether the CPU has the F16C conversions (tests switch it off to run
// the kernels without them).
var haveF16C = cpufeat.F16C

// noAVX512 is KVQ_NOAVX512=1 in the environment: the SIMD set keeps to its AVX2
// kernels (to compare them, as linalg does).
var noAVX512 = os.Getenv("KVQ_NOAVX512") == "1"

// haveAVX512F is whether the CPU has AVX-512F (with F16C), for the ZMM kernels
// (tests switch it off to run the YMM ones).
var haveAVX512F = cpufeat.AVX512F && !noAVX512

// haveVNNI512 is whether the CPU has AVX-512 BW and VNNI as well, for the ZMM integer
// score kernels and the ZMM FP8 kernels, which need BW (tests switch it off with
// haveAVX512F).
var haveVNNI512 = cpufeat.AVX512VNNI && !noAVX512

// haveVBMIGFNI is whether the CPU has AVX-512 VBMI and GFNI as well, for the integer
// value sums of 2-bit rows that follow one another (tests switch it off with
// haveAVX512F).
var haveVBMIGFNI = cpufeat.AVX512VBMIGFNI && !noAVX512

// zmmLevel names the ZMM kernels the SIMD set runs beside its YMM ones, for
// KernelName: "+avx512vnni" (haveVNNI512), "+avx512" (haveAVX512F) or none.
func zmmLevel() string {
	switch {
	case haveVNNI512:
		return "+avx512vnni"
	case haveAVX512F:
		return "+avx512"
	}
	return ""
}

// dotF16R4 is the r4Kernel of F16 rows.
//
//go:noescape
func dotF16R4(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// dotF16R4Near is dotF16R4 asking for no lines ahead, for the rows whose lines
// ahead lie past what the caller reads (aheadRows).
//
//go:noescape
func dotF16R4Near(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// dotF16R4Next is dotF16R4 asking, instead of the lines PFDIST ahead, for every line
// of each row's twin next bytes on (the rows the caller reads next) into the L2
// cache.
//
//go:noescape
func dotF16R4Next(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr, next uintptr)

// dotF16Q4 scores four queries against F16 rows: out + 4i + r·ldb gets the score of the query at
// q + r·qs with the row at src + i·stride, for i < n and r < 4.
//
//go:noescape
func dotF16Q4(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)

// dotF16Q4Z is dotF16Q4 with ZMM registers (AVX-512 BW: haveVNNI512) for n a multiple
// of 4 (n ≥ 4) and d of 16, FP8's ZMM score body (rows_fp8z_amd64.s) over f16 rows:
// the same scores bit for bit, each taking the same float operations in the same
// order. It takes the FP8 kernels' arguments; hdr must be 0 and mul 1.
//
//go:noescape
func dotF16Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// dotF16Quad is the quadDotKernel of F16 rows: dotF16Q4Z for the rows it takes, where
// the CPU has it, and dotF16Q4 for the rest.
func dotF16Quad(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
	quadDot(dotF16Q4, dotF16Q4Zq, out, ldb, q, qs, src, stride, n, d)
}

// dotF16Q4Zq is dotF16Q4Z in quadDotKernel's shape.
func dotF16Q4Zq(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
	dotF16Q4Z(out, ldb, q, qs, src, stride, n, d, 0, 1)
}

// addF16Q1x64 is the 64-column q1Kernel of binary16 values.
//
//go:noescape
func addF16Q1x64(acc, w, src unsafe.Pointer, stride uintptr, n int)

// addF16Q1x64Near is addF16Q1x64 asking for no rows ahead (aheadRows).
//
//go:noescape
func addF16Q1x64Near(acc, w, src unsafe.Pointer, stride uintptr, n int)

// addF16Q1x64Next is addF16Q1x64 asking, instead of the rows ahead, for the lines of
// each row's 64 values next bytes on into the L2 cache (dotF16R4Next).
//
//go:noescape
func addF16Q1x64Next(acc, w, src unsafe.Pointer, stride uintptr, n int, next uintptr)

// addF16Q1x16 is the 16-column q1Kernel of binary16 values.
//
//go:noescape
func addF16Q1x16(acc, w, src unsafe.Pointer, stride uintptr, n int)

// addInt8Q1x64F16C performs acc[c] += Σ_{i<n} (w[i]·s_i)·code_i[c] for c < 64, row
// i's codes at src + i·stride and its f16 scale s_i at src + i·stride + so (so < 0:
// the row's header): the scale is folded into the weight in the kernel.
//
//go:noescape
func addInt8Q1x64F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)

// addInt8Q1x64Z is addInt8Q1x64F16C with ZMM registers (AVX-512F), the same sums bit
// for bit.
//
//go:noescape
func addInt8Q1x64Z(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)

// addInt8Q1x64ZNear is addInt8Q1x64Z asking for no rows ahead (aheadRows).
//
//go:noescape
func addInt8Q1x64ZNear(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)

// addInt8Q1x64ZNext is addInt8Q1x64Z asking, instead of the rows ahead, for the two
// lines next bytes on from each row's codes into the L2 cache (dotF16R4Next).
//
//go:noescape
func addInt8Q1x64ZNext(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, next uintptr)

// addInt8Q1x16F16C is addInt8Q1x64F16C for 16 columns.
//
//go:noescape
func addInt8Q1x16F16C(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)

// addInt8Q4asm adds, for the four queries r (16 accumulators at acc + r·as bytes,
// weights at w + r·ws bytes, already times the rows' scales), Σ_i w_r[i]·codes_i over
// 16 columns, row i's int8 codes at codes + i·stride: each row's codes are widened
// once (VPMOVSXBD from memory) for the four queries. It needs AVX2 and FMA only.
//
//go:noescape
func addInt8Q4asm(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addInt8Q4Z is addInt8Q4asm over 64 columns in ZMM registers (AVX-512F,
// haveAVX512F): each row's 64 codes are widened once for the four queries and take 16
// FMAs of 16 lanes, where four addInt8Q4asm calls widen them four times and take 32
// FMAs of 8. Each column gets the same operations in the same order: the sums are
// addInt8Q4asm's, bit for bit.
//
//go:noescape
func addInt8Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addF16Q4Z is addInt8Q4Z for binary16 rows (addF16Q4F16C's twin).
//
//go:noescape
func addF16Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addBF16Q4Z is addInt8Q4Z for bfloat16 rows (addBF16Q4asm's twin).
//
//go:noescape
func addBF16Q4Z(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addBF16Q4asm is addInt8Q4asm for 16 bfloat16 values per row (no scales).
//
//go:noescape
func addBF16Q4asm(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addF32Q4asm is addInt8Q4asm for 16 float32 values per row (no scales).
//
//go:noescape
func addF32Q4asm(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// f32ToF16F16C writes the binary16 bits of the n float32s at src (n a multiple of
// 8) to dst, 2n bytes, by VCVTPS2PH with round to nearest even: bit for bit
// F32ToF16 (NaNs keep their sign and top payload bits, quieted).
//
//go:noescape
func f32ToF16F16C(dst *byte, src *float32, n int)

// encodeF16 is encF16 with F16C: 8 values per VCVTPS2PH, the last n mod 8 in Go.
func encodeF16(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	if n := len(src) &^ 7; n > 0 && haveF16C {
		f32ToF16F16C(&dst[0], &src[0], n)
		dst, src = dst[2*n:], src[n:]
	}
	encodeF16Scalar(dst, src)
}

// addF16Q4F16C is addInt8Q4asm for 16 binary16 values per row (no scales), widened
// by VCVTPH2PS.
//
//go:noescape
func addF16Q4F16C(acc unsafe.Pointer, as uintptr, w unsafe.Pointer, ws uintptr, codes unsafe.Pointer, stride uintptr, n int)

// addInt8RowsF16C is the add kernel of Int8 rows on CPUs with F16C: groups of four
// queries through addInt8Q4asm, the rows' scales folded into their weights in tmp
// first (foldRowScales, m rows at a time); with AVX-512 VNNI and d a multiple of 64,
// the rows of whole blocks of four through addInt8Q4I16Z instead (integer sums:
// AddRowsRounding). The queries left over go through addInt8Q1x64F16C (then
// addInt8Q1x16F16C), which fold the scales themselves. It reports false, having
// done nothing, when tmp cannot hold the weights of four queries.
func addInt8RowsF16C(acc, w []float32, ld, g int, src []byte, stride, n, d int, tmp []float32, next uintptr) bool {
	g4 := g &^ 3
	if len(tmp) < g4 {
		return false
	}
	ap, sp := unsafe.Pointer(&acc[0]), unsafe.Pointer(&src[0])
	us, ab := uintptr(stride), uintptr(4*d)
	n4 := 0 // rows the integer kernel took
	if g4 > 0 && haveVNNI512 && d%64 == 0 && n >= 4 {
		n4 = n &^ 3
		_ = w[(g4-1)*ld+n4-1]
		for j := 0; j < g4; j += 4 {
			a, wj := unsafe.Add(ap, uintptr(j)*ab), unsafe.Pointer(&w[j*ld])
			wb := uintptr(4 * ld)
			for b := 0; b < n4/4; b += addI16Blocks {
				wo := uintptr(16 * b)
				addInt8Q4I16Z(a, unsafe.Add(a, ab), unsafe.Add(a, 2*ab), unsafe.Add(a, 3*ab),
					unsafe.Add(wj, wo), unsafe.Add(wj, wb+wo), unsafe.Add(wj, 2*wb+wo), unsafe.Add(wj, 3*wb+wo),
					unsafe.Add(sp, 4*b*stride), us, min(addI16Blocks, n4/4-b), d)
			}
		}
	}
	if g4 > 0 {
		step := len(tmp) / g4
		for i0 := n4; i0 < n; i0 += step {
			m := min(step, n-i0)
			ws := tmp[:g4*m]
			_ = w[(g4-1)*ld+i0+m-1]
			foldRowScales(unsafe.Pointer(&ws[0]), unsafe.Pointer(&w[i0]), uintptr(4*ld), unsafe.Add(sp, i0*stride), us, m, g4, 1)
			// g4 queries: addRowsFused runs only its four-query kernel.
			addRowsFused(addInt8Q4asm, addInt8Q4Z, nil, nil, acc, unsafe.Pointer(&ws[0]), uintptr(4*m), g4, unsafe.Add(sp, i0*stride+2), stride, m, d, 1)
		}
	}
	// The ZMM kernel runs the rows whose lines ahead lie past src through its twin
	// that asks for none (aheadRows): each column's sum takes the rows in the same
	// order, the same bits.
	// With next (not 0: haveAVX512F, see int8Kernels.addNext), every row through the
	// twin that asks for the rows next bytes on.
	k64, m := addInt8Q1x64F16C, n
	switch {
	case next != 0:
		k64 = func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int) {
			addInt8Q1x64ZNext(acc, w, src, stride, n, so, next)
		}
	case haveAVX512F:
		k64, m = addInt8Q1x64Z, aheadRows(len(src), stride, n, min(2*n*stride, pfNext))
	}
	for j := g4; j < g; j++ {
		a, wj := unsafe.Add(ap, uintptr(j)*ab), unsafe.Pointer(&w[j*ld])
		c := 0
		for ; c+64 <= d; c += 64 {
			if m > 0 {
				k64(unsafe.Add(a, 4*c), wj, unsafe.Add(sp, 2+c), us, m, -(2 + c))
			}
			if m < n {
				addInt8Q1x64ZNear(unsafe.Add(a, 4*c), unsafe.Add(wj, 4*m), unsafe.Add(sp, m*stride+2+c), us, n-m, -(2 + c))
			}
		}
		for ; c < d; c += 16 {
			addInt8Q1x16F16C(unsafe.Add(a, 4*c), wj, unsafe.Add(sp, 2+c), us, n, -(2 + c))
		}
	}
	return true
}

// F16 rows, with F16C: fused kernels for d a multiple of 16, the decoder for
// multiples of 8.
func init() {
	f16Kernels = rowKernels{
		dot: func(_ RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, _ []float32) bool {
			if d%16 != 0 || !haveF16C {
				return false
			}
			// The rows whose lines PFDIST ahead lie past src through the twin that
			// asks for none (aheadRows); a row's score is the same bits either way.
			m := aheadRows(len(src), stride, n, pfDist)
			if m > 0 {
				dotRowsFused(dotF16Quad, dotF16R4, scores, ld, q, g, src, stride, m, d)
			}
			if m < n {
				dotRowsFused(dotF16Quad, dotF16R4Near, scores[m:], ld, q, g, src[m*stride:], stride, n-m, d)
			}
			return true
		},
		add: func(_ RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, _ []float32) bool {
			if d%16 != 0 || !haveF16C {
				return false
			}
			// As dot: the rows a call's lines ahead would pass src's end for go
			// through a second call that asks for none; each column's sum takes the
			// rows in the same order, the same bits.
			m := aheadRows(len(src), stride, n, min(2*n*stride, pfNext))
			if m > 0 {
				addRowsFused(addF16Q4F16C, addF16Q4Z, addF16Q1x64, addF16Q1x16, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, m, d, 2)
			}
			if m < n {
				addRowsFused(addF16Q4F16C, addF16Q4Z, addF16Q1x64Near, addF16Q1x16, acc, unsafe.Pointer(&w[m]), uintptr(4*ld), g, unsafe.Pointer(&src[m*stride]), stride, n-m, d, 2)
			}
			return true
		},
		// Fewer than four queries per KV head (no four-query group), the rows
		// through the twins that ask for the next rows.
		dotNext: func(scores []float32, ld int, q, _ []float32, g int, src []byte, stride, n, d int, _ []float32, next uintptr) bool {
			if d%16 != 0 || !haveF16C || g >= 4 {
				return false
			}
			r4 := func(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr) {
				dotF16R4Next(out, q, src, o1, o2, o3, gstep, ng, d, next)
			}
			dotRowsFused(nil, r4, scores, ld, q, g, src, stride, n, d)
			return true
		},
		addNext: func(acc, w []float32, ld, g int, src []byte, stride, n, d int, _ []float32, next uintptr) bool {
			if d%64 != 0 || !haveF16C || g >= 4 {
				return false
			}
			k64 := func(acc, w, src unsafe.Pointer, stride uintptr, n int) {
				addF16Q1x64Next(acc, w, src, stride, n, next)
			}
			addRowsFused(nil, nil, k64, nil, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, n, d, 2)
			return true
		},
		decode: func(_ RowCodec, dst []float32, src []byte, stride, n, d int) bool {
			if d%8 != 0 || !haveF16C {
				return false
			}
			decF16RowsF16C(&dst[0], &src[0], uintptr(stride), n, d)
			return true
		},
		independent: true,
	}
}
