//go:build unix

package gguf

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only. It falls back to reading the file for empty files and
// where mmap fails. unmap is nil when nothing was mapped.
func mapFile(path string) (data []byte, unmap func() error, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size <= 0 || !st.Mode().IsRegular() || int64(int(size)) != size {
		return readWhole(path)
	}
	data, err = syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readWhole(path)
	}
	return data, func() error {
		if err := syscall.Munmap(data); err != nil {
			return fmt.Errorf("gguf: munmap %s: %w", path, err)
		}
		return nil
	}, nil
}
