package blockmem

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestFaultResident: after Fault (and after the page-touching it falls back to)
// every page of a fresh mapping is resident; before, none is. (The mapping is
// made as Alloc makes its chunks, without the huge pages Alloc may make at once.)
func TestFaultResident(t *testing.T) {
	for _, tc := range faulters {
		mem, mapping, err := mapChunk(6 << 20)
		if err != nil {
			t.Fatal(err)
		}
		b := mem[4096+10:] // not page aligned: the page holding b[0] is b's too
		if n := resident(t, b); n != 0 {
			t.Errorf("%s: %d pages resident before any write", tc.name, n)
		}
		tc.f(b)
		lo, hi := pageRange(b)
		if n, want := resident(t, b), int((hi-lo)/uintptr(pageBytes)); n != want {
			t.Errorf("%s: %d of %d pages resident", tc.name, n, want)
		}
		if err := unmapChunk(mapping); err != nil {
			t.Fatal(err)
		}
	}
}

// resident counts the resident pages of those holding b (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	lo, hi := pageRange(b)
	vec := make([]byte, (hi-lo)/uintptr(pageBytes))
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, lo, hi-lo, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
