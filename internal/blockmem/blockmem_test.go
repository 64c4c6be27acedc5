package blockmem

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"unsafe"
)

// TestAlloc: blocks have the asked size and no spare capacity, start zeroed and
// aligned, and do not overlap: each keeps what was written to it while the others
// were written.
func TestAlloc(t *testing.T) {
	for _, tc := range []struct{ size, limit, n int }{
		{1, 0, 100},
		{63, 0, 70},
		{64, 5, 9},
		{65, 0, 70},
		{4096, 0, 10},
		{3 << 20, 0, 7},        // a chunk holds 5: the sixth starts a new one
		{chunkBytes + 1, 0, 2}, // one block per chunk
	} {
		a := New(tc.size, tc.limit)
		blocks := make([][]byte, tc.n)
		for i := range blocks {
			b := a.Alloc()
			if len(b) != tc.size || cap(b) != tc.size {
				t.Fatalf("size %d: block %d has len %d cap %d", tc.size, i, len(b), cap(b))
			}
			if Supported && uintptr(unsafe.Pointer(&b[0]))%align != 0 {
				t.Errorf("size %d: block %d starts at %p, not %d-byte aligned", tc.size, i, &b[0], align)
			}
			for j, c := range b {
				if c != 0 {
					t.Fatalf("size %d: block %d byte %d is %d, want 0", tc.size, i, j, c)
				}
			}
			for j := range b {
				b[j] = byte(i + 1)
			}
			blocks[i] = b
		}
		for i, b := range blocks {
			for j, c := range b {
				if c != byte(i+1) {
					t.Fatalf("size %d: block %d byte %d is %d, want %d: blocks overlap", tc.size, i, j, c, byte(i+1))
				}
			}
		}
		a.Release()
	}
}

// TestLimit: with a limit, the last chunk maps only the blocks still to come, and
// blocks past the limit are still given.
func TestLimit(t *testing.T) {
	a := New(1<<20, 3)
	defer a.Release()
	for range 3 {
		a.Alloc()
	}
	if Supported {
		if got := a.Mapped(); got != 3<<20 {
			t.Errorf("3 blocks of 1 MiB with limit 3 mapped %d bytes, want %d", got, 3<<20)
		}
	}
	if b := a.Alloc(); len(b) != 1<<20 {
		t.Errorf("block past the limit: len %d", len(b))
	}
}

// TestOffHeap: blocks are not Go heap objects (so the collector's pacing ignores
// them), and Release gives their mappings back.
func TestOffHeap(t *testing.T) {
	heap0 := heapObjects()
	a := New(1<<20, 0)
	for range 64 {
		b := a.Alloc()
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
	}
	if !Supported {
		a.Release()
		t.Skipf("no anonymous mappings on %s: blocks come from the heap", runtime.GOOS)
	}
	if got := a.Mapped(); got < 64<<20 {
		t.Errorf("64 MiB of blocks: %d bytes mapped", got)
	}
	if grew := heapObjects() - heap0; grew > 8<<20 {
		t.Errorf("Go heap objects grew by %d bytes for 64 MiB of blocks", grew)
	}
	a.Release()
	if got := a.Mapped(); got != 0 {
		t.Errorf("after Release %d bytes mapped, want 0", got)
	}
}

func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// faulters are Fault and the page-touching it falls back to, for tests of both.
var faulters = []struct {
	name string
	f    func([]byte)
}{{"Fault", Fault}, {"touch", touch}}

// TestFaultKeepsContents: Fault, and the page-touching it falls back to, change no
// byte of the range or around it, whatever its alignment and length.
func TestFaultKeepsContents(t *testing.T) {
	a := New(3<<20, 0)
	defer a.Release()
	b := a.Alloc()
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	for _, tc := range faulters {
		for _, r := range [][2]int{{0, len(b)}, {1, 2}, {3, 4096 + 5}, {4093, 3 << 19}, {100, 103}, {len(b) - 1, len(b)}, {5, 5}} {
			tc.f(b[r[0]:r[1]])
			for i := range b {
				if want := byte(i*7 + i>>12); b[i] != want {
					t.Fatalf("%s of [%d, %d): byte %d is %d, want %d", tc.name, r[0], r[1], i, b[i], want)
				}
			}
		}
	}
	heap := make([]byte, 10000) // blocks may come from the heap where mapping fails
	heap[9999] = 9
	Fault(heap[1:])
	if heap[9999] != 9 || heap[0] != 0 {
		t.Errorf("Fault of heap memory changed it: %d %d", heap[0], heap[9999])
	}
}
