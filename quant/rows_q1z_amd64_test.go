//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// The one-query ZMM kernels against their YMM twins: models without grouped-query
// attention send every query through them. (f16 and bf16 rows have none: their ZMM
// twins measured no faster on scores and slower on adds, BenchmarkRowsStream g=1.)

// TestDotR4Z: the ZMM one-query FP8 scores (dotE4M3R4Z and dotE5M2R4Z, with and
// without row scales) equal their YMM twins' bit for bit (NaN for NaN), for head
// sizes 16–256, one to five groups of four rows at uneven offsets, rows of random
// bytes (every code, every other row's codes finite), queries with a NaN now and
// then, and write nothing past their groups.
func TestDotR4Z(t *testing.T) {
	if !haveAVX512F {
		t.Skip("the kernels need AVX-512F")
	}
	r := rand.New(rand.NewPCG(97, 98))
	const guard = -666
	for _, k := range []struct {
		name string
		z, y fp8R4Kernel
	}{
		{"e4m3", dotE4M3R4Z, dotE4M3R4F16C},
		{"e5m2", dotE5M2R4Z, dotE5M2R4F16C},
	} {
		for _, hdr := range []int{2, 0} {
			mul := float32(0.37)
			for _, d := range []int{16, 32, 48, 64, 128, 256} {
				for _, ng := range []int{1, 2, 5} {
					name := fmt.Sprintf("%s/hdr=%d/d=%d/groups=%d", k.name, hdr, d, ng)
					row := hdr + d
					o1, o2, o3 := row+r.IntN(9), 2*row+9+r.IntN(9), 3*row+18+r.IntN(9)
					gstep := o3 + row + r.IntN(9)
					src := make([]byte, ng*gstep)
					for i := range src {
						src[i] = byte(r.Uint32())
						if i/row%2 == 1 {
							src[i] &^= 0x40 // finite codes in about every other row
						}
					}
					q := make([]float32, d)
					for i := range q {
						q[i] = float32(r.NormFloat64())
					}
					if ng == 2 {
						q[r.IntN(d)] = float32(math.NaN())
					}
					out := [2][]float32{constRow(4*ng+4, guard), constRow(4*ng+4, guard)}
					for i, kern := range []fp8R4Kernel{k.z, k.y} {
						kern(unsafe.Pointer(&out[i][0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&src[hdr]),
							uintptr(o1), uintptr(o2), uintptr(o3), uintptr(gstep), ng, uintptr(d), uintptr(hdr), mul)
					}
					checkOneScores(t, name, out[0], out[1], 4*ng, guard)
				}
			}
		}
	}
}

// TestDotR4ZD: dotE4M3R4ZD, which widens E4M3 codes straight to float32, against the
// query scaled by scaleQuery112, gives dotE4M3R4F16C's scores with the query itself
// bit for bit (NaN for NaN), with and without row scales, for head sizes 16–512, one
// to five groups of four rows at uneven offsets, rows of random bytes (every code,
// subnormals and NaN codes included), queries of every magnitude below 2¹⁶ (products
// down to float32 subnormals) with a NaN now and then; scaleQuery112 reports false
// for a query with a |q| ≥ 2¹⁶ (infinities included) and true otherwise.
func TestDotR4ZD(t *testing.T) {
	if !haveAVX512F {
		t.Skip("the kernel needs AVX-512F")
	}
	r := rand.New(rand.NewPCG(101, 102))
	const guard = -666
	for _, hdr := range []int{2, 0} {
		for _, d := range []int{16, 32, 48, 64, 128, 256, 512} {
			for _, ng := range []int{1, 2, 5} {
				for _, qkind := range []string{"normal", "tiny", "nan", "large"} {
					name := fmt.Sprintf("hdr=%d/d=%d/groups=%d/%s", hdr, d, ng, qkind)
					row := hdr + d
					o1, o2, o3 := row+r.IntN(9), 2*row+9+r.IntN(9), 3*row+18+r.IntN(9)
					gstep := o3 + row + r.IntN(9)
					src := make([]byte, ng*gstep)
					for i := range src {
						src[i] = byte(r.Uint32())
						if hdr != 0 && i%row < 2 && i/row%2 == 1 {
							src[i] &^= 0x40 // finite scales in about every other row
						}
					}
					q := directQuery(r, d, qkind)
					qd, ok := scaledQuery(t, name, q, qkind)
					if !ok {
						continue
					}
					mul := float32(0.37)
					out := [2][]float32{constRow(4*ng+4, guard), constRow(4*ng+4, guard)}
					dotE4M3R4ZD(unsafe.Pointer(&out[0][0]), unsafe.Pointer(&qd[0]), unsafe.Pointer(&src[hdr]),
						uintptr(o1), uintptr(o2), uintptr(o3), uintptr(gstep), ng, uintptr(d), uintptr(hdr), mul)
					dotE4M3R4F16C(unsafe.Pointer(&out[1][0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&src[hdr]),
						uintptr(o1), uintptr(o2), uintptr(o3), uintptr(gstep), ng, uintptr(d), uintptr(hdr), mul)
					checkOneScores(t, name, out[0], out[1], 4*ng, guard)
				}
			}
		}
	}
}

// TestAddQ1x64Z: the ZMM one-query adds over 64 columns (addInt8Q1x64Z; the FP8 ones
// with row scales and with a tensor scale where the CPU has AVX-512 BW) give their
// YMM twins' sums bit for bit (NaN for NaN), for row counts 0–100, rows of random
// bytes (every other row's FP8 codes finite) at a stride longer than the row, weights
// with a NaN now and then, and leave the columns past 64 alone.
func TestAddQ1x64Z(t *testing.T) {
	if !haveAVX512F {
		t.Skip("the kernels need AVX-512F")
	}
	r := rand.New(rand.NewPCG(99, 100))
	type add func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
	scaled := func(k func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int)) add {
		return func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, _ float32) {
			k(acc, w, src, stride, n, so)
		}
	}
	for _, k := range []struct {
		name string
		z, y add
		hdr  int  // row header bytes (its f16 scale)
		fp8  bool // FP8 codes: the kernel needs AVX-512 BW (haveVNNI512)
	}{
		{"int8", scaled(addInt8Q1x64Z), scaled(addInt8Q1x64F16C), 2, false},
		{"e4m3", addE4M3Q1x64Z, addE4M3Q1x64F16C, 2, true},
		{"e4m3/tensor", addE4M3Q1x64TZ, addE4M3Q1x64TF16C, 0, true},
		{"e5m2", addE5M2Q1x64Z, addE5M2Q1x64F16C, 2, true},
		{"e5m2/tensor", addE5M2Q1x64TZ, addE5M2Q1x64TF16C, 0, true},
	} {
		if k.fp8 && !haveVNNI512 {
			continue
		}
		for _, n := range []int{0, 1, 2, 5, 17, 64, 100} {
			name := fmt.Sprintf("%s/n=%d", k.name, n)
			stride := k.hdr + 64 + 8*r.IntN(3)
			rows := make([]byte, max(n, 1)*stride)
			for i := range rows {
				rows[i] = byte(r.Uint32())
				if k.fp8 && i/stride%2 == 1 && i%stride >= k.hdr {
					rows[i] &^= 0x40 // finite codes in every other row
				}
				if i%stride == 1 && k.hdr > 0 {
					rows[i] &= 0x3f // finite f16 scales
				}
			}
			w := make([]float32, max(n, 1))
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			if n%2 == 1 {
				w[r.IntN(n)] = float32(math.NaN())
			}
			acc := [2][]float32{make([]float32, 80), nil} // 64 columns added, 16 left alone
			for i := range acc[0] {
				acc[0][i] = float32(r.NormFloat64())
			}
			acc[1] = append([]float32(nil), acc[0]...)
			want := append([]float32(nil), acc[0]...)
			for i, kern := range []add{k.z, k.y} {
				kern(unsafe.Pointer(&acc[i][0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&rows[k.hdr]), uintptr(stride), n, -k.hdr, 0.37)
			}
			for i, z := range acc[0] {
				y := acc[1][i]
				if i >= 64 && math.Float32bits(z) != math.Float32bits(want[i]) {
					t.Fatalf("%s: column %d written", name, i)
				}
				if math.Float32bits(z) != math.Float32bits(y) && !(z != z && y != y) {
					t.Fatalf("%s: column %d = %v, YMM kernel %v", name, i, z, y)
				}
			}
		}
	}
}

// TestAddQ1x64ZD: addE4M3Q1x64ZD and addE4M3Q1x64TZD, which widen E4M3 codes straight
// to float32 and scale each weight to match, give their YMM twins' sums bit for bit
// wherever they report true, and report true for weights of every magnitude below
// 2¹⁶ (tiny ones included, whose weights and products are float32 subnormals) over
// rows of random bytes (every code, subnormals and NaN codes included); for a weight
// whose 2¹¹² multiple overflows, or a NaN weight, they report false and leave acc as
// it was.
func TestAddQ1x64ZD(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 BW")
	}
	r := rand.New(rand.NewPCG(103, 104))
	type add func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32)
	for _, k := range []struct {
		name string
		d    func(acc, w, src unsafe.Pointer, stride uintptr, n int, so int, mul float32) bool
		y    add
		hdr  int
	}{
		{"e4m3", addE4M3Q1x64ZD, addE4M3Q1x64F16C, 2},
		{"e4m3/tensor", addE4M3Q1x64TZD, addE4M3Q1x64TF16C, 0},
	} {
		for _, n := range []int{1, 2, 5, 17, 64, 100} {
			for _, wkind := range []string{"normal", "tiny", "large", "nan"} {
				name := fmt.Sprintf("%s/n=%d/%s", k.name, n, wkind)
				stride := k.hdr + 64 + 8*r.IntN(3)
				rows := make([]byte, n*stride)
				for i := range rows {
					rows[i] = byte(r.Uint32())
					if i%stride == 1 && k.hdr > 0 {
						rows[i] &= 0x3f // finite f16 scales, below 2
					}
				}
				w := make([]float32, n)
				for i := range w {
					w[i] = float32(r.NormFloat64()) * float32(math.Ldexp(1, r.IntN(40)-36))
					if wkind == "tiny" {
						w[i] *= 0x1p-100
					}
				}
				switch wkind {
				case "large": // 2¹⁶ after the scale (at least 2⁻¹⁴) and 0.37
					w[r.IntN(n)] = 0x1p40
				case "nan":
					w[r.IntN(n)] = float32(math.NaN())
				}
				acc := [2][]float32{make([]float32, 80), nil} // 64 columns added, 16 left alone
				for i := range acc[0] {
					if wkind != "tiny" { // tiny sums start at 0, so that their low bits count
						acc[0][i] = float32(r.NormFloat64())
					}
				}
				acc[1] = append([]float32(nil), acc[0]...)
				before := append([]float32(nil), acc[0]...)
				ok := k.d(unsafe.Pointer(&acc[0][0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&rows[k.hdr]), uintptr(stride), n, -k.hdr, 0.37)
				if want := wkind == "normal" || wkind == "tiny"; ok != want {
					t.Fatalf("%s: reported %v, want %v", name, ok, want)
				}
				k.y(unsafe.Pointer(&acc[1][0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&rows[k.hdr]), uintptr(stride), n, -k.hdr, 0.37)
				for i, z := range acc[0] {
					if !ok || i >= 64 {
						if math.Float32bits(z) != math.Float32bits(before[i]) {
							t.Fatalf("%s: column %d written", name, i)
						}
						continue
					}
					if y := acc[1][i]; math.Float32bits(z) != math.Float32bits(y) {
						t.Fatalf("%s: column %d = %v, YMM kernel %v", name, i, z, y)
					}
				}
			}
		}
	}
}

// directQuery returns n query values for the tests of the E4M3 kernels that scale
// queries by 2¹¹² (dotE4M3R4ZD, dotE4M3Q4ZD), by kind: "normal", magnitudes from 2⁻⁶⁰
// to just under 2¹⁶; "tiny", those times 2⁻⁸⁰ (products down to float32 subnormals);
// "nan", one of them NaN; "large", one of them ±2¹⁶, 3e38 or an infinity, which the
// kernels must decline.
func directQuery(r *rand.Rand, n int, kind string) []float32 {
	q := make([]float32, n)
	for i := range q {
		q[i] = float32(r.NormFloat64()) * float32(math.Ldexp(1, r.IntN(70)-56))
		if kind == "tiny" {
			q[i] *= 0x1p-80
		}
		if math.Abs(float64(q[i])) >= 0x1p16 {
			q[i] = 0x1.fffffep15
		}
	}
	switch kind {
	case "nan":
		q[r.IntN(n)] = float32(math.NaN())
	case "large":
		q[r.IntN(n)] = []float32{0x1p16, -0x1p16, 3e38, float32(math.Inf(-1)), float32(math.Inf(1))}[r.IntN(5)]
	}
	return q
}

// scaledQuery returns q times 2¹¹² by scaleQuery112 and whether it reported the
// multiples exact, failing t unless it reports false for the "large" kind (a |q| ≥
// 2¹⁶) and true for the others.
func scaledQuery(t *testing.T, name string, q []float32, kind string) ([]float32, bool) {
	t.Helper()
	qd := make([]float32, len(q))
	ok := scaleQuery112(unsafe.Pointer(&qd[0]), unsafe.Pointer(&q[0]), len(q))
	if want := kind != "large"; ok != want {
		t.Fatalf("%s: scaleQuery112 reported %v, want %v", name, ok, want)
	}
	return qd, ok
}
