package gguf

import (
	"os"
	"syscall"
)

// dropPages tells the kernel that the whole pages of the mapped bytes b will not be
// read again, so that they leave the process's resident set (a later read would map
// them again from the page cache). Errors are ignored: it only saves memory.
func dropPages(b []byte) {
	n := len(b) &^ (os.Getpagesize() - 1)
	if n > 0 {
		_ = syscall.Madvise(b[:n], syscall.MADV_DONTNEED)
	}
}
