package guardpage

import "testing"

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
