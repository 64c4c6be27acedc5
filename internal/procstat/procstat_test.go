package procstat

import (
	"runtime"
	"testing"
	"time"
)

// TestFigures: CPU time grows while the process computes, and the peak resident
// set covers at least the memory just touched (on the platforms that report them).
func TestFigures(t *testing.T) {
	if CPU() == 0 && PeakRSS() == 0 {
		t.Skipf("no process figures on %s", runtime.GOOS)
	}
	c0 := CPU()
	x := 1.0
	for t0 := time.Now(); time.Since(t0) < 50*time.Millisecond; {
		x = x*1.0000001 + 1e-9
	}
	if c := CPU(); c <= c0 {
		t.Errorf("CPU time %v after %v of work: did not grow (x=%g)", c, c0, x)
	}
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if r := PeakRSS(); r < int64(len(b)) {
		t.Errorf("peak RSS %d bytes after touching %d", r, len(b))
	}
	if anon, file := RSS(); runtime.GOOS == "linux" && (anon < int64(len(b)) || file <= 0) {
		t.Errorf("RSS: %d bytes anonymous after touching %d, %d file-backed (the executable is mapped)", anon, len(b), file)
	}
	if avail := MemAvailable(); runtime.GOOS == "linux" && (avail <= 0 || avail > 1<<50) {
		t.Errorf("MemAvailable %d bytes", avail)
	}
	runtime.KeepAlive(b)
}
