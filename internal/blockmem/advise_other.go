//go:build !linux

package blockmem

// adviseHuge does nothing: transparent huge pages are advised on Linux only.
func adviseHuge([]byte) {}
