package blockmem

import (
	"os"
	"sync/atomic"
	"unsafe"

	"kvq/internal/hugemem"
)

// pageBytes is the base page size: Fault touches one word of each page.
var pageBytes = os.Getpagesize()

// Fault makes b's pages resident and writable now, as first writes would, without
// changing b's contents: the page faults, and the kernel's zeroing of fresh pages,
// happen here rather than in whoever writes b first. b is memory from Alloc (or any
// memory of this process); nothing may write b concurrently. On Linux 5.14 and later
// the kernel populates the range (MADV_POPULATE_WRITE, huge pages where the range is
// advised for them); elsewhere one word of each page is written with its own value.
func Fault(b []byte) {
	if len(b) == 0 || populate(b) == nil {
		return
	}
	touch(b)
}

// Fault faults in b, memory of blocks a handed out, as the package's Fault does, in
// huge pages where the kernel makes them: the huge pages b touches within its chunk
// are advised for them first, so that faulting b in makes each a huge page at once,
// zeroed whole (memory of the chunk beyond b included: blocks handed out next).
// Without that, a chunk that is not advised (see Arena) gets base pages, a fault
// for each, which Alloc's collapse later copies into a huge page.
func (a *Arena) Fault(b []byte) {
	if c := a.chunkOf(b); c != nil {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
		lo, hi := pageRange(b)
		lo = max(start, lo&^(hugemem.PageBytes-1))
		hi = min(start+uintptr(len(c)), (hi+hugemem.PageBytes-1)&^(hugemem.PageBytes-1))
		hugemem.Advise(c[lo-start : hi-start])
	}
	Fault(b)
}

// chunkOf returns the chunk that holds b, or nil (memory from the heap).
func (a *Arena) chunkOf(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for i := len(a.chunks) - 1; i >= 0; i-- { // the newest first: prefaulting follows Alloc
		c := a.chunks[i]
		if start := uintptr(unsafe.Pointer(unsafe.SliceData(c))); start <= p && p+uintptr(len(b)) <= start+uintptr(len(c)) {
			return c
		}
	}
	return nil
}

// touch adds 0 to one aligned word of each page of b (an atomic add: a write the
// compiler keeps, with the word's value unchanged). Pages b covers only partly at
// either end get a word where it lies inside b.
func touch(b []byte) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for off := 0; off < len(b); {
		w := off + int(-(start+uintptr(off))&3) // the first 4-byte aligned word from off
		if w+4 > len(b) {
			return
		}
		atomic.AddUint32((*uint32)(unsafe.Pointer(&b[w])), 0)
		off += pageBytes - int((start+uintptr(off))%uintptr(pageBytes)) // the next page's start
	}
}

// pageRange is b widened to whole base pages (the pages that hold b's bytes).
func pageRange(b []byte) (lo, hi uintptr) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	ps := uintptr(pageBytes)
	return start &^ (ps - 1), (start + uintptr(len(b)) + ps - 1) &^ (ps - 1)
}
