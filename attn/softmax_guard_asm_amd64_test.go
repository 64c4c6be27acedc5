//go:build linux && amd64

package attn

import (
	"testing"

	"kvq/internal/cpufeat"
	"kvq/internal/guardpage"
)

// TestSoftmaxAsmPageEnd runs the assembly softmax kernels on rows that end where an
// inaccessible page begins (and start where one ends): a read or write outside the
// row faults.
func TestSoftmaxAsmPageEnd(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	all := guardpage.Floats(t)
	for n := 1; n <= 70; n++ {
		for _, row := range [][]float32{all[len(all)-n:], all[:n]} {
			for i := range row {
				row[i] = float32(i%7) - 3
			}
			m := maxRowAsm(row)
			for _, k := range expRowKernels() {
				k.f(row, 0x40400000) // m = 3
			}
			if m != 3 && n >= 7 {
				t.Fatalf("n=%d: max %v, want 3", n, m)
			}
		}
	}
}
