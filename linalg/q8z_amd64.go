//go:build amd64

package linalg

// The Q8_0 kernels with AVX-512 VNNI (q8z_amd64.s): dotQ8RowsScalar's and
// dotQ8TokensScalar's sums bit for bit, for one token and for many.

// q8Rows1Z writes to out[r] the dotQ8Scalar sum of the Q8_0 row of nb blocks at
// w+r·rowBytes, for r < rows; xsum[b] is the sum of the codes of activation block b.
//
//go:noescape
func q8Rows1Z(out *float32, w *byte, rowBytes, rows int, xq *int8, xd *float32, xsum *int32, nb int)

// q8PrepZ writes the table q8TokensZ and q8Tokens8Z read for the Q8_0 rows at
// w+r·rowBytes, r < rows (a multiple of 4), in 8-row tiles (the last may have 4): for
// row i of a tile and block b, at (tile·nb+b)·8+i, the block's binary16 scale in the
// low 16 bits and −Σ codes in the high 16: 4 bytes per 32 weights.
//
//go:noescape
func q8PrepZ(tab *uint32, w *byte, rowBytes, rows, nb int)

// q8TokensZ multiplies the 4 Q8_0 rows at w (their entries of a q8PrepZ table as
// q8UnpackZ unpacks them, at tab, 64 bytes a block) by groups 16-token groups packed
// by packTokens, storing row i of token 16g+t at out[(16g+t)·ldo+i]: all 16 tokens of
// each group but the last, last of it.
//
//go:noescape
func q8TokensZ(out *float32, ldo int, w *byte, rowBytes int, tab *uint32, xp *uint32, xdp *float32, nb, groups, last int)

// q8UnpackZ writes each 4 entries of the q8PrepZ table at tab (n of them, a multiple
// of 4) to dst at twice their offset, as q8TokensZ reads them: their scales as
// float32, then −128·Σcode as int32. Done once per call, so that q8TokensZ does not
// widen them again for every pair of groups.
//
//go:noescape
func q8UnpackZ(dst, tab *uint32, n int)

// q8Tokens8Z is q8TokensZ for tiles ≥ 1 consecutive 8-row tiles of a q8PrepZ table,
// tile after tile, and one group, of which the first last tokens are stored. It
// prefetches the 8 rows after the next 8 in memory order, pfstep bytes a block.
//
//go:noescape
func q8Tokens8Z(out *float32, ldo int, w *byte, rowBytes int, tab *uint32, xp *uint32, xdp *float32, nb, last, pfstep, tiles int)

// q8Tokens8Y is q8Tokens8Z for a group of at most 8 tokens (last ≤ 8), on YMM
// registers.
//
//go:noescape
func q8Tokens8Y(out *float32, ldo int, w *byte, rowBytes int, tab *uint32, xp *uint32, xdp *float32, nb, last, pfstep, tiles int)

// dotQ8RowsZ is dotQ8RowsScalar, bit for bit, by q8Rows1Z.
func dotQ8RowsZ(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	nb := len(xd)
	if nb == 0 {
		clear(out)
		return
	}
	if len(out) == 0 {
		return
	}
	_ = w[(len(out)-1)*rowBytes+nb*q8BlockBytes-1]
	_ = xq[nb*blockElems-1]
	_ = xsum[nb-1]
	q8Rows1Z(&out[0], &w[0], rowBytes, len(out), &xq[0], &xd[0], &xsum[0], nb)
}

