//go:build unix

package hugemem

import (
	"fmt"
	"syscall"
	"unsafe"
)

func mapAnon(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("hugemem: mapping %d bytes: %w", n, err)
	}
	return b, nil
}

func unmap(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("hugemem: unmapping %d bytes: %w", len(b), err)
	}
	return nil
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
