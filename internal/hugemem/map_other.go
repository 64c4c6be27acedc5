//go:build !unix

package hugemem

import (
	"errors"
	"fmt"
)

func mapAnon(n int) ([]byte, error) {
	return nil, fmt.Errorf("hugemem: anonymous mappings: %w", errors.ErrUnsupported)
}

func unmap([]byte) error { return nil }

func addr([]byte) uintptr { return 0 }
