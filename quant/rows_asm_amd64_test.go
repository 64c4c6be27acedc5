package quant

// simdFuses reports whether the assembly set runs rows of c through its fused
// kernels: F32 and BF16 rows, and F16 and Int8 with the F16C kernels on.
func simdFuses(c RowCodec) bool {
	switch c.(type) {
	case F32, BF16:
		return true
	case F16, Int8:
		return haveF16C
	}
	return false
}

// simdFusesLossy is whether the SIMD set has fused kernels for Affine and FP8 rows:
// the assembly set runs them (fused_lossy_amd64.go).
const simdFusesLossy = true
