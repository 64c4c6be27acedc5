//go:build !(amd64 && goexperiment.simd)

package quant

// simdF16Fused reports whether the SIMD set has fused F16 kernels: not in this build.
func simdF16Fused() bool { return false }

// f16cModes returns the F16C settings the SIMD set can be tested in: none here.
func f16cModes() []bool { return []bool{false} }

// setF16C does nothing: this build has no F16C kernels.
func setF16C(bool) bool { return false }

// noF16CKernels returns nil: this build has no F16C kernels.
func noF16CKernels() *kernelSet { return nil }
