//go:build amd64 && goexperiment.simd

package quant

// simdF16Fused reports whether the SIMD set has fused F16 kernels on this CPU.
func simdF16Fused() bool { return haveF16C }

// f16cModes returns the F16C settings the SIMD set can be tested in: with the F16C
// kernels (when the CPU has them) and without (the archsimd ones and tiles).
func f16cModes() []bool {
	if haveF16C {
		return []bool{true, false}
	}
	return []bool{false}
}

// setF16C selects the F16C kernels (on) or not, and returns the previous setting.
func setF16C(on bool) bool {
	prev := haveF16C
	haveF16C = on
	return prev
}
