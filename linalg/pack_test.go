package linalg

import (
	"math/rand/v2"
	"testing"
)

// TestPack8: every kernel set's pack8 writes the scalar reference's words, for either
// flip and for row strides of packed codes and of scales, and no others.
func TestPack8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct{ stride, n int }{{8, 1}, {16, 2}, {24, 3}, {192, 24}, {512, 64}, {8, 1}, {24, 3}, {64, 8}, {70, 8}} {
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
