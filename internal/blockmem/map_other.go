//go:build !unix

package blockmem

import "errors"

// Supported tells whether blocks are mapped outside the Go heap on this platform.
const Supported = false

// mapChunk fails where anonymous mappings are not implemented: blocks come from the
// Go heap.
func mapChunk(n int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapChunk(b []byte) error { return nil }
