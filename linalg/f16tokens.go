package linalg

// F16 products of many tokens through a kernel set's dotF16Tokens (where it has one):
// the activations transposed once per call into 16-token groups (per group and column
// the 16 tokens' values), and each chunk's rows widened to float32 once, so that a
// weight is converted once for all the tokens instead of once per token.

// f16TokensMin is the token count from which an F16 product goes through
// dotF16Tokens: below a full 16-token group its lanes idle.
const f16TokensMin = 16

// f16TokensBlockBytes bounds the transposed activations of one token block, streamed
// once per row: they should stay in L2.
const f16TokensBlockBytes = 256 << 10

// f16TokensKernel writes to out[t·ldo+r] dotF16's sum (of its set) of the row
// w[r·rowBytes:] of cols binary16 values with token t, for r < rows and t < n, bit
// for bit: xt holds the n tokens transposed (transposeTokens), x them token-major;
// tokens go tb at a time (a multiple of 16), each block's xt streamed once per row.
type f16TokensKernel func(out []float32, ldo int, w []byte, rowBytes, rows int, xt, x []float32, cols, n, tb int)

// transposeTokens writes tokens [0, n) of x (token-major, cols values each) to xt in
// 16-token groups: xt[(g·cols+c)·16+l] = x[(16g+l)·cols+c], the last group's lanes past
// n 0.
func transposeTokens(xt, x []float32, cols, n int) {
	groups := (n + tokenGroup - 1) / tokenGroup
	for g := range groups {
		dst := xt[g*cols*tokenGroup : (g+1)*cols*tokenGroup]
		for l := range tokenGroup {
			t := g*tokenGroup + l
			if t >= n {
				for c := range cols {
					dst[c*tokenGroup+l] = 0
				}
				continue
			}
			for c, v := range x[t*cols : (t+1)*cols] {
				dst[c*tokenGroup+l] = v
			}
		}
	}
}

// f16Pool holds the transposed activations and widened rows of F16 products.
var f16Pool scratch[float32]

// chunkF16Tokens multiplies rows [r0, r1) of an F16 product by its set's
// dotF16Tokens.
func (p *product) chunkF16Tokens(r0, r1 int) {
	p.k.dotF16Tokens(p.out[r0:], p.w.Rows, p.w.Data[r0*p.rb:r1*p.rb], p.rb, r1-r0, *p.xT, p.x, p.w.Cols, p.n, p.tb)
}

// widenF16 writes the binary16 values of w to dst as float32 (exactly).
func widenF16(dst []float32, w []byte) {
	w = w[:2*len(dst)]
	for i := range dst {
		dst[i] = f16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8]
	}
}
