//go:build unix

package blockmem

import (
	"syscall"

	"kvq/internal/hugemem"
)

// Supported tells whether blocks are mapped outside the Go heap on this platform.
const Supported = true

// mapChunk maps n bytes of private anonymous memory, zeroed, read-write, advised for
// huge pages (hugemem.Advise).
func mapChunk(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err == nil {
		hugemem.Advise(b)
	}
	return b, err
}

func unmapChunk(b []byte) error { return syscall.Munmap(b) }
