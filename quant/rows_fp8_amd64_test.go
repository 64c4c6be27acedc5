//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// fp8FusedF16C reports whether the SIMD set scores and adds FP8 rows (d a multiple
// of 16) with the kernels of rows_fp8_amd64.s: on CPUs with F16C.
func fp8FusedF16C() bool { return haveF16C }

// fp8Codecs are the FP8 codecs of the FP8 kernel tests: both formats, per-row scale
// and tensor scale.
var fp8Codecs = []FP8{
	{Format: E4M3}, {Format: E5M2},
	{Format: E4M3, TensorScale: 0.01}, {Format: E5M2, TensorScale: 1.0 / 4096},
}

// fp8Finite reports whether code is a finite value of format f.
func fp8Finite(f FP8Format, code byte) bool {
	if f == E5M2 {
		return code&0x7c != 0x7c
	}
	return code&0x7f != 0x7f
}

// fp8Rows writes n rows of d random codes of c at stride bytes (the bytes between
// rows are 0x7F, a NaN code in both formats, so a kernel reading them shows), each
// code drawn from the format's finite codes (every one marked in seen), each per-row
// scale a random f16 from about 2⁻¹⁴ to 2⁴ or, one row in eight, a subnormal f16.
// It returns the rows and their decoded values (c.Decode).
func fp8Rows(r *rand.Rand, c FP8, n, d, stride int, seen *[256]bool) (src []byte, dec []float32) {
	rb := c.RowBytes(d)
	src = make([]byte, (n-1)*stride+rb)
	for i := range src {
		src[i] = 0x7f
	}
	dec = make([]float32, n*d)
	for i := range n {
		row := src[i*stride:][:rb]
		codes := row
		if c.TensorScale == 0 {
			h := uint16(1+r.IntN(18))<<10 | uint16(r.IntN(1024))
			if i%8 == 5 {
				h = uint16(1 + r.IntN(1023))
			}
			putF16(row, h|uint16(r.IntN(2))<<15)
			codes = row[2:]
		}
		for k := range codes {
			b := byte(r.IntN(256))
			for !fp8Finite(c.Format, b) {
				b = byte(r.IntN(256))
			}
			codes[k] = b
			seen[b] = true
		}
		c.Decode(dec[i*d:(i+1)*d], row)
	}
	return src, dec
}

