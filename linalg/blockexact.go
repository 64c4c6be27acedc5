package linalg

import "kvq/gguf"

// The exact kernels of Q4_0 and Q5_0: each token's sum is its type's scalar reference
// bit for bit (per block the exact integer dot I, then s = s + (d_w·xd)·float32(I), as
// dotQ8Scalar), whether it is multiplied alone or among many. Many tokens go through
// the rows expanded to Q8_0 blocks (the same scale, the codes less their offset as
// int8), whose Q8_0 product is that sum: the expansion costs a pass over the rows per
// call, which the tokens share.

// blockKernels are a kernel set's exact kernels of one 32-value block type (see
// kernelSet.exactBlocks).
type blockKernels struct {
	// rows writes to out[r] the reference sum of the row w[r·rowBytes:] with one
	// token's activations, given also their blocks' code sums xsum, for r < len(out).
	rows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)
	// tokens is the same sums for many tokens.
	tokens tokensKernel
}

// expandFunc writes the blocks 32-value blocks at w (of one type) to dst as Q8_0
// blocks of the same values: the scale copied, the codes less their offset as int8.
type expandFunc func(dst, w []byte, blocks int)

// q4ExpandScalar is the reference for q4ExpandZ: Q4_0 blocks to Q8_0 blocks.
func q4ExpandScalar(dst, w []byte, blocks int) {
	for b := range blocks {
		blk, o := (*[q4BlockBytes]byte)(w[b*q4BlockBytes:]), (*[q8BlockBytes]byte)(dst[b*q8BlockBytes:])
		o[0], o[1] = blk[0], blk[1]
		for j := range 16 {
			o[2+j] = byte(int8(blk[2+j]&0x0f) - 8)
			o[18+j] = byte(int8(blk[2+j]>>4) - 8)
		}
	}
}

// q5ExpandScalar is the reference for q5ExpandZ: Q5_0 blocks to Q8_0 blocks.
func q5ExpandScalar(dst, w []byte, blocks int) {
	for b := range blocks {
		blk, o := (*[q5BlockBytes]byte)(w[b*q5BlockBytes:]), (*[q8BlockBytes]byte)(dst[b*q8BlockBytes:])
		o[0], o[1] = blk[0], blk[1]
		for j := range blockElems {
			o[2+j] = byte(int8(q5Weight(blk, j)))
		}
	}
}

// expandedTokens returns the many-token kernel of a type of blockBytes-byte blocks
// that expands the rows by expand into scratch and multiplies them by q8, a Q8_0
// many-token kernel (its tables made per call).
func expandedTokens(blockBytes int, expand expandFunc, q8 tokensKernel) tokensKernel {
	return func(out []float32, ldo int, w []byte, rowBytes, rows int, xt tokenPack, _ *rowTables, _ Matrix, _ int) {
		nb := xt.nb
		if rows == 0 || xt.n == 0 {
			return
		}
		rb := nb * q8BlockBytes
		bufp := expandPool.get(rows * rb)
		defer expandPool.put(bufp)
		buf := *bufp
		if rowBytes == nb*blockBytes {
			expand(buf, w, rows*nb)
		} else {
			for r := range rows {
				expand(buf[r*rb:], w[r*rowBytes:], nb)
			}
		}
		q8(out, ldo, buf, rb, rows, xt, nil, Matrix{}, 0)
	}
}

// expandPool holds the Q8_0 expansions of rows.
var expandPool scratch[byte]

// dotQ4RowsXScalar and dotQ5RowsXScalar are the scalar set's exact one-token
// kernels: its rows kernels (xsum unused).
func dotQ4RowsXScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
	dotQ4RowsScalar(out, w, rowBytes, xq, xd)
}

func dotQ5RowsXScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
	dotQ5RowsScalar(out, w, rowBytes, xq, xd)
}

// scalarExactBlocks are the scalar set's exact kernels: the references, many tokens
// through the expansion twins and dotQ8TokensScalar.
var scalarExactBlocks = map[gguf.TensorType]blockKernels{
	gguf.TypeQ4_0: {dotQ4RowsXScalar, expandedTokens(q4BlockBytes, q4ExpandScalar, dotQ8TokensScalar)},
	gguf.TypeQ5_0: {dotQ5RowsXScalar, expandedTokens(q5BlockBytes, q5ExpandScalar, dotQ8TokensScalar)},
}

// blockQuantType is the table row of a 32-value block type whose kernel sets may have
// exact kernels (kernelSet.exactBlocks): with them every token goes through the exact
// one-token kernel, or from tokensMinTokens on the exact many-token one; without,
// through the set's rows and two-token kernels (rows, rows2).
func blockQuantType(t gguf.TensorType, rows func(*kernelSet) func([]float32, []byte, int, []int8, []float32),
	rows2 func(*kernelSet) func([]float32, []float32, []byte, int, []int8, []float32)) *quantType {
	return &quantType{
		sums: func(k *kernelSet) bool { _, ok := k.exactBlocks[t]; return ok },
		rows: func(k *kernelSet, out []float32, w []byte, rb int, xq []int8, xd []float32, xsum []int32) {
			if e, ok := k.exactBlocks[t]; ok {
				e.rows(out, w, rb, xq, xd, xsum)
				return
			}
			rows(k)(out, w, rb, xq, xd)
		},
		rows2: func(k *kernelSet, out0, out1 []float32, w []byte, rb int, xq []int8, xd []float32, xsum []int32) {
			if e, ok := k.exactBlocks[t]; ok {
				nb := len(xd) / 2
				e.rows(out0, w, rb, xq[:nb*blockElems], xd[:nb], xsum[:nb])
				e.rows(out1, w, rb, xq[nb*blockElems:], xd[nb:], xsum[nb:])
				return
			}
			rows2(k)(out0, out1, w, rb, xq, xd)
		},
		tokens: func(k *kernelSet) tokensKernel { return k.exactBlocks[t].tokens },
	}
}
