//go:build amd64

package quant

import (
	"fmt"
	"kvq/internal/cpufeat"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// f16cModes returns the F16C settings the SIMD set can be tested in: with the F16C
// assembly kernels (when the CPU has them) and without.
func f16cModes() []bool {
	if haveF16C {
		return []bool{true, false}
	}
	return []bool{false}
}

// zmmModes returns the settings of the ZMM kernels (haveAVX512F, with haveVNNI512) the
// SIMD set can be tested in: with them (when the CPU has AVX-512F) and without.
func zmmModes() []bool {
	if cpufeat.AVX512F {
		return []bool{true, false}
	}
	return []bool{false}
}

// setZMM selects the ZMM kernels (on, where the CPU has AVX-512F) or not, and
// returns the previous setting.
func setZMM(on bool) bool {
	prev := haveAVX512F
	haveAVX512F = on && cpufeat.AVX512F
	haveVNNI512 = on && cpufeat.AVX512VNNI
	haveVBMIGFNI = on && cpufeat.AVX512VBMIGFNI
	return prev
}

// setF16C selects the F16C kernels (on) or not, and returns the previous setting.
func setF16C(on bool) bool {
	prev := haveF16C
	haveF16C = on
	return prev
}

// TestAddQ4ZRows: the ZMM four-query adds (addInt8Q4Z, addF16Q4Z, addBF16Q4Z;
// addE4M3Q4Z and addE5M2Q4Z where the CPU has AVX-512 BW) give the sums of four calls
// of their YMM twins bit for bit (NaN for NaN), for row counts 0–100 in a sample, rows
// of random bytes (every int8 and FP8 code, every other row's FP8 codes finite; f16
// and bfloat16 values of any kind, NaN and ±Inf among them) at a stride longer than
// the row, weights with a NaN in one query, and leave the accumulators' other columns
// alone.
func TestAddQ4ZRows(t *testing.T) {
	if !haveAVX512F {
		t.Skip("the kernels need AVX-512F")
	}
	r := rand.New(rand.NewPCG(81, 82))
	for _, k := range []struct {
		name string
		vb   int
		y, z q4AddKernel
		fp8  bool // FP8 codes: the kernel needs AVX-512 BW (haveVNNI512)
	}{
		{"int8", 1, addInt8Q4asm, addInt8Q4Z, false},
		{"f16", 2, addF16Q4F16C, addF16Q4Z, false},
		{"bf16", 2, addBF16Q4asm, addBF16Q4Z, false},
		{"e4m3", 1, addE4M3Q4F16C, addE4M3Q4Z, true},
		{"e5m2", 1, addE5M2Q4F16C, addE5M2Q4Z, true},
	} {
		if k.fp8 && !haveVNNI512 {
			continue
		}
		for _, n := range []int{0, 1, 2, 5, 17, 64, 100} {
			name := fmt.Sprintf("%s/n=%d", k.name, n)
			stride := 64*k.vb + 8*r.IntN(3)
			rows := make([]byte, max(n, 1)*stride)
			for i := range rows {
				rows[i] = byte(r.Uint32())
				if k.fp8 && i/stride%2 == 1 {
					rows[i] &^= 0x40 // finite FP8 codes in every other row
				}
			}
			const ld = 80 // accumulator columns per query: 64 added, 16 left alone
			w := make([]float32, 4*max(n, 1))
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			if n > 0 {
				w[n%4*n+r.IntN(n)] = float32(math.NaN())
			}
			acc := [2][]float32{make([]float32, 4*ld), nil}
			for i := range acc[0] {
				acc[0][i] = float32(r.NormFloat64())
			}
			acc[1] = append([]float32(nil), acc[0]...)
			want := append([]float32(nil), acc[0]...)
			k.z(unsafe.Pointer(&acc[0][0]), 4*ld, unsafe.Pointer(&w[0]), uintptr(4*max(n, 1)), unsafe.Pointer(&rows[0]), uintptr(stride), n)
			for c := 0; c < 64; c += 16 {
				k.y(unsafe.Pointer(&acc[1][c]), 4*ld, unsafe.Pointer(&w[0]), uintptr(4*max(n, 1)), unsafe.Pointer(&rows[c*k.vb]), uintptr(stride), n)
			}
			for i := range acc[0] {
				z, y := acc[0][i], acc[1][i]
				if i%ld >= 64 && math.Float32bits(z) != math.Float32bits(want[i]) {
					t.Fatalf("%s: query %d column %d written", name, i/ld, i%ld)
				}
				if math.Float32bits(z) != math.Float32bits(y) && !(z != z && y != y) {
					t.Fatalf("%s: query %d column %d = %v, YMM kernel %v", name, i/ld, i%ld, z, y)
				}
			}
		}
	}
}
