//go:build !linux

package hugemem

import "errors"

// Advise does nothing: transparent huge pages are advised on Linux only.
func Advise([]byte) {}

// Collapse fails: huge pages are made on Linux only.
func Collapse([]byte) error { return errors.ErrUnsupported }
