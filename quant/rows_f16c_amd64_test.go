//go:build amd64

package quant

// f16cModes returns the F16C settings the SIMD set can be tested in: with the F16C
// assembly kernels (when the CPU has them) and without.
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
