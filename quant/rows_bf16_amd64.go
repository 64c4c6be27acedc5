//go:build amd64

package quant

import "unsafe"

// The BF16 row kernels in rows_bf16_amd64.s: the F16 kernels' loops with bfloat16
// values widened exactly by VPMOVZXWD and a 16-bit shift (no F16C needed), d a
// multiple of 16. Both amd64 kernel sets use them.

// dotBF16R4asm is the r4Kernel of BF16 rows.
//
//go:noescape
func dotBF16R4asm(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// dotBF16Q4asm is dotF16Q4 for BF16 rows: out + 4i + r·ldb gets the score of the
// query at q + r·qs with the row at src + i·stride, for i < n and r < 4.
//
//go:noescape
func dotBF16Q4asm(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)

// dotBF16Q4Z is dotBF16Q4asm as dotF16Q4Z is dotF16Q4 (the same scores bit for bit;
// hdr 0, mul 1).
//
//go:noescape
func dotBF16Q4Z(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, hdr uintptr, mul float32)

// dotBF16Quad is dotF16Quad for BF16 rows.
func dotBF16Quad(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
	quadDot(dotBF16Q4asm, dotBF16Q4Zq, out, ldb, q, qs, src, stride, n, d)
}

// dotBF16Q4Zq is dotBF16Q4Z in quadDotKernel's shape.
func dotBF16Q4Zq(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr) {
	dotBF16Q4Z(out, ldb, q, qs, src, stride, n, d, 0, 1)
}

// addBF16Q1x64asm is the 64-column q1Kernel of bfloat16 values.
//
//go:noescape
func addBF16Q1x64asm(acc, w, src unsafe.Pointer, stride uintptr, n int)

// addBF16Q1x16asm is the 16-column q1Kernel of bfloat16 values.
//
//go:noescape
func addBF16Q1x16asm(acc, w, src unsafe.Pointer, stride uintptr, n int)

// BF16 rows: fused kernels for d a multiple of 16, the decoder for multiples of 8.
func init() {
	bf16Kernels = rowKernels{
		dot: func(_ RowCodec, scores []float32, ld int, q []float32, g int, src []byte, stride, n, d int, _ []float32) bool {
			if d%16 != 0 {
				return false
			}
			dotRowsFused(dotBF16Quad, dotBF16R4asm, scores, ld, q, g, src, stride, n, d)
			return true
		},
		add: func(_ RowCodec, acc, w []float32, ld, g int, src []byte, stride, n, d int, _ []float32) bool {
			if d%16 != 0 {
				return false
			}
			addRowsFused(addBF16Q4asm, addBF16Q4Z, addBF16Q1x64asm, addBF16Q1x16asm, acc, unsafe.Pointer(&w[0]), uintptr(4*ld), g, unsafe.Pointer(&src[0]), stride, n, d, 2)
			return true
		},
		decode: func(_ RowCodec, dst []float32, src []byte, stride, n, d int) bool {
			if d%8 != 0 {
				return false
			}
			decBF16RowsAsm(&dst[0], &src[0], uintptr(stride), n, d)
			return true
		},
		independent: true,
	}
}