// TestFP8RowKernels checks DotRows and AddRows of FP8 rows with the SIMD set active,
// with the F16C kernels (rows_fp8_amd64.s) on and off, against the scalar twin
// (FP8.Dot and FP8.AddScaled per row and query) and against float64 products with
// the decoded rows: both formats, per-row and tensor scale, 1 to 9 queries, 1 to 40
// rows, head sizes 16, 48, 64 and 128, rows strided past their length, leading
// dimensions larger than needed, guards around the outputs, and every finite code.
// With F16C on, the FP8 kernels must take every shape.
func TestFP8RowKernels(t *testing.T) {
	if simdKernels == nil {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	prev := active.Load()
	defer active.Store(prev)
	active.Store(simdKernels)
	defer setF16C(setF16C(true))
	const guard = -777
	r := rand.New(rand.NewPCG(31, 32))
	for _, f16c := range f16cModes() {
		setF16C(f16c)
		for _, c := range fp8Codecs {
			var seen [256]bool
			for _, d := range []int{16, 48, 64, 128} {
				for g := 1; g <= 9; g++ {
					for n := 1; n <= 40; n++ {
						name := fmt.Sprintf("f16c=%v/%s/g=%d/n=%d/d=%d", f16c, c.Name(), g, n, d)
						stride := c.RowBytes(d) + 1 + r.IntN(7)
						src, dec := fp8Rows(r, c, n, d, stride, &seen)
						ld := n + 1 + r.IntN(3)
						q := gaussRow(r, g*d, 1)
						w := gaussRow(r, (g-1)*ld+n, 1)
						acc0 := gaussRow(r, g*d, 1)
						tmp := make([]float32, ScratchFloats(d))
						if f16c {
							scores := make([]float32, (g-1)*ld+n)
							acc := append([]float32(nil), acc0...)
							if !simdKernels.dotRows(kernelsOf(c), c, scores, ld, q, g, src, stride, n, d, tmp) || !simdKernels.addRows(kernelsOf(c), c, acc, w, ld, g, src, stride, n, d, tmp) {
								t.Fatalf("%s: the FP8 kernels did not take the shape", name)
							}
						}
						scores := constRow((g-1)*ld+n+4, guard)
						DotRows(c, scores, ld, q, g, src, stride, n, tmp)
						acc := append(append([]float32(nil), acc0...), guard, guard)
						AddRows(c, acc[:g*d], w, ld, g, src, stride, n, tmp)
						checkFP8Rows(t, name, c, src, stride, dec, scores, acc, q, w, acc0, g, n, d, ld, guard)
					}
				}
			}
			for b := range 256 {
				if fp8Finite(c.Format, byte(b)) && !seen[b] {
					t.Errorf("%s: code %#02x never tested", c.Name(), b)
				}
			}
		}
	}
}

// checkFP8Rows compares the scores and accumulators of g queries over n rows with
// FP8.Dot and FP8.AddScaled, within 4e-6 of the sum of the magnitudes of the terms
// (float64, from the decoded rows dec), and checks the guards after each query's
// scores, after the last and after the g·d accumulators.
func checkFP8Rows(t *testing.T, name string, c FP8, src []byte, stride int, dec, scores, acc, q, w, acc0 []float32, g, n, d, ld int, guard float32) {
	t.Helper()
	rb := c.RowBytes(d)
	for j := range g {
		qj := q[j*d : (j+1)*d]
		for i := range n {
			var mag float64
			for k, v := range dec[i*d : (i+1)*d] {
				mag += math.Abs(float64(qj[k]) * float64(v))
			}
			want := c.Dot(qj, src[i*stride:][:rb])
			if got := scores[j*ld+i]; math.Abs(float64(got)-float64(want)) > 4e-6*mag+1e-30 {
				t.Fatalf("%s: score (%d,%d) = %v, FP8.Dot %v (|terms| %g)", name, j, i, got, want, mag)
			}
		}
		for i := n; i < ld && j*ld+i < len(scores); i++ {
			if scores[j*ld+i] != guard {
				t.Fatalf("%s: score (%d,%d) past the rows written", name, j, i)
			}
		}
	}
	for i := (g-1)*ld + n; i < len(scores); i++ {
		if scores[i] != guard {
			t.Fatalf("%s: score %d past the output written", name, i)
		}
	}
	want := append([]float32(nil), acc0...)
	mag := make([]float64, g*d)
	for j := range g {
		for i := range n {
			c.AddScaled(want[j*d:(j+1)*d], w[j*ld+i], src[i*stride:][:rb])
			for k, v := range dec[i*d : (i+1)*d] {
				mag[j*d+k] += math.Abs(float64(w[j*ld+i]) * float64(v))
			}
		}
	}
	for p := range g * d {
		tol := 4e-6*(mag[p]+math.Abs(float64(acc0[p]))) + 1e-30
		if math.Abs(float64(acc[p])-float64(want[p])) > tol {
			t.Fatalf("%s: acc (%d,%d) = %v, FP8.AddScaled %v", name, p/d, p%d, acc[p], want[p])
		}
	}
	if acc[g*d] != guard || acc[g*d+1] != guard {
		t.Fatalf("%s: accumulator written past g·d", name)
	}
}

// TestFP8RowKernelsNonFinite pins what the FP8 kernels make of the codes that are
// not finite values. E5M2 ±Inf and NaN codes score and add as the scalar twin does
// (±Inf or NaN). The E4M3 NaN codes 0x7F and 0xFF count as ±480 times the scale (the
// documented difference from FP8.Dot, which gives NaN; FP8.Encode writes them only
// for NaN inputs).
func TestFP8RowKernelsNonFinite(t *testing.T) {
	if simdKernels == nil || !fp8FusedF16C() {
		t.Skip("no FP8 kernels in this build or on this CPU")
	}
	const d, n, g = 32, 5, 4
	// near: got is want (NaN for NaN, the same infinity) or within 1e-6 of it.
	near := func(got, want float32) bool {
		if want != want || math.IsInf(float64(want), 0) {
			return sameBits(got, want)
		}
		return math.Abs(float64(got-want)) <= 1e-6*math.Abs(float64(want))
	}
	for _, c := range fp8Codecs {
		s := float32(0.5)
		if c.TensorScale != 0 {
			s = c.TensorScale
		}
		specials := []byte{0x7f, 0xff} // E4M3 NaN
		if c.Format == E5M2 {
			specials = []byte{0x7c, 0xfc, 0x7d, 0xfe, 0x7f, 0xff} // ±Inf, NaN
		}
		for _, sp := range specials {
			for _, col := range []int{0, 13, d - 1} {
				rb := c.RowBytes(d)
				src := make([]byte, n*rb)
				for i := range n {
					row := src[i*rb : (i+1)*rb]
					codes := row
					if c.TensorScale == 0 {
						putF16(row, F32ToF16(s))
						codes = row[2:]
					}
					for k := range codes {
						codes[k] = 0x30 + byte(k%7) // finite in both formats
					}
					if i == 2 {
						codes[col] = sp
					}
				}
				// Query j and the weights of query j: j+1 at column col and row 2 only.
				q := make([]float32, g*d)
				w := make([]float32, g*n)
				for j := range g {
					q[j*d+col] = float32(j + 1)
					w[j*n+2] = float32(j + 1)
				}
				scores := make([]float32, g*n)
				acc := make([]float32, g*d)
				tmp := make([]float32, ScratchFloats(d))
				if !simdKernels.dotRows(kernelsOf(c), c, scores, n, q, g, src, rb, n, d, tmp) || !simdKernels.addRows(kernelsOf(c), c, acc, w, n, g, src, rb, n, d, tmp) {
					t.Fatalf("%s: the FP8 kernels did not take the shape", c.Name())
				}
				for j := range g {
					want := c.Dot(q[j*d:(j+1)*d], src[2*rb:3*rb])
					wantAcc := make([]float32, d)
					c.AddScaled(wantAcc, w[j*n+2], src[2*rb:3*rb])
					if c.Format == E4M3 {
						if want == want || wantAcc[col] == wantAcc[col] {
							t.Fatalf("%s: code %#02x is not NaN in FP8.Dot or FP8.AddScaled", c.Name(), sp)
						}
						v := 480 * s * float32(j+1)
						if sp&0x80 != 0 {
							v = -v
						}
						want, wantAcc[col] = v, v
					}
					if got := scores[j*n+2]; !near(got, want) {
						t.Errorf("%s code %#02x col %d: score %d = %v, want %v", c.Name(), sp, col, j, got, want)
					}
					if got := acc[j*d+col]; !near(got, wantAcc[col]) {
						t.Errorf("%s code %#02x col %d: acc %d = %v, want %v", c.Name(), sp, col, j, got, wantAcc[col])
					}
				}
			}
		}
	}
}

// TestFP8RowKernelsLargeTensorScale checks a tensor scale whose product with 2⁸
// overflows float32 (the values times the scale do not): the FP8 kernels leave such
// rows to tiles, whose results stay those of the decoded rows.
func TestFP8RowKernelsLargeTensorScale(t *testing.T) {
	c := FP8{Format: E4M3, TensorScale: 2e36}
	if _, _, _, ok := fp8Geom(c); ok {
		t.Fatal("fp8Geom takes a tensor scale whose product with 2⁸ overflows")
	}
	const d, n, g = 16, 3, 2
	r := rand.New(rand.NewPCG(33, 34))
	src := make([]byte, n*d)
	for i := range src {
		src[i] = byte(r.IntN(0x70)) | byte(r.IntN(2))<<7 // |value| ≤ 120
	}
	dec := make([]float32, n*d)
	DecodeRows(c, dec, src, d, n, d)
	q := gaussRow(r, g*d, 1e-36)
	w := gaussRow(r, g*n, 1e-36)
	scores := make([]float32, g*n)
	acc := make([]float32, g*d)
	tmp := make([]float32, ScratchFloats(d))
	DotRows(c, scores, n, q, g, src, d, n, tmp)
	AddRows(c, acc, w, n, g, src, d, n, tmp)
	for j := range g {
		for i := range n {
			var want, mag float64
			for k := range d {
				p := float64(q[j*d+k]) * float64(dec[i*d+k])
				want, mag = want+p, mag+math.Abs(p)
			}
			if got := float64(scores[j*n+i]); math.Abs(got-want) > 1e-5*mag {
				t.Fatalf("score (%d,%d) = %v, want %v", j, i, got, want)
			}
		}
		for k := range d {
			var want, mag float64
			for i := range n {
				p := float64(w[j*n+i]) * float64(dec[i*d+k])
				want, mag = want+p, mag+math.Abs(p)
			}
			if got := float64(acc[j*d+k]); math.Abs(got-want) > 1e-5*mag {
				t.Fatalf("acc (%d,%d) = %v, want %v", j, k, got, want)
			}
		}
	}
}

// TestFP8RowKernelsNoAlloc checks that DotRows and AddRows of FP8 rows allocate
// nothing (the kernels' closures stay on the stack).
func TestFP8RowKernelsNoAlloc(t *testing.T) {
	const d, n, g = 64, 16, 4
	r := rand.New(rand.NewPCG(35, 36))
	for _, c := range fp8Codecs {
		var seen [256]bool
		src, _ := fp8Rows(r, c, n, d, c.RowBytes(d), &seen)
		q := gaussRow(r, g*d, 1)
		w := gaussRow(r, g*n, 1)
		scores := make([]float32, g*n)
		acc := make([]float32, g*d)
		tmp := make([]float32, ScratchFloats(d))
		var rc RowCodec = c
		if a := testing.AllocsPerRun(20, func() {
			DotRows(rc, scores, n, q, g, src, c.RowBytes(d), n, tmp)
			AddRows(rc, acc, w, n, g, src, c.RowBytes(d), n, tmp)
		}); a != 0 {
			t.Errorf("%s: %v allocations per DotRows+AddRows", c.Name(), a)
		}
	}
}

// BenchmarkRowsStream times DotRows and AddRows as decode attention runs them over a
// long cache in kv's block layout: 64 blocks of 64 tokens, each block holding 12
// layers × 12 heads of 64 rows (d = 64) back to back, one call per block for one
// layer and head, the calls of an iteration covering the 4096 tokens of one layer
// and head, iterations cycling over the layers and heads (38 MB per codec, more than
// the caches hold). F16, BF16, Int8, FP8 and 4-bit and 2-bit Affine rows, g = 1 and
// 4; it reports ns per row (all g queries).
//
//	go test ./quant -run '^$' -bench RowsStream -benchtime=200ms
func BenchmarkRowsStream(b *testing.B) {
	const blocks, bt, d, heads, layers = 64, 64, 64, 12, 12
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []RowCodec{F16{}, BF16{}, Int8{}, FP8{Format: E4M3}, FP8{Format: E5M2}, Affine{Bits: 4, Group: 32}, Affine{Bits: 2, Group: 32}} {
		rb := c.RowBytes(d)
		sec := bt * rb // one layer and head of a block
		blockBytes := layers * heads * sec
		buf := make([]byte, blocks*blockBytes)
		row := make([]byte, rb)
		for i := 0; i < len(buf); i += rb {
			c.Encode(row, gaussRow(r, d, 1))
			copy(buf[i:], row)
		}
		for _, g := range []int{1, 4} {
			q := gaussRow(r, g*d, 1)
			w := gaussRow(r, g*bt, 0.01)
			scores := make([]float32, g*bt)
			acc := make([]float32, g*d)
			tmp := make([]float32, ScratchFloats(d))
			for _, op := range []string{"dot", "add"} {
				b.Run(fmt.Sprintf("%s/g=%d/%s", c.Name(), g, op), func(b *testing.B) {
					k := 0
					for b.Loop() {
						off := k % (layers * heads) * sec
						for j := range blocks {
							src := buf[j*blockBytes+off:]
							if op == "dot" {
								DotRows(c, scores, bt, q, g, src, rb, bt, tmp)
							} else {
								AddRows(c, acc, w, bt, g, src, rb, bt, tmp)
							}
						}
						k++
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*blocks*bt), "ns/row")
				})
			}
		}
	}
}

