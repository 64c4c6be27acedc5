package hugemem

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestMap(t *testing.T) {
	for _, n := range []int{1, 4095, PageBytes, 3*PageBytes + 17} {
		r, err := Map(n)
		if err != nil {
			if runtime.GOOS == "linux" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
		if len(r.Bytes) != n || cap(r.Bytes) != n {
			t.Errorf("n=%d: len %d cap %d", n, len(r.Bytes), cap(r.Bytes))
		}
		if a := addr(r.Bytes); a%PageBytes != 0 {
			t.Errorf("n=%d: starts at %#x, not on a huge page", n, a)
		}
		if !bytes.Equal(r.Bytes, make([]byte, n)) {
			t.Errorf("n=%d: not zeroed", n)
		}
		for i := range r.Bytes {
			r.Bytes[i] = byte(i)
		}
		if r.Bytes[n-1] != byte(n-1) {
			t.Errorf("n=%d: last byte not written", n)
		}
		if err := r.Free(); err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
		if err := r.Free(); err != nil || r.Bytes != nil {
			t.Errorf("n=%d: second Free: %v, Bytes %d", n, err, len(r.Bytes))
		}
	}
}

// TestHugePages checks that a touched Region is backed by huge pages where the kernel
// offers them to madvise (Linux: transparent_hugepage "always" or "madvise").
func TestHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !(bytes.Contains(mode, []byte("[always]")) || bytes.Contains(mode, []byte("[madvise]"))) {
		t.Skipf("no transparent huge pages to ask for (%q, %v)", mode, err)
	}
	r, err := Map(8 * PageBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	for i := 0; i < len(r.Bytes); i += 4096 {
		r.Bytes[i] = 1
	}
	huge := anonHugeKB(t, addr(r.Bytes))
	if huge == 0 {
		t.Errorf("AnonHugePages 0 kB over 16 MiB of touched huge-page-advised memory (THP %q)", strings.TrimSpace(string(mode)))
	}
	t.Logf("AnonHugePages %d kB of %d", huge, len(r.Bytes)>>10)
}

// anonHugeKB returns the AnonHugePages of the mapping that contains a, from
// /proc/self/smaps.
func anonHugeKB(t *testing.T, a uintptr) int {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	in := false
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(a) >= l && uint64(a) < h
			continue
		}
		if in && f[0] == "AnonHugePages:" && len(f) >= 2 {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	t.Fatalf("no mapping of %#x in /proc/self/smaps", a)
	return 0
}
