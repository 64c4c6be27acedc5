package membw

import "kvq/internal/cpufeat"

var useAVX2 = cpufeat.AVX2FMA

// sumAVX2 returns the wrapping sum of the n words at p, n a positive multiple of 32.
//
//go:noescape
func sumAVX2(p *uint64, n int) uint64

// setAVX2 selects the AVX2 kernel (when the CPU has it) or the Go loop.
func setAVX2(on bool) { useAVX2 = on && cpufeat.AVX2FMA }