// TestDotFloatQ4Z: the ZMM four-query score kernels of float rows (dotE4M3Q4Z,
// dotE5M2Q4Z, dotF16Q4Z, dotBF16Q4Z) give their YMM twins' scores bit for bit (NaN
// for NaN): FP8 with a row scale (hdr 2) or a tensor scale (hdr 0, mul ≠ the unit),
// f16 and bf16 as they are (hdr 0, mul 1); for head sizes 16–256, row counts 4–64
// (multiples of 4), rows of random bytes (every value and code, any f16 scale; every
// other row finite) at a stride longer than the row, queries with a NaN in one of
// them; and write no score past the n rows.
func TestDotFloatQ4Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 BW")
	}
	r := rand.New(rand.NewPCG(95, 96))
	const guard = -666
	f16Q4 := func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, _ uintptr, _ float32) {
		dotF16Q4(out, ldb, q, qs, src, stride, n, d)
	}
	bf16Q4 := func(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d, _ uintptr, _ float32) {
		dotBF16Q4asm(out, ldb, q, qs, src, stride, n, d)
	}
	for _, k := range []struct {
		name string
		z, y fp8DotQ4Kernel
		vb   int   // bytes per value
		hdrs []int // row header bytes tried
	}{
		{"e4m3", dotE4M3Q4Z, dotE4M3Q4F16C, 1, []int{2, 0}},
		{"e5m2", dotE5M2Q4Z, dotE5M2Q4F16C, 1, []int{2, 0}},
		{"f16", dotF16Q4Z, f16Q4, 2, []int{0}},
		{"bf16", dotBF16Q4Z, bf16Q4, 2, []int{0}},
	} {
		for _, hdr := range k.hdrs {
			mul := float32(1.0 / 256)
			switch {
			case k.vb == 2:
				mul = 1
			case hdr == 0:
				mul = 0.37
			}
			for _, d := range []int{16, 32, 48, 64, 128, 256} {
				for _, n := range []int{4, 8, 20, 64} {
					name := fmt.Sprintf("%s/hdr=%d/d=%d/n=%d", k.name, hdr, d, n)
					stride := hdr + k.vb*d + r.IntN(5)
					src := make([]byte, n*stride)
					for i := range src {
						src[i] = byte(r.Uint32())
						if i/stride%2 == 1 && i%stride >= hdr {
							// Finite values in every other row: E5M2 (a third of codes are
							// not), and the top exponent bit of f16 and bf16.
							src[i] &^= 0x40
						}
					}
					q := make([]float32, 4*d)
					for i := range q {
						q[i] = float32(r.NormFloat64())
					}
					if n%8 == 4 {
						q[(n/4%4)*d+r.IntN(d)] = float32(math.NaN())
					}
					ld := n + 2
					out := [2][]float32{constRow(4*ld, guard), constRow(4*ld, guard)}
					for i, kern := range []fp8DotQ4Kernel{k.z, k.y} {
						kern(unsafe.Pointer(&out[i][0]), uintptr(4*ld), unsafe.Pointer(&q[0]), uintptr(4*d), unsafe.Pointer(&src[0]), uintptr(stride), n, uintptr(d), uintptr(hdr), mul)
					}
					checkZScores(t, name, out[0], out[1], ld, n, 4, guard)
				}
			}
		}
	}
}

