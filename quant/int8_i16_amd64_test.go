//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"kvq/internal/cpufeat"
	"kvq/internal/guardpage"
)

// TestQuantQueryI16 checks the assembly quantizer against quantQueryI16Go bit for bit
// (codes, then D, nothing written past them), over query lengths, magnitudes from
// 1e-37 (taken as zero) to 1e30, zero queries, lone values, outliers and queries
// below zero, and that each value's round trip is within D/2 of it (and float
// rounding); a NaN or infinite value makes D NaN in both.
func TestQuantQueryI16(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("no AVX2: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(43, 44))
	for _, d := range []int{16, 32, 64, 80, 128, 256} {
		for _, amp := range []float64{1e-37, 1e-31, 1e-3, 1, 1e30} {
			for _, shape := range []string{"gauss", "zero", "lone value", "outlier", "negative", "nan", "inf"} {
				name := fmt.Sprintf("d=%d/amp=%g/%s", d, amp, shape)
				q := gaussRow(r, d, amp)
				switch shape {
				case "zero":
					clear(q)
				case "lone value":
					clear(q)
					q[r.IntN(d)] = float32(-amp)
				case "outlier":
					q[r.IntN(d)] *= 1000
				case "negative": // all values below zero
					for i := range q {
						q[i] = -float32(math.Abs(float64(q[i])))
					}
				case "nan":
					q[r.IntN(d)] = float32(math.NaN())
				case "inf":
					q[r.IntN(d)] = float32(math.Inf(-1))
				}
				want := make([]int16, d)
				wantD := quantQueryI16Go(want, q)
				got := make([]int16, d+4) // codes, D (two int16s), guards
				got[d+2], got[d+3] = 99, 99
				quantQueryI16(unsafe.Pointer(&got[0]), unsafe.Pointer(&q[0]), d)
				gotD := *(*float32)(unsafe.Pointer(&got[d]))
				if shape == "nan" || shape == "inf" {
					// The codes are unspecified; D is NaN, so every score is.
					if !math.IsNaN(float64(gotD)) || !math.IsNaN(float64(wantD)) {
						t.Fatalf("%s: D = %v (Go twin %v), want NaN", name, gotD, wantD)
					}
					continue
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s: code %d = %d, want %d", name, i, got[i], want[i])
					}
				}
				if !sameBits(gotD, wantD) {
					t.Fatalf("%s: D = %v, want %v", name, gotD, wantD)
				}
				if got[d+2] != 99 || got[d+3] != 99 {
					t.Fatalf("%s: written past D", name)
				}
				rt := roundTripI16(q, d)
				half := float64(wantD) / 2
				if wantD == 0 {
					half = 0x1p-111 // below 2^-110 a query is taken as zero
				}
				for c := range q {
					// D/2, plus float32 rounding of q·inv and D·q̂ (up to 32767·D).
					if e := math.Abs(float64(q[c]) - float64(rt[c])); e > half+math.Abs(float64(q[c]))*0x1p-22 {
						t.Fatalf("%s: value %d = %v round-trips to %v, off by more than D/2 = %v", name, c, q[c], rt[c], half)
					}
				}
			}
		}
	}
}

// TestDotRowsI16Extremes scores Int8 rows whose codes are all ±127, and crafted rows
// of -128, against a query of equal values (every code ±32767): the largest integer
// sums the int16 kernel can meet, at head sizes up to maxI16Dim and past it (where the
// rows go elsewhere). The scores must match the decoded rows against ScoredQuery.
func TestDotRowsI16Extremes(t *testing.T) {
	c := Int8{}
	for _, d := range []int{16, 512, 528, 768, 1024, 2064} {
		for _, kind := range []string{"+127", "-127", "-128"} {
			row := make([]byte, c.RowBytes(d))
			x := make([]float32, d)
			for i := range x {
				x[i] = 1
				if kind != "+127" {
					x[i] = -1
				}
			}
			c.Encode(row, x)
			if kind == "-128" {
				for i := 2; i < len(row); i++ {
					row[i] = 0x80
				}
			}
			dec := make([]float32, d)
			c.Decode(dec, row)
			const n = 5
			rows := make([]byte, 0, n*len(row))
			for range n {
				rows = append(rows, row...)
			}
			q := constRow(d, 1)
			qk := ScoredQuery(c, q, d)
			var want float64
			for i := range d {
				want += float64(qk[i]) * float64(dec[i])
			}
			scores := make([]float32, n)
			DotRows(c, scores, n, q, 1, rows, len(row), n, make([]float32, ScratchFloats(d)))
			for i, s := range scores {
				if math.Abs(float64(s)-want) > 1e-5*math.Abs(want) {
					t.Errorf("d=%d rows %s: score %d = %v, want %v", d, kind, i, s, want)
				}
			}
		}
	}
}