// dotQ8TokensZ is dotQ8TokensScalar, bit for bit: 8- and 4-row tiles by q8TokensZ and
// q8Tokens8Z, the rows left token by token by dotQ8Scalar. The tiles' table (q8PrepZ)
// comes from tab, made for the whole matrix all at its first use, when r0 is a
// multiple of 8; else it is made into scratch for this call.
func dotQ8TokensZ(out []float32, ldo int, w []byte, rowBytes, rows int, xt tokenPack, tab *rowTables, all Matrix, r0 int) {
	nb, n := xt.nb, xt.n
	if !tokensWork(out, ldo, rows, n, nb) {
		return
	}
	r4 := rows &^ 3
	groups := (n + 15) / 16
	if r4 > 0 {
		_ = w[(r4-1)*rowBytes+nb*q8BlockBytes-1]
		_ = out[(n-1)*ldo+r4-1]
		_ = xt.xp[groups*nb*128-1]
		_ = xt.xdp[groups*nb*16-1]
		var ent []uint32
		if tab != nil && r0%8 == 0 {
			tab.once.Do(func() {
				ra := all.Rows &^ 3
				tab.ent = make([]uint32, prepEntries(ra, nb))
				if ra > 0 {
					q8PrepZ(&tab.ent[0], &all.Data[0], rowBytes, ra, nb)
				}
			})
			ent = tab.ent[r0*nb:]
		} else {
			sp := prepPool.get(prepEntries(r4, nb))
			defer prepPool.put(sp)
			ent = *sp
			q8PrepZ(&ent[0], &w[0], rowBytes, r4, nb)
		}
		_ = ent[prepEntries(r4, nb)-1]
		// at(i) is the table of the 4 or 8 rows from row i, a multiple of 4.
		at := func(i int) *uint32 { return &ent[(i&^7)*nb+i&4] }
		last := n - 16*(groups-1)
		// From 4 groups, groups in pairs by 4-row tiles (a group left over by 8-row
		// tiles); up to 3 groups each by 8-row tiles (see group).
		pairs := groups &^ 1
		if groups <= 3 {
			pairs = 0
		}
		pairLast := 16
		if pairs == groups {
			pairLast = last
		}
		var un []uint32 // the table unpacked for q8TokensZ
		if pairs > 0 || r4%8 != 0 {
			up := prepPool.get(2 * prepEntries(r4, nb))
			defer prepPool.put(up)
			un = *up
			q8UnpackZ(&un[0], &ent[0], prepEntries(r4, nb))
		}
		// unpacked(i) is un's table of the 4 rows from row i, a multiple of 4.
		unpacked := func(i int) *uint32 { return &un[2*((i&^7)*nb+i&4)] }
		pfstep := (8*rowBytes + nb - 1) / nb
		// group multiplies group g by q8Tokens8Z (q8Tokens8Y for at most 8 tokens) over
		// the tiles whole 8-row tiles from row i in one call, or, tiles 0, by q8TokensZ
		// over the 4 rows from row i.
		group := func(g, i, tiles int) {
			o, xp, xdp, gl := &out[16*g*ldo+i], &xt.xp[g*nb*128], &xt.xdp[g*nb*16], 16
			if g == groups-1 {
				gl = last
			}
			switch {
			case tiles > 0 && gl <= 8:
				q8Tokens8Y(o, ldo, &w[i*rowBytes], rowBytes, at(i), xp, xdp, nb, gl, pfstep, tiles)
			case tiles > 0:
				q8Tokens8Z(o, ldo, &w[i*rowBytes], rowBytes, at(i), xp, xdp, nb, gl, pfstep, tiles)
			default:
				q8TokensZ(o, ldo, &w[i*rowBytes], rowBytes, unpacked(i), xp, xdp, nb, 1, gl)
			}
		}
		if pairs == 0 {
			// Up to 3 groups (decode steps of up to 48 sequences): each through all
			// the whole tiles in one call. A call per tile, the groups of a tile in
			// turn while it is in L1, cost more CPU time (llama-134m Q8_0: 2-4% at 8
			// and 16 tokens, 7-8% at 24 and 32), and 3 groups as a pair and a group
			// left over 7-8% more at 36 to 48 tokens; from 64 tokens pairs cost the
			// same or less.
			for g := range groups {
				if r4 >= 8 {
					group(g, 0, r4/8)
				}
				if r4%8 != 0 {
					group(g, r4&^7, 0)
				}
			}
		} else {
			for i := 0; i < r4; i += 8 {
				for j := i; j < min(r4, i+8); j += 4 {
					q8TokensZ(&out[j], ldo, &w[j*rowBytes], rowBytes, unpacked(j),
						&xt.xp[0], &xt.xdp[0], nb, pairs, pairLast)
				}
				if pairs < groups {
					group(groups-1, i, min(1, (r4-i)/8))
				}
			}
		}
	}
	for r := r4; r < rows; r++ {
		row := w[r*rowBytes : r*rowBytes+nb*q8BlockBytes]
		for t := range n {
			out[t*ldo+r] = dotQ8Scalar(row, xt.xq[t*nb*blockElems:(t+1)*nb*blockElems], xt.xd[t*nb:(t+1)*nb])
		}
	}
}

// prepEntries is the length of a q8PrepZ table of rows rows (a multiple of 4) of nb
// blocks: whole 8-row tiles.
func prepEntries(rows, nb int) int { return (rows + 7) &^ 7 * nb }

// prepPool holds the q8PrepZ tables made per call.
var prepPool scratch[uint32]
