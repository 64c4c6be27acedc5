//go:build !linux

package procstat

// RSS is not split on this platform: 0, 0.
func RSS() (anon, file int64) { return 0, 0 }

// MemAvailable is unknown on this platform: 0.
func MemAvailable() int64 { return 0 }