// TestChanQueryI16 checks chanQueryI16F16C against channelQueryF16C, splitEvenOdd and
// quantQueryI16 run one after the other: the same int16 codes bit for bit, the same
// D (as a value: a zero D's sign may differ) and b, over head sizes, magnitudes, zero
// queries and a NaN, split and not.
func TestChanQueryI16(t *testing.T) {
	if !cpufeat.AVX2FMA || !haveF16C {
		t.Skip("no AVX2 or F16C: the assembly does not run")
	}
	r := rand.New(rand.NewPCG(45, 46))
	same := func(a, b float32) bool { return a == b || a != a && b != b }
	for _, d := range []int{16, 32, 64, 128, 256} {
		c := Channel{Bits: 4}
		const tt = 8
		block := make([]byte, c.BlockBytes(tt, d))
		src := gaussRow(r, tt*d, 1)
		for i := range src {
			src[i] *= float32(1 + i%d%7) // channel scales of different sizes
		}
		c.Encode(block, src, tt, d)
		for _, amp := range []float64{1e-30, 1, 1e20} {
			for _, shape := range []string{"gauss", "zero", "nan"} {
				for _, split := range []int{0, 1} {
					name := fmt.Sprintf("d=%d/amp=%g/%s/split=%d", d, amp, shape, split)
					q := gaussRow(r, d, amp)
					switch shape {
					case "zero":
						clear(q)
					case "nan":
						q[r.IntN(d)] = float32(math.NaN())
					}
					qs, b := make([]float32, d), make([]float32, 1)
					channelQueryF16C(unsafe.Pointer(&qs[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&block[0]), 1, d)
					if split == 1 {
						splitEvenOdd(unsafe.Pointer(&qs[0]), unsafe.Pointer(&qs[0]), d/16)
					}
					want := make([]float32, d)
					quantQueryI16(unsafe.Pointer(&want[0]), unsafe.Pointer(&qs[0]), d)
					got := make([]float32, d)
					chanQueryI16F16C(unsafe.Pointer(&got[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&block[0]), d, split)
					gc := unsafe.Slice((*int16)(unsafe.Pointer(&got[0])), d)
					wc := unsafe.Slice((*int16)(unsafe.Pointer(&want[0])), d)
					if shape != "nan" { // with a NaN, D is NaN and the codes do not matter
						for i := range d {
							if gc[i] != wc[i] {
								t.Fatalf("%s: code %d = %d, want %d", name, i, gc[i], wc[i])
							}
						}
					}
					if !same(got[d/2], want[d/2]) || !same(got[d/2+1], b[0]) {
						t.Fatalf("%s: D, b = %v, %v; want %v, %v", name, got[d/2], got[d/2+1], want[d/2], b[0])
					}
				}
			}
		}
	}
}

// TestChanQuery4I16Z checks chanQuery4I16Z against four calls of chanQueryI16F16C:
// each query's int16 codes bit for bit (where its D is not NaN: then the codes do not
// matter), D (as a value: a zero D's sign may differ) and b, over head sizes up to
// 512, split and not, the four queries of different magnitudes (below the smallest
// that gets codes, just above it), a zero query and a NaN.
func TestChanQuery4I16Z(t *testing.T) {
	if !haveVNNI512 || !haveF16C {
		t.Skip("the kernel needs AVX-512")
	}
	r := rand.New(rand.NewPCG(47, 48))
	same := func(a, b float32) bool { return a == b || a != a && b != b }
	shapes := []string{"gauss", "zero", "nan", "tiny", "huge", "edge"}
	for _, d := range []int{16, 32, 48, 64, 128, 256, 512} {
		c := Channel{Bits: 4}
		const tt = 8
		block := make([]byte, c.BlockBytes(tt, d))
		src := gaussRow(r, tt*d, 1)
		for i := range src {
			src[i] *= float32(1 + i%d%7)
		}
		c.Encode(block, src, tt, d)
		for rep := range shapes {
			for _, split := range []int{0, 1} {
				q := make([]float32, 4*d)
				for j := range 4 {
					qj := q[j*d : (j+1)*d]
					copy(qj, gaussRow(r, d, 1))
					switch shapes[(rep+j)%len(shapes)] {
					case "zero":
						clear(qj)
					case "nan":
						qj[r.IntN(d)] = float32(math.NaN())
					case "tiny": // below 2^-110 once scaled: no codes
						for i := range qj {
							qj[i] *= 1e-36
						}
					case "huge":
						for i := range qj {
							qj[i] *= 1e20
						}
					case "edge": // the largest |q·scale| near 2^-110.5, between the cut-offs of 2^-111 and 2^-110
						var m float64
						for i, x := range qj {
							m = max(m, math.Abs(float64(x)*float64(getF16(block[4*i:]))))
						}
						for i := range qj {
							qj[i] *= float32(math.Exp2(-110.5) / m)
						}
					}
				}
				got := make([]float32, 4*d)
				chanQuery4I16Z(unsafe.Pointer(&got[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&block[0]), d, split)
				for j := range 4 {
					name := fmt.Sprintf("d=%d/rep=%d/split=%d/query %d (%s)", d, rep, split, j, shapes[(rep+j)%len(shapes)])
					want := make([]float32, d)
					chanQueryI16F16C(unsafe.Pointer(&want[0]), unsafe.Pointer(&q[j*d]), unsafe.Pointer(&block[0]), d, split)
					g := got[j*d : (j+1)*d]
					if !same(g[d/2], want[d/2]) || math.Float32bits(g[d/2+1]) != math.Float32bits(want[d/2+1]) && !same(g[d/2+1], want[d/2+1]) {
						t.Fatalf("%s: D, b = %v, %v; want %v, %v", name, g[d/2], g[d/2+1], want[d/2], want[d/2+1])
					}
					if want[d/2] != want[d/2] {
						continue
					}
					gc := unsafe.Slice((*int16)(unsafe.Pointer(&g[0])), d)
					wc := unsafe.Slice((*int16)(unsafe.Pointer(&want[0])), d)
					for i := range d {
						if gc[i] != wc[i] {
							t.Fatalf("%s: code %d = %d, want %d", name, i, gc[i], wc[i])
						}
					}
				}
			}
		}
	}
}

// TestChannelQuery4Z checks channelQuery4Z against channelQueryF16C of the same four
// queries: every pre-scaled value and each b bit for bit (NaN for NaN), over head sizes
// up to 512 and queries of different magnitudes, a zero query and a NaN.
func TestChannelQuery4Z(t *testing.T) {
	if !haveVNNI512 || !haveF16C {
		t.Skip("the kernel needs AVX-512")
	}
	r := rand.New(rand.NewPCG(51, 52))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, d := range []int{16, 32, 48, 64, 128, 512} {
		for _, bits := range []int{2, 4} {
			c := Channel{Bits: bits}
			const tt = 8
			block := make([]byte, c.BlockBytes(tt, d))
			src := gaussRow(r, tt*d, 1)
			for i := range src {
				src[i] = src[i]*float32(1+i%d%7) + float32(i%d%3) // channels of different scales and offsets
			}
			c.Encode(block, src, tt, d)
			for rep := range 4 {
				q := gaussRow(r, 4*d, math.Exp2(float64(r.IntN(60)-30)))
				switch rep {
				case 1:
					clear(q[d : 2*d])
				case 2:
					q[2*d+r.IntN(d)] = float32(math.NaN())
				}
				got, want := make([]float32, 4*d), make([]float32, 4*d)
				gb, wb := make([]float32, 4), make([]float32, 4)
				channelQuery4Z(unsafe.Pointer(&got[0]), unsafe.Pointer(&gb[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&block[0]), d)
				channelQueryF16C(unsafe.Pointer(&want[0]), unsafe.Pointer(&wb[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&block[0]), 4, d)
				name := fmt.Sprintf("d=%d/bits=%d/rep=%d", d, bits, rep)
				for i := range got {
					if !same(got[i], want[i]) {
						t.Fatalf("%s: query %d channel %d = %v, channelQueryF16C %v", name, i/d, i%d, got[i], want[i])
					}
				}
				for j := range 4 {
					if !same(gb[j], wb[j]) {
						t.Fatalf("%s: b of query %d = %v, channelQueryF16C %v", name, j, gb[j], wb[j])
					}
				}
			}
		}
	}
}

// TestDotQ4I16Z: the ZMM int16 score kernels give their YMM twins' scores bit for
// bit (NaN for NaN): dotInt8Q4I16Z of Int8 rows, dotU4Q4ChanI16Z of 4-bit KIVI key
// block rows; for head sizes up to maxI16Dim, row counts 4–64 (multiples of 4), rows
// of random bytes (every code, any f16 scale, NaN and ±Inf among them) or of the
// extreme codes (−128; 15) against queries of ±1 (the largest sums the kernels take),
// at a stride longer than the row; and write no score past the n rows.
func TestDotQ4I16Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(93, 94))
	const guard = -444
	for _, k := range []struct {
		name     string
		rowBytes func(d int) int
		code0    int  // the first code byte of a row
		extreme  byte // the code bytes of the largest sums
		z, y     quadDotKernel
		dims     []int
	}{
		{"int8", Int8{}.RowBytes, 2, 0x80, dotInt8Q4I16Z, dotInt8Q4I16, []int{16, 32, 48, 64, 128, maxI16Dim}},
		{"u4chan", func(d int) int { return d / 2 }, 0, 0xff, dotU4Q4ChanI16Z, dotU4Q4ChanI16, []int{32, 64, 96, 128, maxI16Dim}},
	} {
		for _, d := range k.dims {
			for _, n := range []int{4, 8, 20, 64} {
				for _, extreme := range []bool{false, true} {
					name := fmt.Sprintf("%s/d=%d/n=%d/extreme=%v", k.name, d, n, extreme)
					stride := k.rowBytes(d) + 1 + r.IntN(7)
					src := make([]byte, n*stride)
					for i := range src {
						src[i] = byte(r.Uint32())
					}
					q := make([]float32, 4*d)
					for i := range q {
						q[i] = float32(r.NormFloat64())
					}
					if extreme {
						for i := range n {
							for c := range k.rowBytes(d) - k.code0 {
								src[i*stride+k.code0+c] = k.extreme
							}
						}
						for i := range q {
							q[i] = float32(1 - 2*(i/d%2)) // queries 1 and 3: −1
						}
					}
					qf := d/2 + 2 // codes, D, b
					qt := make([]float32, 4*qf)
					for j := range 4 {
						quantQueryI16(unsafe.Pointer(&qt[j*qf]), unsafe.Pointer(&q[j*d]), d)
						qt[j*qf+d/2+1] = float32(r.NormFloat64())
					}
					ld := n + 2
					out := [2][]float32{constRow(4*ld, guard), constRow(4*ld, guard)}
					for i, kern := range []quadDotKernel{k.z, k.y} {
						kern(unsafe.Pointer(&out[i][0]), uintptr(4*ld), unsafe.Pointer(&qt[0]), uintptr(4*qf), unsafe.Pointer(&src[0]), uintptr(stride), n, uintptr(d))
					}
					checkZScores(t, name, out[0], out[1], ld, n, 4, guard)
				}
			}
		}
	}
}

// TestDotInt8R4I16Z: the one-query ZMM scores of Int8 rows (dotInt8R4I16Z) equal
// dotInt8R4I16's bit for bit (NaN for NaN), for head sizes of multiples of 32 up to
// maxI16Dim, one to sixteen groups of four rows at uneven offsets, rows of random
// bytes (every code, any f16 scale, NaN and ±Inf among them) or of the code −128
// against a query of ones (the largest sums); and write no score past the groups.
func TestDotInt8R4I16Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernel needs AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(99, 100))
	const guard = -444
	for _, d := range []int{32, 64, 96, 128, maxI16Dim} {
		for _, ng := range []int{1, 2, 5, 16} {
			for _, extreme := range []bool{false, true} {
				name := fmt.Sprintf("d=%d/groups=%d/extreme=%v", d, ng, extreme)
				row := Int8{}.RowBytes(d)
				o1, o2, o3 := row+r.IntN(9), 2*row+9+r.IntN(9), 3*row+18+r.IntN(9)
				gstep := o3 + row + r.IntN(9)
				src := make([]byte, ng*gstep)
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				q := make([]float32, d)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				if extreme {
					for g := range ng {
						for _, o := range []int{0, o1, o2, o3} {
							for c := range d {
								src[g*gstep+o+2+c] = 0x80
							}
						}
					}
					for i := range q {
						q[i] = 1
					}
				}
				qt := make([]float32, d/2+1) // codes, D
				quantQueryI16(unsafe.Pointer(&qt[0]), unsafe.Pointer(&q[0]), d)
				out := [2][]float32{constRow(4*ng+4, guard), constRow(4*ng+4, guard)}
				for i, kern := range []r4Kernel{dotInt8R4I16Z, dotInt8R4I16} {
					kern(unsafe.Pointer(&out[i][0]), unsafe.Pointer(&qt[0]), unsafe.Pointer(&src[0]), uintptr(o1), uintptr(o2), uintptr(o3), uintptr(gstep), ng, uintptr(d))
				}
				checkOneScores(t, name, out[0], out[1], 4*ng, guard)
			}
		}
	}
}

// TestDotInt8R8I16Z: the eight-row one-query scores of Int8 rows (dotInt8R8I16Z)
// equal dotInt8R4I16's bit for bit (NaN for NaN), for head sizes up to maxI16Dim, one
// to sixteen units of eight rows of random bytes (any f16 scale) or of the extreme
// code -128 against a query of ones (the largest sums), at a stride longer than the
// row; and write no score past the units.
func TestDotInt8R8I16Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernel needs AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(105, 106))
	const guard = -444
	for _, d := range []int{32, 64, 96, 128, maxI16Dim} {
		for _, nu := range []int{1, 2, 5, 16} {
			for _, extreme := range []bool{false, true} {
				name := fmt.Sprintf("d=%d/units=%d/extreme=%v", d, nu, extreme)
				n := 8 * nu
				stride := Int8{}.RowBytes(d) + r.IntN(9)
				src := make([]byte, n*stride)
				for i := range src {
					src[i] = byte(r.Uint32())
					if extreme && i%stride >= 2 {
						src[i] = 0x80
					}
				}
				q := make([]float32, d)
				for i := range q {
					q[i] = float32(r.NormFloat64())
					if extreme {
						q[i] = 1
					}
				}
				qt := make([]float32, d/2+1) // codes, D
				quantQueryI16(unsafe.Pointer(&qt[0]), unsafe.Pointer(&q[0]), d)
				out := [2][]float32{constRow(n+8, guard), constRow(n+8, guard)}
				dotInt8R8I16Z(unsafe.Pointer(&out[0][0]), unsafe.Pointer(&qt[0]), unsafe.Pointer(&src[0]), uintptr(stride), nu, uintptr(d), uintptr(r.IntN(2)*pfDist))
				dotR4(dotInt8R4I16, unsafe.Pointer(&out[1][0]), unsafe.Pointer(&qt[0]), unsafe.Pointer(&src[0]), uintptr(stride), n, uintptr(d))
				checkOneScores(t, name, out[0], out[1], n, guard)
			}
		}
	}
}

