//go:build !unix

package blockmem

import "errors"

// Supported tells whether blocks are mapped outside the Go heap on this platform.
const Supported = false

// mapChunk fails where anonymous mappings are not implemented: blocks come from the
// Go heap.
func mapChunk(n int) (chunk, mapping []byte, err error) { return nil, nil, errors.ErrUnsupported }

func unmapChunk(mapping []byte) error { return nil }
