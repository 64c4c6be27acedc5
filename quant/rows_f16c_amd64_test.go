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

// TestRowKernelsAhead: DotRows and AddRows give the same bits whatever bytes follow
// the rows in src (none, a few, more than the kernels ask for ahead): the rows whose
// lines ahead lie past src go through the twins that ask for none (aheadRows), and
// a row's score and a column's sum do not depend on which kernel took the row. F16
// and Int8 rows, every group size the kernels split, row counts up to past the
// prefetch distance; with the ZMM kernels on and off.
func TestRowKernelsAhead(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C")
	}
	r := rand.New(rand.NewPCG(97, 98))
	defer setZMM(setZMM(true))
	for _, z := range zmmModes() {
		setZMM(z)
		for _, c := range []RowCodec{F16{}, Int8{}} {
			for _, g := range []int{1, 3, 4, 5} {
				for _, n := range []int{1, 3, 4, 7, 9, 16, 33, 64, 100, 150} {
					testRowsAhead(t, r, c, g, n, fmt.Sprintf("zmm=%v/%s/g=%d/n=%d", z, c.Name(), g, n))
				}
			}
		}
	}
}

// testRowsAhead is TestRowKernelsAhead's check of one shape.
func testRowsAhead(t *testing.T, r *rand.Rand, c RowCodec, g, n int, name string) {
	t.Helper()
	rc := newRowCase(r, c, g, n, 64)
	rows := rc.src
	var want0, want1 []float32
	for _, slack := range []int{0, 1, rc.stride, pfDist, pfNext + 300} {
		rc.src = append(append(make([]byte, 0, len(rows)+slack), rows...), make([]byte, slack)...)
		scores, acc, _ := rc.run(simdKernels, false)
		if want0 == nil {
			want0, want1 = scores, acc
			continue
		}
		for i := range want0 {
			if math.Float32bits(scores[i]) != math.Float32bits(want0[i]) {
				t.Fatalf("%s/slack=%d: score %d = %v, %v with no bytes after the rows", name, slack, i, scores[i], want0[i])
			}
		}
		for i := range want1 {
			if math.Float32bits(acc[i]) != math.Float32bits(want1[i]) {
				t.Fatalf("%s/slack=%d: acc %d = %v, %v with no bytes after the rows", name, slack, i, acc[i], want1[i])
			}
		}
	}
}

// TestAheadRows: aheadRows leaves every line a kernel asks for within avail.
func TestAheadRows(t *testing.T) {
	for _, c := range []struct{ avail, stride, n, ahead int }{
		{0, 128, 16, pfDist}, {2048, 128, 16, pfDist}, {4096 + 128, 128, 1, pfDist},
		{16384, 128, 128, pfDist}, {16384, 128, 128, pfNext}, {1 << 20, 134, 33, pfNext}, {300, 134, 3, 64},
	} {
		m := aheadRows(c.avail, c.stride, c.n, c.ahead)
		if m < 0 || m > c.n {
			t.Fatalf("%+v: %d rows", c, m)
		}
		if m > 0 && (m-1)*c.stride+c.ahead+128 > c.avail {
			t.Fatalf("%+v: %d rows ask up to %d", c, m, (m-1)*c.stride+c.ahead+128)
		}
		if m < c.n && m*c.stride+c.ahead+128 <= c.avail {
			t.Fatalf("%+v: %d rows, one more would fit", c, m)
		}
	}
}

// TestNextKernels: F16 rows of one to three queries with F16C, and Int8 rows with
// AVX-512 VNNI, go through the kernels that ask for the next rows (dotF16R4Next,
// addF16Q1x64Next; dotInt8R8I16Z, addInt8Q1x64ZNext), and give the bits of the
// entry's dot and add; TestRowPlanNext checks the same through RowPlan, whatever
// kernels take the call.
func TestNextKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(75, 76))
	for _, c := range []struct {
		codec RowCodec
		kt    *rowKernels
		has   bool
	}{{F16{}, &f16Kernels, haveF16C}, {Int8{}, &int8Kernels, haveF16C && haveVNNI512}} {
		if !c.has {
			continue
		}
		for _, g := range []int{1, 2, 3} {
			rc := newRowCase(r, c.codec, g, 9, 64)
			next := make([]byte, len(rc.src))
			scores := make([]float32, (g-1)*rc.ld+rc.n)
			acc := append([]float32(nil), rc.acc0...)
			tmp := make([]float32, ScratchFloats(rc.d))
			off := uintptr(unsafe.Pointer(&next[0])) - uintptr(unsafe.Pointer(&rc.src[0]))
			if !c.kt.dotNext(scores, rc.ld, rc.q, nil, g, rc.src, rc.stride, rc.n, rc.d, tmp, off) ||
				!c.kt.addNext(acc, rc.w, rc.ld, g, rc.src, rc.stride, rc.n, rc.d, tmp, off) {
				t.Fatalf("%s/g=%d: rows of 64 values not taken", c.codec.Name(), g)
			}
			want := make([]float32, len(scores))
			wantAcc := append([]float32(nil), rc.acc0...)
			if !c.kt.dot(c.codec, want, rc.ld, rc.q, g, rc.src, rc.stride, rc.n, rc.d, tmp) ||
				!c.kt.add(c.codec, wantAcc, rc.w, rc.ld, g, rc.src, rc.stride, rc.n, rc.d, tmp) {
				t.Fatalf("%s/g=%d: rows of 64 values not taken by dot and add", c.codec.Name(), g)
			}
			for i := range want {
				if math.Float32bits(scores[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s/g=%d: score %d = %v, dot %v", c.codec.Name(), g, i, scores[i], want[i])
				}
			}
			for i := range wantAcc {
				if math.Float32bits(acc[i]) != math.Float32bits(wantAcc[i]) {
					t.Fatalf("%s/g=%d: acc %d = %v, add %v", c.codec.Name(), g, i, acc[i], wantAcc[i])
				}
			}
		}
	}
}