// TestDotU4ChanI16Z: the one-query ZMM scores of 4-bit KIVI key block rows
// (dotU4ChanI16Z) equal dotU4ChanI16's bit for bit (NaN for NaN), for head sizes up
// to maxI16Dim, one to sixteen blocks of four rows of random bytes or of the extreme
// code 15 against a query of ones (the largest sums), at a stride longer than the
// row, with a D and a b of any sign; and write no score past the blocks.
func TestDotU4ChanI16Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernel needs AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(95, 96))
	const guard = -444
	for _, d := range []int{32, 64, 96, 128, maxI16Dim} {
		for _, ng := range []int{1, 2, 5, 16} {
			for _, extreme := range []bool{false, true} {
				name := fmt.Sprintf("d=%d/blocks=%d/extreme=%v", d, ng, extreme)
				stride := d/2 + 1 + r.IntN(7)
				src := make([]byte, 4*ng*stride)
				qt := chanI16Case(r, src, d, extreme)
				out := [2][]float32{constRow(4*ng+4, guard), constRow(4*ng+4, guard)}
				dotU4ChanI16Z(unsafe.Pointer(&out[0][0]), unsafe.Pointer(&qt[0]), unsafe.Pointer(&src[0]), uintptr(stride), ng, uintptr(d))
				dotU4ChanI16(unsafe.Pointer(&out[1][0]), unsafe.Pointer(&qt[0]), unsafe.Pointer(&src[0]), uintptr(stride), ng, uintptr(d))
				checkOneScores(t, name, out[0], out[1], 4*ng, guard)
			}
		}
	}
}

