//go:build !linux

package guardpage

import "testing"

// Floats skips tb: guard pages are set up on Linux only.
func Floats(tb testing.TB) []float32 {
	tb.Helper()
	tb.Skip("guard pages are set up on Linux only")
	return nil
}

// Bytes skips tb: guard pages are set up on Linux only.
func Bytes(tb testing.TB, n int) []byte {
	tb.Helper()
	tb.Skip("guard pages are set up on Linux only")
	return nil
}
