//go:build amd64

package linalg

// The Q4_0 and Q5_0 kernels with AVX-512 VNNI (q45z_amd64.s): dotQ4Scalar's and
// dotQ5Scalar's sums bit for bit, for one token and for many.

// q4Rows1Z writes to out[r] the dotQ4Scalar sum of the Q4_0 row of nb blocks at
// w+r·rowBytes, for r < rows; xsum[b] is the sum of the codes of activation block b.
//
//go:noescape
func q4Rows1Z(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nb int)

// q5Rows1Z is q4Rows1Z for Q5_0 rows (dotQ5Scalar).
//
//go:noescape
func q5Rows1Z(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nb int)

// q4ExpandZ writes the blocks Q4_0 blocks at w as Q8_0 blocks at dst (q4ExpandScalar).
//
//go:noescape
func q4ExpandZ(dst, w *byte, blocks int)

// q5ExpandZ writes the blocks Q5_0 blocks at w as Q8_0 blocks at dst (q5ExpandScalar).
//
//go:noescape
func q5ExpandZ(dst, w *byte, blocks int)

// rows1Z is the Go side of q4Rows1Z and q5Rows1Z for blocks of blockBytes.
func rows1Z(kernel func(*float32, *byte, int, int, *int8, *float32, *int32, int), blockBytes int,
	out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	nb := len(xd)
	if !rowsWork(out, w, rowBytes, xq, nb, blockBytes, blockElems) {
		return
	}
	_ = xsum[nb-1]
	kernel(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], &xsum[0], nb)
}

// dotQ4RowsZ is dotQ4RowsScalar, bit for bit, by q4Rows1Z.
func dotQ4RowsZ(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	rows1Z(q4Rows1Z, q4BlockBytes, out, w, rowBytes, xq, xd, xsum)
}

// dotQ5RowsZ is dotQ5RowsScalar, bit for bit, by q5Rows1Z.
func dotQ5RowsZ(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	rows1Z(q5Rows1Z, q5BlockBytes, out, w, rowBytes, xq, xd, xsum)
}

// expandZ wraps an expansion kernel as an expandFunc.
func expandZ(kernel func(dst, w *byte, blocks int)) expandFunc {
	return func(dst, w []byte, blocks int) {
		if blocks > 0 {
			kernel(&dst[0], &w[0], blocks)
		}
	}
}

// The many-token kernels of Q4_0 and Q5_0 with AVX-512 VNNI: the rows expanded by
// q4ExpandZ and q5ExpandZ, then multiplied by dotQ8TokensZ.
var (
	dotQ4TokensZ = expandedTokens(q4BlockBytes, expandZ(q4ExpandZ), dotQ8TokensZ)
	dotQ5TokensZ = expandedTokens(q5BlockBytes, expandZ(q5ExpandZ), dotQ8TokensZ)
)