// TestDotU4ChanI16Z8C: the eight-row one-query scores of 4-bit KIVI key block rows of
// 64 channels that follow one another (dotU4ChanI16Z8C, as chanI16Kernels runs it:
// the last unit moved back to end at the last row) equal dotU4ChanI16's bit for bit
// (NaN for NaN), for row counts that are and are not multiples of eight, random
// bytes or the extreme code 15 against a query of ones (the largest sums), with a D
// and a b of any sign; they write no score past the rows and read no byte past the
// last row (an unreadable page follows it).
func TestDotU4ChanI16Z8C(t *testing.T) {
	if !haveVBMIGFNI {
		t.Skip("the kernel needs AVX-512 VBMI")
	}
	r := rand.New(rand.NewPCG(97, 98))
	const guard, d, rb = -444, 64, 32
	for _, m := range []int{8, 13, 32, 37, 128} {
		for _, extreme := range []bool{false, true} {
			name := fmt.Sprintf("m=%d/extreme=%v", m, extreme)
			src := guardpage.Bytes(t, m*rb)
			qt := chanI16Case(r, src, d, extreme)
			z, y := constRow(m+4, guard), constRow(m+4, guard)
			rows, qp := unsafe.Pointer(&src[0]), unsafe.Pointer(&qt[0])
			dotU4ChanI16Z8C(unsafe.Pointer(&z[0]), qp, rows, rb, m/8, d)
			if m%8 != 0 {
				dotU4ChanI16Z8C(unsafe.Pointer(&z[m-8]), qp, unsafe.Add(rows, (m-8)*rb), rb, 1, d)
			}
			dotU4ChanI16(unsafe.Pointer(&y[0]), qp, rows, rb, m/4, d)
			if m%4 != 0 {
				dotU4ChanI16(unsafe.Pointer(&y[m-4]), qp, unsafe.Add(rows, (m-4)*rb), rb, 1, d)
			}
			checkOneScores(t, name, z, y, m, guard)
		}
	}
}

// chanI16Case fills src with random code bytes (all 0xff when extreme) and returns a
// query of d values quantized as the int16 Channel kernels read it (codes, D, then a
// random b): Gaussian, or all ones when extreme (the largest sums).
func chanI16Case(r *rand.Rand, src []byte, d int, extreme bool) []float32 {
	for i := range src {
		src[i] = byte(r.Uint32())
		if extreme {
			src[i] = 0xff
		}
	}
	q := make([]float32, d)
	for i := range q {
		q[i] = float32(r.NormFloat64())
		if extreme {
			q[i] = 1
		}
	}
	qt := make([]float32, d/2+2) // codes, D, b
	quantQueryI16(unsafe.Pointer(&qt[0]), unsafe.Pointer(&q[0]), d)
	qt[d/2+1] = float32(r.NormFloat64())
	return qt
}

// prepInt8 reports whether a RowPlan of Int8 rows of d values has prepared queries
// (made under a set with fused kernels): where the int16 kernels score them.
func prepInt8(d int) bool { return i16Rows(d) }

func prepE4M3(c RowCodec, d int) bool { return haveF16C && e4m3Direct(c, d) }
