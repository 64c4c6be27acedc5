//go:build !race

package raceflag

// Enabled reports that the race detector is on.
const Enabled = false
