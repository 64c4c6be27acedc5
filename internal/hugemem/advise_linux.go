package hugemem

import (
	"errors"
	"fmt"
	"syscall"
)

// Advise asks for transparent huge pages over b: those of its PageBytes ranges that
// lie wholly inside it get them where the kernel offers them. An error (a kernel
// without them) is ignored: the memory works with base pages.
func Advise(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }

// madvCollapse is MADV_COLLAPSE (Linux 6.1): make the range's huge pages now,
// whatever the system's THP setting.
const madvCollapse = 25

// Collapse makes b (PageBytes aligned, a multiple of PageBytes long) huge pages now,
// copying what is resident and zeroing the rest. It fails, with an error wrapping
// errors.ErrUnsupported, on kernels without MADV_COLLAPSE (before Linux 6.1), and
// where no huge page is free.
func Collapse(b []byte) error {
	err := syscall.Madvise(b, madvCollapse)
	if errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("hugemem: MADV_COLLAPSE: %w (%w)", errors.ErrUnsupported, err)
	}
	return err
}
