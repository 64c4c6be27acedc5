//go:build !unix

package procstat

import "time"

// CPU is not measured on this platform: 0.
func CPU() time.Duration { return 0 }

// PeakRSS is not measured on this platform: 0.
func PeakRSS() int64 { return 0 }
