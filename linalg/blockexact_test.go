package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
)

// blockRefs are the scalar references of the types with exact kernels, and their
// block sizes.
var blockRefs = map[gguf.TensorType]struct {
	bytes int
	dot   func(w []byte, xq []int8, xd []float32) float32
}{
	gguf.TypeQ4_0: {q4BlockBytes, dotQ4Scalar},
	gguf.TypeQ5_0: {q5BlockBytes, dotQ5Scalar},
}

// TestBlockExactTwins checks every kernel set's exact kernels of Q4_0 and Q5_0
// (exactBlocks) against the type's scalar reference bit for bit, for one token and
// for many: row counts with and without a partial 4-row tile or group of eight, 1 to
// 65 blocks, token counts from 1 to 40 (partial 16-token groups), rows with a gap after
// them, codes at both ends of their range (every nibble and fifth bit 0, then 1), and
// out values outside the results left alone.
func TestBlockExactTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for _, k := range kernelModes(t) {
		for typ, ek := range k.exactBlocks {
			ref, ok := blockRefs[typ]
			if !ok {
				t.Fatalf("%s: exact kernels of %v, which has no reference here", k.name, typ)
			}
			checkExactTwin(t, r, exactTwin{
				name: fmt.Sprintf("%s/%v", k.name, typ), kernel: "rows kernel", tokensName: "many-token kernel", refName: "reference",
				blockBytes: ref.bytes, ref: ref.dot, rows: ek.rows, tokens: ek.tokens,
				extreme: func(blk []byte, b int) { // every code at its least, or at its greatest
					fill := byte(0xff * (b / 3 % 2))
					for j := 2; j < len(blk); j++ {
						blk[j] = fill
					}
				},
			}, []exactCase{
				{8, 1, 0, 1}, {16, 24, 0, 3}, {9, 13, 0, 7}, {13, 8, 6, 16}, {4, 2, 0, 17}, {21, 65, 2, 40}, {3, 5, 0, 33}, {32, 24, 0, 32},
			})
		}
	}
}

// exactCase is one shape an exact kernel is checked at: rows of nb blocks with gap
// bytes after each row, multiplied with n tokens.
type exactCase struct{ rows, nb, gap, n int }

// exactTwin is a block type's scalar reference and the kernels that must compute its
// sums bit for bit: rows for one token, tokens for many.
type exactTwin struct {
	name                        string // the kernel set and type, for subtest names
	kernel, tokensName, refName string // the three, for failure messages
	blockBytes                  int
	ref                         func(w []byte, xq []int8, xd []float32) float32
	rows                        func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)
	tokens                      tokensKernel
	extreme                     func(blk []byte, b int) // sets the codes of every third block b to extremes
	tables                      bool                    // tokens also with row tables made per call, then reused
}

