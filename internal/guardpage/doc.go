// Package guardpage gives tests memory fenced by inaccessible pages, to prove that
// assembly kernels never read or write outside their slices: a stray access faults.
package guardpage
