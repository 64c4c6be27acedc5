// Package procstat reads the process's own resource figures for benchmarks and
// reports: CPU time (a steadier measure than wall time on a machine shared with
// other work), peak resident set size, and the current one split into anonymous and
// file-backed memory. Where the platform does not tell, the figures are 0.
package procstat
