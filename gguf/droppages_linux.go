package gguf

import (
	"os"
	"syscall"
	"unsafe"
)

// dropPages tells the kernel that the whole pages of the mapped bytes b will not be
// read again, so that they leave the process's resident set. A later read would map
// them again from the page cache (Open) or read zeros (Load): b must not be read
// again. Errors are ignored: it only saves memory.
// Only the pages wholly inside b are dropped: b may share its first and last page with
// bytes still in use.
func dropPages(b []byte) {
	ps := uintptr(os.Getpagesize())
	if skip := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (ps - 1)); skip < len(b) {
		b = b[skip:]
	} else {
		return
	}
	if n := len(b) &^ int(ps-1); n > 0 {
		_ = syscall.Madvise(b[:n], syscall.MADV_DONTNEED)
	}
}
