// Package cpufeat reports the x86-64 instruction-set extensions kvq's assembly
// kernels use, read once with CPUID (and XGETBV: the OS must save the YMM state).
// On other architectures every feature is false.
package cpufeat

// AVX2FMA reports AVX, AVX2 and FMA3 with YMM state enabled by the OS.
var AVX2FMA = hasAVX2FMA()

// F16C reports the F16C half-precision conversions (VCVTPH2PS, VCVTPS2PH); kvq's
// kernels only use it together with AVX2FMA.
var F16C = AVX2FMA && hasF16C()

// AVX512F reports the AVX-512 foundation instructions (512-bit ZMM registers, 32 of
// them) with their state enabled by the OS; kvq's kernels only use it together with
// F16C.
var AVX512F = F16C && hasAVX512F()

// AVX512VNNI reports AVX-512 BW (byte and word operations on ZMM registers) and VNNI
// (VPDPBUSD: sums of four byte products into each dword) on top of AVX512F.
var AVX512VNNI = AVX512F && hasAVX512VNNI()

// AVX512VBMIGFNI reports AVX-512 VBMI (byte permutes across a register: VPERMB,
// VPERMT2B), GFNI (VGF2P8AFFINEQB: any bit matrix applied to every byte) and VL (the
// AVX-512 instructions on YMM and XMM registers too) on top of AVX512VNNI.
var AVX512VBMIGFNI = AVX512VNNI && hasVBMIGFNI()