// TestDotQ4ZD: dotE4M3Q4ZD, which widens E4M3 codes straight to float32, against the
// four queries scaled by scaleQuery112, gives dotE4M3Q4F16C's scores with the queries
// themselves bit for bit (NaN for NaN), with a row scale (hdr 2) or a tensor scale
// (hdr 0), for head sizes 16–512, row counts 4–64 (multiples of 4), rows of random
// bytes (every code, subnormals and NaN codes included) at a stride longer than the
// row, queries of every magnitude below 2¹⁶ (tiny ones too: products down to float32
// subnormals) with a NaN now and then; and writes no score past the rows.
func TestDotQ4ZD(t *testing.T) {
	if !haveVBMIGFNI {
		t.Skip("the kernel needs AVX-512 VBMI")
	}
	r := rand.New(rand.NewPCG(107, 108))
	const guard = -666
	for _, hdr := range []int{2, 0} {
		mul := float32(1.0 / 256)
		if hdr == 0 {
			mul = 0.37
		}
		for _, d := range []int{16, 32, 48, 64, 128, 256, 512} {
			for _, n := range []int{4, 8, 20, 64} {
				for _, qkind := range []string{"normal", "tiny", "nan", "large"} {
					name := fmt.Sprintf("hdr=%d/d=%d/n=%d/%s", hdr, d, n, qkind)
					stride := hdr + d + r.IntN(5)
					src := make([]byte, n*stride)
					for i := range src {
						src[i] = byte(r.Uint32())
					}
					q := directQuery(r, 4*d, qkind)
					qd, ok := scaledQuery(t, name, q, qkind)
					if !ok {
						continue
					}
					ld := n + 2
					out := [2][]float32{constRow(4*ld, guard), constRow(4*ld, guard)}
					dotE4M3Q4ZD(unsafe.Pointer(&out[0][0]), uintptr(4*ld), unsafe.Pointer(&qd[0]), uintptr(4*d), unsafe.Pointer(&src[0]), uintptr(stride), n, uintptr(d), uintptr(hdr), mul)
					dotE4M3Q4F16C(unsafe.Pointer(&out[1][0]), uintptr(4*ld), unsafe.Pointer(&q[0]), uintptr(4*d), unsafe.Pointer(&src[0]), uintptr(stride), n, uintptr(d), uintptr(hdr), mul)
					checkZScores(t, name, out[0], out[1], ld, n, 4, guard)
				}
			}
		}
	}
}

