package model

import (
	"math"

	"kvq/quant"
)

// ropeFrequencies returns the angular frequency of each rotated pair j < dims/2:
// base^(−2j/dims) radians per position.
func ropeFrequencies(base float64, dims int) []float64 {
	f := make([]float64, dims/2)
	for j := range f {
		f[j] = math.Pow(base, -2*float64(j)/float64(dims))
	}
	return f
}

// ropeAngles fills cos/sin of pos·freq[j] for every pair j. Angles are formed in
// float64 so that positions far past the trained context keep their precision.
func ropeAngles(freq []float64, cos, sin []float32, pos int) {
	for j, f := range freq {
		s, c := math.Sincos(float64(pos) * f)
		cos[j], sin[j] = float32(c), float32(s)
	}
}

// Rotate rotates one head vector (HeadDim values, after RoPE at some position p) so
// that it equals the vector rotated at p+delta. Caches use it to keep attention exact
// when they shift positions (sink + window eviction) without touching stored keys.
// Pairs are (2j, 2j+1) for llama and (j, j+RopeDims/2) for NeoX-style
// architectures; dimensions past RopeDims are left unrotated.
//
// It is called per query head and segment during attention with eviction, so the
// angles of common head sizes live on the stack.
func (m *Model) Rotate(x []float32, delta int) {
	half := m.RopeDims / 2
	var buf [2][128]float32
	cos, sin := buf[0][:0], buf[1][:0]
	if half > len(buf[0]) {
		cos, sin = make([]float32, 0, half), make([]float32, 0, half)
	}
	cos, sin = cos[:half], sin[:half]
	ropeAngles(m.ropeFreq, cos, sin, delta)
	quant.RotatePairs(x, cos, sin, m.RopeNeoX)
}
