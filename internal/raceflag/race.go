//go:build race

// Package raceflag tells tests whether the race detector is on: it makes sync.Pool
// drop pooled items at random, so allocation counts do not hold under it.
package raceflag

// Enabled reports that the race detector is on.
const Enabled = true