// TestE4M3QueryOutOfRange: queries with a value the direct E4M3 kernels cannot take
// (|q| ≥ 2¹⁶) score as DotRows scores them with the query as it is, bit for bit,
// whether prepared once by a RowPlan or scaled per call, and so do those they take.
func TestE4M3QueryOutOfRange(t *testing.T) {
	r := rand.New(rand.NewPCG(111, 112))
	c, d, n := FP8{Format: E4M3}, 64, 40
	src, stride, _ := lossyCase(r, c, n, d)
	tmp := make([]float32, ScratchFloats(d))
	for _, g := range []int{1, 4, 5} {
		for _, big := range []float32{1e5, 3} {
			name := fmt.Sprintf("g=%d/q=%v", g, big)
			q := gaussRow(r, g*d, 1)
			q[r.IntN(g*d)] = big
			ld := n + 1
			want := make([]float32, (g-1)*ld+n)
			scalarDot := make([]float32, len(want))
			prev := active.Load()
			active.Store(scalarKernels)
			DotRows(c, scalarDot, ld, q, g, src, stride, n, tmp)
			active.Store(prev)
			DotRows(c, want, ld, q, g, src, stride, n, tmp)
			p, err := NewRowPlan(c, d)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(want))
			var pq []float32
			if m := p.QueryFloats(g); m > 0 {
				pq = make([]float32, m)
				p.PrepareQuery(pq, q, g)
			}
			p.DotRowsPrepared(got, ld, q, pq, g, src, stride, n, tmp)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: prepared score %d = %v, DotRows %v", name, i, got[i], want[i])
				}
				if e := math.Abs(float64(want[i] - scalarDot[i])); e > 1e-3*math.Abs(float64(scalarDot[i]))+1e-3 || math.IsNaN(float64(want[i])) {
					t.Fatalf("%s: score %d = %v, the scalar kernels' %v", name, i, want[i], scalarDot[i])
				}
			}
		}
	}
}
