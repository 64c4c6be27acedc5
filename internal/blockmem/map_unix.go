//go:build unix

package blockmem

import (
	"syscall"
	"unsafe"

	"kvq/internal/hugemem"
)

// Supported tells whether blocks are mapped outside the Go heap on this platform.
const Supported = true

// mapChunk maps n bytes of private anonymous memory, zeroed, read-write, starting on
// a huge page boundary, so that each whole huge page of the chunk can be one (see
// Arena). It returns the chunk and the mapping that holds it, for unmapChunk: up to
// a huge page more, never touched.
func mapChunk(n int) (chunk, mapping []byte, err error) {
	m, err := syscall.Mmap(-1, 0, n+hugemem.PageBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(m))) & (hugemem.PageBytes - 1))
	return m[off : off+n : off+n], m, nil
}

func unmapChunk(mapping []byte) error { return syscall.Munmap(mapping) }
