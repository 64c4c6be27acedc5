//go:build !(amd64 && goexperiment.simd)

package quant

// simdF16Fused reports whether the SIMD set has fused F16 kernels: not in this build.
func simdF16Fused() bool { return false }
