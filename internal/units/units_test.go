package units

import "testing"

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1073741824", 1 << 30, true},
		{"512MB", 512e6, true},
		{"1.5GiB", 3 << 29, true},
		{" 64 mib ", 64 << 20, true},
		{"2T", 2 << 40, true},
		{"1tb", 1e12, true},
		{"100B", 100, true},
		{"-1", 0, false},
		{"", 0, false},
		{"GiB", 0, false},
		{"12 parsecs", 0, false},
		{"9e18", 0, false},
		{"NaN", 0, false},
	} {
		got, err := ParseBytes(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
