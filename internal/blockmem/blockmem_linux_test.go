package blockmem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"kvq/internal/hugemem"
)

// TestHugePages: once all blocks of a whole huge page of a chunk are handed out, the
// page is a huge page; the page still being handed out is not (it holds only what
// was written). Skipped where the kernel cannot make huge pages on demand.
func TestHugePages(t *testing.T) {
	const size = 64 << 10
	a := New(size, 0)
	defer a.Release()
	first := a.Alloc()
	first[0] = 1
	if a.advise {
		t.Skip("no MADV_COLLAPSE: chunks are advised instead")
	}
	start := uintptr(unsafe.Pointer(&first[0]))
	// Hand out 5 MiB (every block written once), then the chunk's huge pages below
	// the handed-out end are whole huge pages, the next one not.
	for range 5<<20/size - 1 {
		a.Alloc()[0] = 1
	}
	end := start + 5<<20
	whole := (end&^(hugemem.PageBytes-1) - (start+hugemem.PageBytes-1)&^(hugemem.PageBytes-1)) >> 10
	got, err := anonHugeKiB(start)
	if err != nil {
		t.Skip(err)
	}
	if got != int64(whole) {
		t.Errorf("5 MiB of blocks handed out from %#x: %d KiB of huge pages, want %d (the whole pages below %#x)", start, got, whole, end)
	}
}

// anonHugeKiB returns the AnonHugePages of the mapping that holds address p
// (/proc/self/smaps).
func anonHugeKiB(p uintptr) (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= p && p < hi
			continue
		}
		var kib int64
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			if _, err := fmt.Sscanf(line, "AnonHugePages: %d kB", &kib); err != nil {
				return 0, fmt.Errorf("smaps line %q: %w", line, err)
			}
			return kib, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no mapping of %#x in /proc/self/smaps", p)
}

// TestFaultHugePages: blocks faulted in with Arena.Fault, piece by piece as a pool
// prefaults them, are huge pages wherever a huge page of the chunk lies under them,
// the one still being handed out included, whether or not the chunk was advised
// for them (MADV_COLLAPSE or not).
func TestFaultHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[always]") && !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("no transparent huge pages to ask for (%q, %v)", mode, err)
	}
	const size = 576 << 10 // not a divisor of a huge page
	a := New(size, 0)
	defer a.Release()
	var first []byte
	for i := range 9 {
		b := a.Alloc()
		if i == 0 {
			first = b
		}
		for off := 0; off < size; off += 128 << 10 {
			a.Fault(b[off:min(off+128<<10, size)])
		}
	}
	start := uintptr(unsafe.Pointer(&first[0]))
	end := start + 9*size
	up := func(p uintptr) uintptr { return (p + hugemem.PageBytes - 1) &^ (hugemem.PageBytes - 1) }
	want := int64(up(end)-up(start)) >> 10 // the chunk (16 MiB) holds the page under end
	got, err := anonHugeKiB(start)
	if err != nil {
		t.Skip(err)
	}
	if got < want {
		t.Errorf("9 blocks of %d bytes faulted in from %#x: %d KiB of huge pages, want ≥ %d (every page from the first boundary to past %#x)", size, start, got, want, end)
	}
}
