//go:build amd64 && goexperiment.simd

package quant

import "unsafe"

// The F16 row kernels in rows_f16c_amd64.s widen binary16 with VCVTPH2PS (exact, as
// F16ToF32) and multiply in float32 FMAs: they equal the decoded reference up to the
// order of the float sums. They need AVX2, FMA and F16C (haveF16C); without F16C, F16
// rows go through tiles (DecodeRows, then MultiDot or MultiAxpy). Their shapes are
// those of the archsimd kernels in rows_amd64.go.

// haveF16C is whether the CPU has the F16C conversions.
var haveF16C = hasF16C()

// hasF16C reports whether the CPU has the F16C instructions (CPUID.1:ECX bit 29).
func hasF16C() bool

// dotF16R4 is the r4Kernel of F16 rows.
//
//go:noescape
func dotF16R4(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)

// dotF16Q4 is dotInt8Q4 for F16 rows: out + 4i + r·ldb gets the score of the query at
// q + r·qs with the row at src + i·stride, for i < n and r < 4.
//
//go:noescape
func dotF16Q4(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)

// addF16Q1x64 is the 64-column q1Kernel of binary16 values.
//
//go:noescape
func addF16Q1x64(acc, w, src unsafe.Pointer, stride uintptr, n int)

// addF16Q1x16 is the 16-column q1Kernel of binary16 values.
//
//go:noescape
func addF16Q1x16(acc, w, src unsafe.Pointer, stride uintptr, n int)
