//go:build linux && amd64

package linalg

import (
	"testing"

	"kvq/internal/cpufeat"
	"kvq/internal/guardpage"
)

// TestF32AsmPageEnd runs the assembly F32 dots (one token and per row) and SiLU on
// vectors that end where an inaccessible page begins (and start where one ends): a
// read or write outside them faults.
func TestF32AsmPageEnd(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	all := guardpage.Floats(t)
	for n := 1; n <= 70; n++ {
		for i := range all {
			all[i] = 1
		}
		out := make([]float32, 3)
		dotF32TAsm(out, 1, all[:n], all[len(all)-3*n:], 3)     // tokens end at the page end
		dotF32TAsm(out[1:], 1, all[len(all)-n:], all[:2*n], 2) // the row ends there
		for i, v := range out {
			if v != float32(n) {
				t.Fatalf("n=%d: token dot %d %v, want %d", n, i, v, n)
			}
		}
		a, b := all[len(all)-n:], all[:n]
		for i := range n {
			a[i], b[i] = 1, 2
		}
		if got := dotF32FMA(a, b); got != float32(2*n) {
			t.Fatalf("n=%d: dot %v, want %d", n, got, 2*n)
		}
		siluMulAsm(a, b)
		siluMulAsm(b, a)
	}
}
