// Package procstat reads the process's own resource figures for benchmarks and
// reports: CPU time (a steadier measure than wall time on a machine shared with
// other work) and peak resident set size. Where the platform does not tell, the
// figures are 0.
package procstat
