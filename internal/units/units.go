// Package units parses the byte sizes users write on command lines and in tier
// specs: a plain count (1073741824) or a number with a binary (KiB, MiB, GiB, TiB;
// K, M, G, T) or decimal (KB, MB, GB, TB) suffix, in any case, e.g. 512MB, 1.5GiB.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
}

// ParseBytes returns the number of bytes s names, rounded down to a whole byte. It
// refuses negative sizes, sizes above 2⁶² bytes and anything that is not a number
// with an optional suffix.
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || f*mult > 1<<62 {
		return 0, fmt.Errorf("invalid byte size %q (examples: 1073741824, 512MB, 1.5GiB)", s)
	}
	return int64(f * mult), nil
}
