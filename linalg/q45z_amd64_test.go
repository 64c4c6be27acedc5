package linalg

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"kvq/internal/cpufeat"
)

// TestExpandTwins checks q4ExpandZ and q5ExpandZ against their scalar twins byte for
// byte over random blocks, and that they write nothing past the blocks they are given.
func TestExpandTwins(t *testing.T) {
	if !cpufeat.AVX512VNNI || !cpufeat.F16C {
		t.Skip("no AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(91, 92))
	for _, tc := range []struct {
		name       string
		blockBytes int
		asm        func(dst, w *byte, blocks int)
		ref        expandFunc
	}{{"Q4_0", q4BlockBytes, q4ExpandZ, q4ExpandScalar}, {"Q5_0", q5BlockBytes, q5ExpandZ, q5ExpandScalar}} {
		for _, blocks := range []int{1, 2, 7, 64} {
			w := make([]byte, blocks*tc.blockBytes)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			want := make([]byte, blocks*q8BlockBytes+5)
			got := bytes.Repeat([]byte{0xa5}, len(want))
			copy(want[blocks*q8BlockBytes:], got[blocks*q8BlockBytes:])
			tc.ref(want, w, blocks)
			tc.asm(&got[0], &w[0], blocks)
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %d blocks: the expansion differs from its twin\n got %x\nwant %x", tc.name, blocks, got, want)
			}
		}
	}
}
