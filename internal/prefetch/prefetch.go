// Package prefetch asks the CPU for cache lines ahead of their use.
package prefetch

// Write asks for the cache lines that hold b for writing (PREFETCHW on amd64; a no-op
// elsewhere): a store to a line the core does not hold waits for the line to be read
// first, and a run of such stores fills the store buffer and stalls the core, where
// asked for together their reads overlap.
func Write(b []byte) {
	if len(b) > 0 {
		write(&b[0], len(b))
	}
}
