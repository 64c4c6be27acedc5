package guardpage

import (
	"runtime/debug"
	"testing"
	"unsafe"
)

// TestFloats: the fenced page is one whole page of usable float32s.
func TestFloats(t *testing.T) {
	f := Floats(t)
	if len(f) < 1024 {
		t.Fatalf("%d floats, want a page", len(f))
	}
	for i := range f {
		f[i] = float32(i)
	}
	if f[len(f)-1] != float32(len(f)-1) || f[0] != 0 {
		t.Fatal("fenced page does not hold what was written")
	}
}

var sink float32

// TestFence: reading the float32 just before the page, or just past it, faults (what
// the kernels' page-end tests rely on).
func TestFence(t *testing.T) {
	f := Floats(t)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for _, c := range []struct {
		name string
		off  int
	}{{"before", -1}, {"past", len(f)}} {
		p := (*float32)(unsafe.Add(unsafe.Pointer(&f[0]), 4*c.off))
		if !faults(func() { sink = *p }) {
			t.Errorf("reading the float32 %s the page did not fault", c.name)
		}
	}
}

// TestBytes: Bytes gives n writable bytes, and reading the byte just past them faults.
func TestBytes(t *testing.T) {
	for _, n := range []int{1, 100, 4096, 5000} {
		b := Bytes(t, n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := range b {
			b[i] = byte(i)
		}
		func() {
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			p := (*byte)(unsafe.Add(unsafe.Pointer(&b[0]), n))
			if !faults(func() { sinkByte = *p }) {
				t.Errorf("Bytes(%d): reading the byte past them did not fault", n)
			}
		}()
	}
}

var sinkByte byte

// faults reports whether fn panics (a memory fault, with SetPanicOnFault).
func faults(fn func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	fn()
	return false
}
