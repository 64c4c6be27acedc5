package hugemem

import "syscall"

// adviseHuge asks for transparent huge pages over b. An error (a kernel without them)
// is ignored: the memory works with base pages.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
