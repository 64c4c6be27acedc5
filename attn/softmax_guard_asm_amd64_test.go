//go:build linux && amd64

package attn

import (
	"syscall"
	"testing"
	"unsafe"

	"kvq/internal/cpufeat"
)

// TestSoftmaxAsmPageEnd runs the assembly softmax kernels on rows that end where an
// inaccessible page begins (and start where one ends): a read or write outside the
// row faults.
func TestSoftmaxAsmPageEnd(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	if err := syscall.Mprotect(mem[2*page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	all := unsafe.Slice((*float32)(unsafe.Pointer(&mem[page])), page/4)
	for n := 1; n <= 40; n++ {
		for _, row := range [][]float32{all[len(all)-n:], all[:n]} {
			for i := range row {
				row[i] = float32(i%7) - 3
			}
			m := maxRowAsm(row)
			expRowAsm(row, 0x40400000) // m = 3
			if m != 3 && n >= 7 {
				t.Fatalf("n=%d: max %v, want 3", n, m)
			}
		}
	}
}
