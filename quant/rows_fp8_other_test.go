//go:build !amd64

package quant

// fp8FusedF16C reports whether the SIMD set scores and adds FP8 rows with the
// kernels of rows_fp8_amd64.s: not in this build.
func fp8FusedF16C() bool { return false }
