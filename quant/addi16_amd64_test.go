//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"kvq/internal/guardpage"
)

// TestAddI16Kernels checks addU4Q1I16 and addU2Q1I16, and their ZMM twins
// addU4Q1I16Z and addU2Q1I16Z where the CPU has AVX-512 VNNI (and addU4Q1I16ZC and
// addU2Q1I16ZC where it has VBMI and GFNI as well, on rows that follow one another), against the Go twin,
// addI16Go, over every block count up to the cap, rows of mixed kinds (lossyRowKinds: outliers,
// offsets, constant rows, the f16 range's edge, subnormal parameters), weights that
// are softmax-like (≥ 0, one large), Gaussian, with a NaN, with one product past the
// float32 range, or too small for code terms, at a row stride larger than the row
// or equal to it,
// with guards around the 64 columns: exactly, with the zero sums in the kernel's
// order (checkAddI16).
func TestAddI16Kernels(t *testing.T) {
	if !haveF16C {
		t.Skip("the kernels widen f16 parameters with F16C")
	}
	r := rand.New(rand.NewPCG(61, 62))
	for _, bits := range []int{4, 2} {
		c := Affine{Bits: bits, Group: 32}
		for nb := 1; nb <= addI16Blocks; nb++ {
			for _, wk := range []string{"softmax", "gauss", "nan", "huge", "tiny"} {
				n := 4 * nb
				src, stride, _ := lossyCase(r, c, n, 64)
				if (nb+len(wk))%2 == 0 { // rows that follow one another, odd and even nb
					src, stride = packRows(t, src, stride, c.RowBytes(64), n), c.RowBytes(64)
				}
				w := addI16Weights(r, wk, n)
				a0 := gaussRow(r, 64, 1)
				if wk == "tiny" {
					a0 = make([]float32, 64)
				}
				checkAddI16(t, fmt.Sprintf("%s/nb=%d/%s", c.Name(), nb, wk), bits, a0, w, src, stride, nb)
			}
		}
	}
}

// addI16Weights returns n weights of kind wk: "softmax" (in (e^-4, 1]), "gauss",
// "nan" (softmax with a NaN), "huge" (Gaussian with one 3e38: a product past the
// float32 range, P is NaN) or "tiny" (products near and below 2^-112, where code
// terms stop).
func addI16Weights(r *rand.Rand, wk string, n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		switch wk {
		case "softmax", "nan":
			w[i] = float32(math.Exp(-4 * r.Float64()))
		case "gauss", "huge":
			w[i] = float32(r.NormFloat64())
		case "tiny":
			w[i] = float32(1e-39 * r.Float64())
		}
	}
	switch wk {
	case "nan":
		w[r.IntN(n)] = float32(math.NaN())
	case "huge":
		w[r.IntN(n)] = 3e38
	}
	return w
}

// TestAddI16Z checks the four-query integer adds (addU4Q4I16Z, addU2Q4I16Z) against
// four calls of their one-query twins (addU4Q1I16, addU2Q1I16), bit for bit (checkAddI16Z), over every block
// count up to the cap: rows of mixed kinds at a stride larger than the row, each
// query's weights of another kind (addI16Weights: with a NaN, a product past the
// float32 range, products too small for code terms), a repeated query (the fourth
// slot the third's, as quad passes three queries); and rows whose first group's
// products have code terms while the second's, 2^-40 of them, fall below 2^-112.
func TestAddI16Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 BW and VNNI")
	}
	r := rand.New(rand.NewPCG(63, 64))
	kinds := []string{"softmax", "gauss", "nan", "huge", "tiny"}
	for _, bits := range []int{4, 2} {
		c := Affine{Bits: bits, Group: 32}
		gb := c.RowBytes(64) / 2
		for nb := 1; nb <= addI16Blocks; nb++ {
			for rep := range kinds {
				n := 4 * nb
				src, stride, _ := lossyCase(r, c, n, 64)
				var w [4][]float32
				for q := range w {
					w[q] = addI16Weights(r, kinds[(rep+q)%len(kinds)], n)
				}
				checkAddI16Z(t, fmt.Sprintf("%s/nb=%d/%d", c.Name(), nb, rep), bits, src, stride, nb, w, 4-rep%2)
			}
			// Scales 65504 and 2^-24 (the second group's zeros 0, so that its code terms
			// show) against weights near 2^-100.
			src, stride, _ := lossyCase(r, c, 4*nb, 64)
			for i := range 4 * nb {
				putF16(src[i*stride:], 0x7bff)
				putF16(src[i*stride+gb:], 0x0001)
				putF16(src[i*stride+gb+2:], 0)
			}
			var w [4][]float32
			for q := range w {
				w[q] = addI16Weights(r, "softmax", 4*nb)
				for i := range w[q] {
					w[q][i] *= 0x1p-100
				}
			}
			checkAddI16Z(t, fmt.Sprintf("%s/nb=%d/split", c.Name(), nb), bits, src, stride, nb, w, 4)
		}
	}
}

