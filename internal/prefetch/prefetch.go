// Package prefetch asks the CPU for cache lines ahead of their use. Asking never
// faults and changes no byte.
package prefetch

// Read asks for the cache lines that hold b, for reading (PREFETCHT0 on amd64; a
// no-op elsewhere): for data a kernel reads soon that the hardware prefetchers do not
// foresee (a span's first rows lying elsewhere than the last ones read).
func Read(b []byte) {
	if len(b) > 0 {
		read(&b[0], len(b))
	}
}

// Write asks for the cache lines that hold b for writing (PREFETCHW on amd64; a no-op
// elsewhere): a store to a line the core does not hold waits for the line to be read
// first, and a run of such stores fills the store buffer and stalls the core, where
// asked for together their reads overlap.
func Write(b []byte) {
	if len(b) > 0 {
		write(&b[0], len(b))
	}
}
