//go:build amd64

package linalg

// f16ToF32Z widens the n binary16 values at w (n a multiple of 16) to dst
// (f16z_amd64.s).
//
//go:noescape
func f16ToF32Z(dst *float32, w *byte, n int)

// f16TokensZ writes to res[j·16·groups+16g+t] dotF16C's sum of row j of w0, w1, w2
// (widened; their first cols32 values, a multiple of 32 and ≥ 32) with token t of
// group g of xt (cols values per token), for g < groups; tmp is scratch of 1536 values
// (f16z_amd64.s).
//
//go:noescape
func f16TokensZ(res, w0, w1, w2, xt *float32, cols, cols32, groups int, tmp *float32)

// widenF16Z is widenF16 with f16ToF32Z for whole groups of 16.
func widenF16Z(dst []float32, w []byte) {
	n := len(dst) &^ 15
	if n > 0 {
		_ = w[2*n-1]
		f16ToF32Z(&dst[0], &w[0], n)
	}
	widenF16(dst[n:], w[2*n:])
}

// dotF16TokensZ is dotF16F16C for every row and token, bit for bit: the rows widened
// once, then per token block a row's first whole 32s of columns by f16TokensZ over
// the block's groups, the rest per token by dotF16Tail, added after as dotF16F16C
// adds it.
func dotF16TokensZ(out []float32, ldo int, w []byte, rowBytes, rows int, xt, x []float32, cols, n, tb int) {
	if !tokensWork(out, ldo, rows, n, cols) {
		return
	}
	cols32 := cols &^ 31
	groups := (n + tokenGroup - 1) / tokenGroup
	_ = out[(n-1)*ldo+rows-1]
	_ = w[(rows-1)*rowBytes+2*cols-1]
	_ = xt[groups*tokenGroup*cols-1]
	wfp := f16Pool.get(rows * cols)
	defer f16Pool.put(wfp)
	wf := *wfp
	for r := range rows {
		widenF16Z(wf[r*cols:(r+1)*cols], w[r*rowBytes:r*rowBytes+2*cols])
	}
	bufp := f32Scratch.get(3*tb + 1536)
	defer f32Scratch.put(bufp)
	res, tmp := (*bufp)[:3*tb], (*bufp)[3*tb:3*tb+1536]
	for t0 := 0; t0 < n; t0 += tb {
		t1 := min(n, t0+tb)
		g0, ng := t0/tokenGroup, (t1-t0+tokenGroup-1)/tokenGroup
		// Rows three at a time (the last of fewer repeated), each load of the tokens'
		// values serving three rows.
		for r := 0; r < rows; r += 3 {
			if cols32 > 0 {
				r1, r2 := min(r+1, rows-1), min(r+2, rows-1)
				f16TokensZ(&res[0], &wf[r*cols], &wf[r1*cols], &wf[r2*cols], &xt[g0*tokenGroup*cols], cols, cols32, ng, &tmp[0])
			}
			for j := r; j < min(rows, r+3); j++ {
				for t := t0; t < t1; t++ {
					var s float32
					if cols32 > 0 {
						s = res[(j-r)*ng*tokenGroup+t-t0]
					}
					if cols32 < cols {
						s += dotF16Tail(w[j*rowBytes+2*cols32:j*rowBytes+2*cols], x[t*cols+cols32:(t+1)*cols])
					}
					out[t*ldo+j] = s
				}
			}
		}
	}
}
