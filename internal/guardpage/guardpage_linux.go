package guardpage

import (
	"syscall"
	"testing"
	"unsafe"
)

// Floats returns the float32s of one page that an inaccessible page precedes and one
// follows, so that a slice ending at the end of the result, or starting at its start,
// has no readable memory beyond it. The mapping is released when tb's test ends.
// Where the fence cannot be set up, tb is skipped.
func Floats(tb testing.TB) []float32 {
	tb.Helper()
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		tb.Skip("mmap:", err)
	}
	tb.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		tb.Skip("mprotect:", err)
	}
	if err := syscall.Mprotect(mem[2*page:], syscall.PROT_NONE); err != nil {
		tb.Skip("mprotect:", err)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[page])), page/4)
}

// Bytes returns n bytes that end where an inaccessible page begins, so that no
// readable memory lies past a slice ending at the end of the result. The mapping is
// released when tb's test ends. Where the fence cannot be set up, tb is skipped.
func Bytes(tb testing.TB, n int) []byte {
	tb.Helper()
	page := syscall.Getpagesize()
	pages := (n + page - 1) / page
	mem, err := syscall.Mmap(-1, 0, (pages+1)*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		tb.Skip("mmap:", err)
	}
	tb.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[pages*page:], syscall.PROT_NONE); err != nil {
		tb.Skip("mprotect:", err)
	}
	return mem[pages*page-n : pages*page : pages*page]
}
