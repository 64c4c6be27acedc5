//go:build !linux

package blockmem

import "errors"

// populate is not available: Fault touches the pages instead.
func populate([]byte) error { return errors.ErrUnsupported }
