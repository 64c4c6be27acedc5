package prefetch

import (
	"bytes"
	"testing"
)

// TestAskLeavesBytes: asking for lines, for reading or writing, at any offset and
// length (one byte, a line's, across lines, none), changes no byte.
func TestAskLeavesBytes(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	want := bytes.Clone(buf)
	for _, ask := range []struct {
		name string
		f    func([]byte)
	}{{"Read", Read}, {"Write", Write}} {
		for _, c := range [][2]int{{0, 0}, {0, 1}, {63, 2}, {1, 64}, {100, 1000}, {0, 4096}, {4095, 1}} {
			ask.f(buf[c[0] : c[0]+c[1]])
			if !bytes.Equal(buf, want) {
				t.Fatalf("%s(buf[%d:%d]) changed the bytes", ask.name, c[0], c[0]+c[1])
			}
		}
	}
}
