package main

import (
	"fmt"
	"strconv"

	"kvq/internal/units"
)

// byteSize is a flag value holding a byte count written as 1048576, 512MB, 1.5GiB, ...
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	v, err := units.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
