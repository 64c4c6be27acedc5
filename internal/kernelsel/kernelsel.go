// Package kernelsel is the one switch by which packages with SIMD kernels choose
// between them and their portable scalar twins: the SIMD set when this build and CPU
// have one, unless the environment variable KVQ_NOSIMD is "1".
package kernelsel

import (
	"os"
	"sync/atomic"
)

// Switch holds the kernel set in use of one package. K is that package's struct of
// kernel functions.
type Switch[K any] struct {
	scalar, simd *K
	cur          atomic.Pointer[K]
}

// New returns a switch over the scalar reference set and the SIMD set (nil when this
// build or CPU has none), starting on Initial's choice for $KVQ_NOSIMD.
func New[K any](scalar, simd *K) *Switch[K] {
	s := &Switch[K]{scalar: scalar, simd: simd}
	s.cur.Store(Initial(scalar, simd, os.Getenv("KVQ_NOSIMD")))
	return s
}

// Initial is the set to start with given the value of KVQ_NOSIMD: simd when there is
// one and noSIMD is not "1", else scalar.
func Initial[K any](scalar, simd *K, noSIMD string) *K {
	if simd != nil && noSIMD != "1" {
		return simd
	}
	return scalar
}

// Load returns the set in use.
func (s *Switch[K]) Load() *K { return s.cur.Load() }

// Store puts k in use (tests run every set this way).
func (s *Switch[K]) Store(k *K) { s.cur.Store(k) }

// SetSIMD selects the SIMD set (on) or the scalar one (off) and reports whether the
// SIMD set is in use afterwards: false when there is none.
func (s *Switch[K]) SetSIMD(on bool) bool {
	if on && s.simd != nil {
		s.cur.Store(s.simd)
		return true
	}
	s.cur.Store(s.scalar)
	return false
}