// checkAddI16Z runs addU4Q4I16Z (bits 4) or addU2Q4I16Z (bits 2) on the 4·nb rows of Affine{bits, 32} (2·32 values)
// at src, row stride stride, for the four queries' weights w (with nq = 3 the fourth
// slot repeats the third query: its accumulators and weights), and checks that each
// query's 64 columns are, bit for bit (NaN for NaN), what a call of its twin gives
// them, and that nothing is written outside them. The columns start at 0 where the
// query's products are small (its weights below 2^-60), so that code terms of tiny
// products show, else Gaussian.
func checkAddI16Z(t *testing.T, name string, bits int, src []byte, stride, nb int, w [4][]float32, nq int) {
	t.Helper()
	const guard = -777
	one, four := addU4Q1I16, addU4Q4I16Z
	if bits == 2 {
		one, four = addU2Q1I16, addU2Q4I16Z
	}
	lg, _ := lossyGeomOf(Affine{Bits: bits, Group: 32}, 64)
	cp := unsafe.Pointer(&src[lg.codeOff(0)])
	r := rand.New(rand.NewPCG(uint64(nb), uint64(stride)))
	var got, want [4][]float32
	for q := range got {
		a0 := gaussRow(r, 64, 1)
		if !slices.ContainsFunc(w[q], func(x float32) bool { return !(math.Abs(float64(x)) < 0x1p-60) }) {
			a0 = make([]float32, 64)
		}
		got[q] = append(append([]float32{guard}, a0...), guard)
		want[q] = append([]float32(nil), got[q]...)
	}
	if nq == 3 {
		w[3], got[3] = w[2], got[2]
	}
	ap := func(q int) unsafe.Pointer { return unsafe.Pointer(&got[q][1]) }
	wp := func(q int) unsafe.Pointer { return unsafe.Pointer(&w[q][0]) }
	four(ap(0), ap(1), ap(2), ap(3), wp(0), wp(1), wp(2), wp(3), cp, uintptr(stride), nb, lg.gb)
	for q := range nq {
		one(unsafe.Pointer(&want[q][1]), wp(q), cp, uintptr(stride), nb, lg.gb)
		for j, x := range want[q] {
			if g := got[q][j]; g != x && !(g != g && x != x) {
				t.Fatalf("%s: query %d slot %d (column %d) = %v, one query %v", name, q, j, j-1, g, x)
			}
		}
	}
}

