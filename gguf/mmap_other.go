//go:build !unix

package gguf

// mapFile reads the whole file where memory mapping is not implemented.
func mapFile(path string) (data []byte, unmap func() error, err error) {
	return readWhole(path)
}
