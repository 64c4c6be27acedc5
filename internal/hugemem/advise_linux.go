package hugemem

import "syscall"

// Advise asks for transparent huge pages over b: those of its PageBytes ranges that
// lie wholly inside it get them where the kernel offers them. An error (a kernel
// without them) is ignored: the memory works with base pages.
func Advise(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
