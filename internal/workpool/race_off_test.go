//go:build !race

package workpool

// raceEnabled: the race detector makes sync.Pool drop items at random.
const raceEnabled = false
