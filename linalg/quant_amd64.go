//go:build amd64

package linalg

// quantQ8Blocks is quantQ8Scalar in assembly for nb blocks of 32 values from the
// first, up to the first block the scalar twin must define (a NaN or infinite value,
// or a subnormal scale); it returns the blocks it did.
//
//go:noescape
func quantQ8Blocks(xq *int8, xd *float32, x *float32, nb int) int

// quantQ8Asm is quantQ8Scalar: the blocks by quantQ8Blocks, those it stops at by the
// scalar twin.
func quantQ8Asm(xq []int8, xd []float32, x []float32) {
	nb := len(xd)
	if nb == 0 {
		return
	}
	x = x[:nb*blockElems]
	xq = xq[:nb*blockElems]
	for b := 0; b < nb; {
		b += quantQ8Blocks(&xq[b*blockElems], &xd[b], &x[b*blockElems], nb-b)
		if b < nb {
			quantQ8Scalar(xq[b*blockElems:(b+1)*blockElems], xd[b:b+1], x[b*blockElems:(b+1)*blockElems])
			b++
		}
	}
}

// pack8 is pack8Scalar (kernelSet.pack8) with AVX2: per it, an 8×8 matrix of dwords
// transposed in registers.
//
//go:noescape
func pack8(dst, src *uint32, stride, n int, flip uint32)

// pack8Asm is pack8Scalar by pack8.
func pack8Asm(dst, src []uint32, stride, n int, flip uint32) {
	if n == 0 {
		return
	}
	_ = dst[128*(n-1)+16*7+7]
	_ = src[7*stride+8*n-1]
	pack8(&dst[0], &src[0], stride, n, flip)
}
