//go:build unix

package blockmem

import "syscall"

// Supported tells whether blocks are mapped outside the Go heap on this platform.
const Supported = true

// mapChunk maps n bytes of private anonymous memory, zeroed, read-write.
func mapChunk(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

func unmapChunk(b []byte) error { return syscall.Munmap(b) }
