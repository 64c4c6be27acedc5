package blockmem

import "syscall"

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14).
const madvPopulateWrite = 23

// populate faults in the pages that hold b for writing (MADV_POPULATE_WRITE), their
// contents unchanged. It fails on kernels before 5.14 (EINVAL).
func populate(b []byte) error {
	lo, hi := pageRange(b)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvPopulateWrite)
	if errno != 0 {
		return errno
	}
	return nil
}
