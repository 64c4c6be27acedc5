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