// FuzzAddI16Kernels checks addU4Q1I16 and addU2Q1I16 as TestAddI16Kernels does
// (checkAddI16) on arbitrary rows: the bytes of rows repeated over all n = 4·nb rows
// and the bytes between them, so f16 scales and zeros of any value (NaN, ±Inf,
// negative, subnormal, up to ±65504) and any codes; with weights that are raw float32
// bits from ws (any value) or, without raw, softmax-like (e^(x−8) for fuzzFloats's x,
// in [1.1e-7, 0.97]), repeated over the rows; shape picks the bits (bit 0: 4, else
// 2), nb − 1 (bits 1–4) and the bytes between rows (bits 5–7). The columns start at
// 0 when ws has an odd length, else Gaussian.
func FuzzAddI16Kernels(f *testing.F) {
	if !haveF16C {
		f.Skip("the kernels widen f16 parameters with F16C")
	}
	// Ordinary rows (scale 1/16, zero −1, codes) and softmax-like weights, 4 bits, nb 4.
	f.Add([]byte{0x00, 0x2c, 0x00, 0xbc, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x0f, 0xe1}, []byte{1, 250, 128, 127, 0, 9, 64, 200}, uint8(6), false)
	// Two rows over and over, 2 bits, nb 16: the first group's scales NaN and +Inf (its
	// columns NaN), zeros −Inf and −0.5; the second's scales −2 and −65504, zeros 1 and
	// −2^-24 (subnormal), weighted by 1, 0.25, −3 and 2^-149 (raw, and a byte over:
	// the columns start at 0).
	f.Add([]byte{
		0x00, 0x7e, 0x00, 0xfc, 0xe4, 0x1b, 0x93, 0x6c, 0x00, 0xff, 0x55, 0xaa,
		0x00, 0xc0, 0x00, 0x3c, 0x1b, 0xe4, 0x6c, 0x93, 0xaa, 0x55, 0xff, 0x00,
		0x00, 0x7c, 0x00, 0xb8, 0x27, 0xd8, 0x72, 0x8d, 0x0f, 0xf0, 0x33, 0xcc,
		0xff, 0xfb, 0x01, 0x80, 0xd8, 0x27, 0x8d, 0x72, 0xf0, 0x0f, 0xcc, 0x33,
	}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3e, 0, 0, 0x40, 0xc0, 1, 0, 0, 0, 0x7f}, uint8(0x1f), true)
	// Where the order of the zero sums shows: constant rows (scale 0, zero 1) and one
	// weight 1 with 63 of 2^-24·(1+2^-20), each of which the twin's running sum rounds
	// up by half an ulp, the kernel's lanes not (2.9e-6 apart, 7 times 4e-7).
	ws := make([]byte, 4*64)
	for i := range 64 {
		b := math.Float32bits(0x1p-24 + 0x1p-44)
		if i == 0 {
			b = math.Float32bits(1)
		}
		ws[4*i], ws[4*i+1], ws[4*i+2], ws[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	f.Add([]byte{0x00, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, ws, uint8(0x1e), true)
	f.Fuzz(func(t *testing.T, rows, ws []byte, shape uint8, raw bool) {
		wf := fuzzFloats(ws, raw)
		if len(rows) == 0 || len(wf) == 0 {
			return
		}
		bits := 4 - 2*int(shape&1)
		nb, n := 1+int(shape>>1&15), 4+4*int(shape>>1&15)
		c := Affine{Bits: bits, Group: 32}
		stride := c.RowBytes(64) + int(shape>>5)
		src := make([]byte, (n-1)*stride+c.RowBytes(64))
		for i := range src {
			src[i] = rows[i%len(rows)]
		}
		w := make([]float32, n)
		for i := range w {
			w[i] = wf[i%len(wf)]
			if !raw {
				w[i] = float32(math.Exp(float64(w[i]) - 8))
			}
		}
		a0 := make([]float32, 64) // where code terms of tiny products show
		if len(ws)%2 == 0 {
			a0 = gaussRow(rand.New(rand.NewPCG(uint64(len(rows)), uint64(shape))), 64, 1)
		}
		checkAddI16(t, fmt.Sprintf("%s/nb=%d/stride=%d", c.Name(), nb, stride), bits, a0, w, src, stride, nb)
	})
}

// checkAddI16 runs addU4Q1I16 (bits 4) or addU2Q1I16 (bits 2) on the 4·nb rows of
// Affine{bits, 32} (2·32 values) at src, row stride stride, weighted by w, adding
// to a copy of a0 with guards around it, and checks that nothing is written outside
// the 64 columns and that column j of group k is exactly (as float32 values, NaN
// for NaN)
//
//	a0_j + (T_j + Z_k)
//
// with T_j its code term fl(float32(Σ_i π_i·code_ij)·P_k) as the twin computes it
// (the twin's column from 0 for the rows with their zeros cleared: its zero sum is
// then +0, or NaN with a non-finite weight, where P_k is NaN as well) and Z_k the
// group's zero sum Σ_i w_i·zero_ik in the kernel's order (addI16ZeroSum).
//
// The kernel and its twin differ only in Z, and no tolerance from the magnitudes
// summed covers that for every input. The products, their largest magnitudes, the
// int16 roundings and the integer sums, so T, are the kernel's bit for bit (where a
// product is NaN or ±Inf, P, T and the columns are NaN in both); but the twin adds
// the rounded products w_i·zero_i one row after another, and a running sum's
// rounding errors can add up to nearly one rounding of its largest partial sum per
// row (FuzzAddI16Kernels's third seed: 2.9e-6 of Σ|w_i·zero_i| apart, 7 times the
// 4e-7 of the magnitudes that random rows keep within), and where partial sums leave
// the float32 range one order can give ±Inf, or NaN (+Inf and −Inf), where the other
// gives a finite sum or the other Inf. With Z in the kernel's order nothing is left
// to tolerate and no input to exempt.
func checkAddI16(t *testing.T, name string, bits int, a0, w []float32, src []byte, stride, nb int) {
	t.Helper()
	const guard = -777
	kerns := []func(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr){addU4Q1I16}
	if haveVNNI512 { // the ZMM twin needs AVX-512 BW and VNNI
		kerns = append(kerns, addU4Q1I16Z)
	}
	if haveVBMIGFNI && stride == 40 { // rows that follow one another
		kerns = append(kerns, addU4Q1I16ZC)
	}
	if bits == 2 {
		kerns = []func(a, w, cp unsafe.Pointer, stride uintptr, nb int, gb uintptr){addU2Q1I16}
		if haveVNNI512 {
			kerns = append(kerns, addU2Q1I16Z)
		}
		if haveVBMIGFNI && stride == 24 { // rows that follow one another
			kerns = append(kerns, addU2Q1I16ZC)
		}
	}
	lg, _ := lossyGeomOf(Affine{Bits: bits, Group: 32}, 64)
	n, gb := 4*nb, int(lg.gb)
	gots := make([][]float32, len(kerns))
	for i, kern := range kerns {
		got := append(append(append([]float32{guard}, a0...), guard), guard)
		kern(unsafe.Pointer(&got[1]), unsafe.Pointer(&w[0]), unsafe.Pointer(&src[lg.codeOff(0)]), uintptr(stride), nb, lg.gb)
		if got[0] != guard || got[65] != guard || got[66] != guard {
			t.Fatalf("%s (kernel %d): written outside the 64 columns", name, i)
		}
		gots[i] = got
	}
	noZero := append([]byte(nil), src...)
	for i := range n {
		for k := range 2 {
			noZero[i*stride+k*gb+2], noZero[i*stride+k*gb+3] = 0, 0
		}
	}
	codeTerm := make([]float32, 64)
	addI16Go(codeTerm, w, noZero, stride, gb, n, bits)
	for k := range 2 {
		z := addI16ZeroSum(w, src[k*gb:], stride, n)
		for j := 32 * k; j < 32*(k+1); j++ {
			want := a0[j] + (codeTerm[j] + z)
			for i, got := range gots {
				if g := got[1+j]; g != want && !(g != g && want != want) {
					twin := append([]float32(nil), a0...)
					addI16Go(twin, w, src, stride, gb, n, bits)
					t.Fatalf("%s (kernel %d): column %d = %v, want %v = %v + (%v + %v) (twin %v)", name, i, j, g, want, a0[j], codeTerm[j], z, twin[j])
				}
			}
		}
	}
}

// addI16ZeroSum returns Σ_i w_i·zero_i over the n rows at rows (row stride stride),
// zero_i the f16 2 bytes into row i, in the kernels' order: lane l of four sums rows
// l, l+4, l+8, … from +0 by fused multiply-adds (one rounding each, fma32), and the
// sum is (l0 + l2) + (l1 + l3).
func addI16ZeroSum(w []float32, rows []byte, stride, n int) float32 {
	var l [4]float32
	for i := range n {
		l[i%4] = fma32(w[i], getF16(rows[i*stride+2:]), l[i%4])
	}
	return (l[0] + l[2]) + (l[1] + l[3])
}

// fma32 returns a·b + c rounded once to float32, as VFMADD231PS gives it: a·b is exact
// in float64, their sum rounded to odd there (TwoSum's remainder says which way it
// was rounded) then rounds to float32 as the exact sum would, 53 bits being at least
// 24 + 2.
func fma32(a, b, c float32) float32 {
	x := float64(a) * float64(b)
	s := x + float64(c)
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	v := s - x
	if e := (x - (s - v)) + (float64(c) - v); e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Inf(int(math.Copysign(1, e))))
	}
	return float32(s)
}

