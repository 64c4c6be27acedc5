package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPack8: every kernel set's pack8 writes the scalar reference's words, for either
// flip and for row strides of packed codes and of scales, and no others.
func TestPack8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	// Codes of nb blocks: stride 8·nb, n = nb; scales: stride nb, n = nb/8 (nb 8, 24, 64,
	// 70).
	for _, c := range []struct{ stride, n int }{{8, 1}, {16, 2}, {24, 3}, {192, 24}, {512, 64}, {64, 8}, {70, 8}} {
		src := make([]uint32, 7*c.stride+8*c.n+3)
		for i := range src {
			src[i] = r.Uint32()
		}
		for _, flip := range []uint32{0, 0x80808080} {
			want := make([]uint32, 128*c.n+5)
			for i := range want {
				want[i] = r.Uint32()
			}
			pack8Scalar(want, src, c.stride, c.n, flip)
			for _, k := range kernelModes(t) {
				got := make([]uint32, len(want))
				for i := range got {
					if i%tokenGroup < 8 && i < 128*c.n {
						got[i] = ^want[i] // each word the kernel must write starts wrong
					} else {
						got[i] = want[i]
					}
				}
				k.pack8(got, src, c.stride, c.n, flip)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s stride %d n=%d flip=%#x: word %d = %#x, want %#x", k.name, c.stride, c.n, flip, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestPackTokensLayout: every kernel set's packTokens puts each token's codes, scales
// and code sums where its doc says, with the range packed in pieces (as the threads of
// a call pack it: runs of 8 tokens and tokens alone), for block counts with and without
// a multiple of 8, and fills the last group's lanes past n with codes 0 (xp: 0x80
// bytes), scale 0 and sum 0, whatever the packs held before.
func TestPackTokensLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct {
		n, nb int
		cuts  []int // the ends of the pieces before the last, which ends at n
	}{
		{7, 2, nil}, {8, 1, nil}, {13, 13, []int{5}}, {16, 8, []int{8}}, {33, 24, []int{8, 16, 24, 32}},
		{40, 19, []int{3, 16, 27}}, {64, 9, []int{32}},
	} {
		for _, k := range kernelModes(t) {
			pk, xsum := testTokens(r, c.n, c.nb)
			for i := range pk.xp {
				pk.xp[i], pk.xps[i] = r.Uint32(), r.Uint32()
			}
			for i := range pk.xdp {
				pk.xdp[i], pk.xsp[i] = r.Float32()+1, int32(r.Uint32())
			}
			t0 := 0
			for _, t1 := range append(c.cuts, c.n) {
				packTokens(k, &pk, xsum, t0, t1)
				t0 = t1
			}
			nb := c.nb
			for g := range (c.n + tokenGroup - 1) / tokenGroup {
				for b := range nb {
					for l := range tokenGroup {
						u := g*tokenGroup + l
						var code [8]uint32
						var xd float32
						var xs int32
						if u < c.n {
							for j := range 32 {
								code[j/4] |= uint32(uint8(pk.xq[(u*nb+b)*blockElems+j])) << (8 * (j % 4))
							}
							xd, xs = pk.xd[u*nb+b], xsum[u*nb+b]
						}
						where := fmt.Sprintf("%s n=%d nb=%d cuts %v: token %d block %d", k.name, c.n, nb, c.cuts, u, b)
						for j, w := range code {
							o := ((g*nb+b)*8+j)*tokenGroup + l
							if pk.xp[o] != w^0x80808080 || pk.xps[o] != w {
								t.Fatalf("%s dword %d: xp %#x, xps %#x, want %#x, %#x", where, j, pk.xp[o], pk.xps[o], w^0x80808080, w)
							}
						}
						o := (g*nb+b)*tokenGroup + l
						if math.Float32bits(pk.xdp[o]) != math.Float32bits(xd) || pk.xsp[o] != xs {
							t.Fatalf("%s: xdp %v, xsp %d, want %v, %d", where, pk.xdp[o], pk.xsp[o], xd, xs)
						}
					}
				}
			}
		}
	}
}