// checkExactTwin checks tw.rows and tw.tokens against tw.ref bit for bit at every case
// (random blocks with finite scales, every third block's codes set by tw.extreme), and
// that neither writes out values outside its results.
func checkExactTwin(t *testing.T, r *rand.Rand, tw exactTwin, cases []exactCase) {
	t.Helper()
	for _, tc := range cases {
		name := fmt.Sprintf("%s/rows=%d/nb=%d/gap=%d/n=%d", tw.name, tc.rows, tc.nb, tc.gap, tc.n)
		cols, rb := tc.nb*blockElems, tc.nb*tw.blockBytes+tc.gap
		w := make([]byte, tc.rows*rb)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for i := 0; i < tc.rows; i++ {
			for b := 0; b < tc.nb; b++ {
				o := i*rb + b*tw.blockBytes
				w[o], w[o+1] = byte(r.Uint32()), halfHigh(r)
				if b%3 == 0 {
					tw.extreme(w[o:o+tw.blockBytes], b)
				}
			}
		}
		xt, xsum := testTokens(r, tc.n, tc.nb)
		xq, xd := xt.xq, xt.xd
		want := make([]float32, tc.n*tc.rows)
		for tok := 0; tok < tc.n; tok++ {
			for i := 0; i < tc.rows; i++ {
				want[tok*tc.rows+i] = tw.ref(w[i*rb:i*rb+tc.nb*tw.blockBytes], xq[tok*cols:(tok+1)*cols], xd[tok*tc.nb:(tok+1)*tc.nb])
			}
		}
		t.Run(name, func(t *testing.T) {
			got := make([]float32, tc.rows+2)
			for tok := 0; tok < tc.n; tok++ {
				got[0], got[tc.rows+1] = -7, -7
				tw.rows(got[1:tc.rows+1], w, rb, xq[tok*cols:(tok+1)*cols], xd[tok*tc.nb:(tok+1)*tc.nb], xsum[tok*tc.nb:(tok+1)*tc.nb])
				if got[0] != -7 || got[tc.rows+1] != -7 {
					t.Fatalf("%s wrote outside its rows", tw.kernel)
				}
				for i := 0; i < tc.rows; i++ {
					if math.Float32bits(got[1+i]) != math.Float32bits(want[tok*tc.rows+i]) {
						t.Fatalf("%s token %d row %d: %v, %s %v", tw.kernel, tok, i, got[1+i], tw.refName, want[tok*tc.rows+i])
					}
				}
			}
			// A leading stride of rows+3: the 3 values after each token's rows must
			// stay untouched.
			ldo := tc.rows + 3
			var out []float32
			tabs, all := []*rowTables{nil}, Matrix{}
			if tw.tables {
				tab := &rowTables{}
				tabs, all = []*rowTables{nil, tab, tab}, Matrix{Rows: tc.rows, Data: w}
			}
			for _, tb := range tabs {
				out = tokensOut(tc.n, ldo)
				tw.tokens(out, ldo, w, rb, tc.rows, xt, tb, all, 0)
				checkTokensOut(t, tw.tokensName, tw.refName, out, ldo, tc.rows, tc.n, func(tok int) []float32 {
					return want[tok*tc.rows : (tok+1)*tc.rows]
				})
			}
		})
	}
}

// testTokens returns n random tokens of nb blocks quantized as matMul quantizes them
// (the pack's xq and xd, and their per-block code sums) and packed into every pack of
// packTokens, whose code words are random before packing: packTokens must fill every
// lane a kernel reads.
func testTokens(r *rand.Rand, n, nb int) (tokenPack, []int32) {
	x := randVals(r, n*nb*blockElems, 1)
	xq, xd, xsum := make([]int8, len(x)), make([]float32, n*nb), make([]int32, n*nb)
	quantQ8Scalar(xq, xd, x)
	blockSums(xsum, xq)
	np := (n + tokenGroup - 1) / tokenGroup * tokenGroup * nb
	pk := tokenPack{n: n, nb: nb, xq: xq, xd: xd, xp: make([]uint32, 8*np), xps: make([]uint32, 8*np),
		xdp: make([]float32, np), xsp: make([]int32, np)}
	for i := range pk.xp {
		pk.xp[i], pk.xps[i] = r.Uint32(), r.Uint32()
	}
	packTokens(active.Load(), &pk, xsum, 0, n)
	return pk, xsum
}

// tokensOut returns out for a many-token kernel writing rows values for each of n
// tokens at stride ldo, every value set to −7 so that checkTokensOut sees writes past
// the rows.
func tokensOut(n, ldo int) []float32 {
	out := make([]float32, n*ldo)
	for i := range out {
		out[i] = -7
	}
	return out
}

// checkTokensOut checks out (from tokensOut) after a many-token kernel named kernel
// wrote it: token tok's rows bit for bit want(tok) (ref names where want comes from),
// the values after them untouched.
func checkTokensOut(t *testing.T, kernel, ref string, out []float32, ldo, rows, n int, want func(tok int) []float32) {
	t.Helper()
	for tok := range n {
		wt := want(tok)
		for i := range ldo {
			v := out[tok*ldo+i]
			if i >= rows {
				if v != -7 {
					t.Fatalf("%s wrote token %d value %d past its rows", kernel, tok, i)
				}
				continue
			}
			if math.Float32bits(v) != math.Float32bits(wt[i]) {
				t.Fatalf("%s token %d row %d: %v, %s %v", kernel, tok, i, v, ref, wt[i])
			}
		}
	}
}