// TestAddInt8I16Z checks addInt8Q4I16Z against its Go twin, addInt8I16Go, for each
// query bit for bit (NaN for NaN): head sizes 64–256, every block count up to the
// cap, encoded rows of mixed kinds or rows of random bytes (any f16 scale, NaN and
// ±Inf among them, and every code, −128 too) at a stride longer than the row, each
// query's weights of another kind (addI16Weights) and a repeated query (the fourth
// slot the third's), with guards around each query's columns.
func TestAddInt8I16Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernel needs AVX-512 BW and VNNI")
	}
	const guard = -777
	r := rand.New(rand.NewPCG(65, 66))
	kinds := []string{"softmax", "gauss", "nan", "huge", "tiny"}
	for _, d := range []int{64, 128, 192, 256} {
		for nb := 1; nb <= addI16Blocks; nb++ {
			for rep := range kinds {
				n := 4 * nb
				src, stride, _ := lossyCase(r, Int8{}, n, d)
				if rep == 2 { // random bytes
					for i := range src {
						src[i] = byte(r.Uint32())
					}
				}
				name := fmt.Sprintf("d=%d/nb=%d/%d", d, nb, rep)
				var w [4][]float32
				var got [4][]float32
				for q := range 4 {
					w[q] = addI16Weights(r, kinds[(rep+q)%len(kinds)], n)
					a0 := gaussRow(r, d, 1)
					if kinds[(rep+q)%len(kinds)] == "tiny" { // where code terms of tiny products show
						a0 = make([]float32, d)
					}
					got[q] = append(append([]float32{guard}, a0...), guard)
				}
				nq := 4 - rep%2
				if nq == 3 {
					w[3], got[3] = w[2], got[2]
				}
				want := make([][]float32, 4)
				for q := range nq {
					want[q] = append([]float32(nil), got[q]...)
					addInt8I16Go(want[q][1:1+d], w[q], src, stride, n, d)
				}
				ap := func(q int) unsafe.Pointer { return unsafe.Pointer(&got[q][1]) }
				wp := func(q int) unsafe.Pointer { return unsafe.Pointer(&w[q][0]) }
				addInt8Q4I16Z(ap(0), ap(1), ap(2), ap(3), wp(0), wp(1), wp(2), wp(3), unsafe.Pointer(&src[0]), uintptr(stride), nb, d)
				for q := range nq {
					for j, x := range want[q] {
						if g := got[q][j]; g != x && !(g != g && x != x) {
							t.Fatalf("%s: query %d slot %d (column %d) = %v, addInt8I16Go %v", name, q, j, j-1, g, x)
						}
					}
				}
			}
		}
	}
}

// packRows returns the n rows of rb bytes at src (stride bytes apart) back to back,
// ending at an unreadable page (guardpage.Bytes): a kernel reading past the last
// row faults.
func packRows(tb testing.TB, src []byte, stride, rb, n int) []byte {
	out := guardpage.Bytes(tb, n*rb)
	for i := range n {
		copy(out[i*rb:], src[i*stride:][:rb])
	}
	return out
}
