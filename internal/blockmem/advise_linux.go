package blockmem

import "syscall"

// adviseHuge asks for transparent huge pages over a chunk (those of its 2 MiB
// ranges that lie wholly inside it get them where the kernel offers them). An error
// (a kernel without them) is ignored: the memory works with base pages.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
