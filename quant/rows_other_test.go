//go:build !amd64

package quant

// simdFuses reports whether the SIMD set runs rows of c through its fused kernels:
// this build has no SIMD set.
func simdFuses(RowCodec) bool { return false }

// f16cModes returns the F16C settings the SIMD set can be tested in: none here.
func f16cModes() []bool { return []bool{false} }

// setF16C does nothing: this build has no F16C kernels.
func setF16C(bool) bool { return false }

// zmmModes returns the ZMM settings the SIMD set can be tested in: none here.
func zmmModes() []bool { return []bool{false} }

// setZMM does nothing: this build has no ZMM kernels.
func setZMM(bool) bool { return false }

// simdFusesLossy is whether the SIMD set has fused kernels for Affine and FP8 rows:
// this build has no SIMD set.
const simdFusesLossy = false

// prepInt8 reports false: this build's plans prepare no queries.
func prepInt8(int) bool { return false }

func prepE4M3(RowCodec, int) bool { return false }
