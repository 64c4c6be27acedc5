//go:build !linux

package hugemem

// Advise does nothing: transparent huge pages are advised on Linux only.
func Advise([]byte) {}
