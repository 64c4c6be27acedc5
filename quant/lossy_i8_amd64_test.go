//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"kvq/internal/guardpage"
)

// TestQuantQueryI8 checks the assembly quantizer against quantQueryI8Go bit for bit
// (codes in each code order, d_k and d_k·Σq̂ at their strides, nothing written past
// them), over group sizes, group counts, magnitudes from 1e-37 (taken as zero) to
// 1e30, zero groups and lone values, and that each value's round trip is within d_k/2
// of it; a NaN or infinite value makes its group's d_k NaN in both.
func TestQuantQueryI8(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const guard = -777
	for _, c := range []struct{ bits, gs int }{{4, 32}, {4, 64}, {4, 128}, {2, 32}, {2, 64}} {
		bits, gs := c.bits, c.gs
		for _, np := range []int{1, 2, 3, 4} {
			for _, amp := range []float64{1e-37, 1e-30, 1e-3, 1, 1e30} {
				for _, shape := range []string{"gauss", "zero group", "lone value", "nan", "inf"} {
					name := fmt.Sprintf("bits=%d/gs=%d/np=%d/amp=%g/%s", bits, gs, np, amp, shape)
					q := gaussRow(r, np*gs, amp)
					switch shape {
					case "zero group":
						clear(q[(np-1)*gs:])
					case "lone value":
						clear(q)
						q[r.IntN(len(q))] = float32(-amp)
					case "nan":
						q[(np-1)*gs+r.IntN(gs)] = float32(math.NaN())
					case "inf":
						q[(np-1)*gs+r.IntN(gs)] = float32(math.Inf(1))
					}
					want8, wantf := make([]int8, np*gs), make([]float32, 2*np)
					quantQueryI8Go(want8, wantf, q, np, gs, bits)
					// The factors four floats apart (a query's slot in a quad's table).
					got8 := make([]int8, np*gs+32)
					for i := range got8 {
						got8[i] = 99
					}
					gotf := constRow(8*np+1, guard)
					quantQueryI8(unsafe.Pointer(&got8[0]), unsafe.Pointer(&gotf[0]), unsafe.Pointer(&q[0]), np, gs, bits, 32, 16)
					if shape == "nan" || shape == "inf" {
						// The last group's codes are unspecified; its d_k is NaN, so
						// every score is. The other groups are as usual.
						k := np - 1
						if !math.IsNaN(float64(gotf[8*k])) || !math.IsNaN(float64(wantf[2*k])) {
							t.Fatalf("%s: d of the group with a non-finite value = %v (Go twin %v), want NaN", name, gotf[8*k], wantf[2*k])
						}
						for i := range k * gs {
							if got8[i] != want8[i] {
								t.Fatalf("%s: code %d = %d, want %d", name, i, got8[i], want8[i])
							}
						}
						continue
					}
					for i := range want8 {
						if got8[i] != want8[i] {
							t.Fatalf("%s: code %d = %d, want %d", name, i, got8[i], want8[i])
						}
					}
					if got8[np*gs] != 99 {
						t.Fatalf("%s: codes written past np·gs", name)
					}
					for k := range np {
						if !sameBits(gotf[8*k], wantf[2*k]) || !sameBits(gotf[8*k+4], wantf[2*k+1]) {
							t.Fatalf("%s: group %d factors (%v, %v), want (%v, %v)", name, k, gotf[8*k], gotf[8*k+4], wantf[2*k], wantf[2*k+1])
						}
						for _, i := range []int{1, 2, 3, 5, 6, 7} {
							if gotf[8*k+i] != guard {
								t.Fatalf("%s: factor table written at %d", name, 8*k+i)
							}
						}
					}
					if gotf[8*np] != guard {
						t.Fatalf("%s: factor table written past its groups", name)
					}
					rt := roundTripI8(q, gs)
					for c := range q {
						d := float64(wantf[2*(c/gs)])
						if d == 0 {
							d = 0x1p-119 // below 2^-120 a group is taken as zero
						}
						if e := math.Abs(float64(q[c]) - float64(rt[c])); e > d/2*(1+1e-6) {
							t.Fatalf("%s: value %d = %v round-trips to %v, off by more than d/2 = %v", name, c, q[c], rt[c], d/2)
						}
					}
				}
			}
		}
	}
}

// TestDotQ4I8Z: the ZMM integer score kernels give their YMM twins' scores bit for
// bit (NaN for NaN): dotU4Q4I8P2Z and dotU4Q4I8Z of 4-bit Affine rows, dotU2Q4I8Z of
// 2-bit ones, dotU2Q4ChanI8Z of 2-bit Channel token rows; for head sizes of 1 to 8
// groups of 32, row counts 4–64 (multiples of 4), the first 1 to 4 queries stored,
// rows of mixed kinds (lossyRowKinds) and rows of random bytes (any codes, any f16
// scale and zero, NaN and ±Inf among them) at a stride larger than the row, queries
// with a NaN in one of them; and write no score past the n rows of the nq queries.
func TestDotQ4I8Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(91, 92))
	const guard = -333
	for _, k := range []struct {
		name    string
		bits    int
		pairs   bool // the pair order of dotU4Q4I8P2 (even np only)
		channel bool // Channel token rows: no parameters, the queries' b after the factors
		z, y    i8QuadKernel
		np      []int
	}{
		{"u4p2", 4, true, false, dotU4Q4I8P2Z, dotU4Q4I8P2, []int{2, 4, 6, 8}},
		{"u4", 4, false, false, dotU4Q4I8Z, dotU4Q4I8, []int{1, 2, 3, 5}},
		{"u2", 2, false, false, dotU2Q4I8Z, dotU2Q4I8, []int{1, 2, 3, 4}},
		{"u2chan", 2, false, true, dotU2Q4ChanI8Z, dotU2Q4ChanI8, []int{1, 2, 3, 4}},
	} {
		c := Affine{Bits: k.bits, Group: 32}
		for _, np := range k.np {
			d := 32 * np
			lg, ok := lossyGeomOf(c, d)
			if !ok || !lg.i8() {
				t.Fatalf("d=%d: no integer geometry", d)
			}
			for _, n := range []int{4, 8, 12, 28, 64} {
				for _, raw := range []bool{false, true} {
					for nq := 1; nq <= 4; nq++ {
						name := fmt.Sprintf("%s/d=%d/n=%d/raw=%v/nq=%d", k.name, d, n, raw, nq)
						src, stride, _ := lossyCase(r, c, n, d)
						rows, gb := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr), lg.gb
						if k.channel {
							gb = 8 // a Channel token row: codes only
						}
						if raw || k.channel {
							for i := range src {
								src[i] = byte(r.Uint32())
							}
						}
						q := make([]float32, 4*d)
						for i := range q {
							q[i] = float32(r.NormFloat64())
						}
						if n%8 == 4 {
							q[(n/4%nq)*d+r.IntN(d)] = float32(math.NaN())
						}
						tq := make([]float32, d+8*np+4)
						if k.pairs {
							prepareQuadI8(&lg, tq, q, nq, d)
						} else {
							for j := range nq {
								quantQueryI8(unsafe.Add(unsafe.Pointer(&tq[0]), j*d), unsafe.Pointer(&tq[d+j]), unsafe.Pointer(&q[j*d]), np, 32, k.bits, 32, 16)
							}
							for j := range 4 {
								tq[d+8*np+j] = float32(r.NormFloat64()) // b, read by the Channel kernels
							}
						}
						ld := n + 3
						out := [2][]float32{constRow(4*ld, guard), constRow(4*ld, guard)}
						for i, kern := range []i8QuadKernel{k.z, k.y} {
							kern(unsafe.Pointer(&out[i][0]), uintptr(4*ld), nq, unsafe.Pointer(&tq[0]), rows, uintptr(stride), n, unsafe.Pointer(&tq[d]), np, gb)
						}
						checkZScores(t, name, out[0], out[1], ld, n, nq, guard)
					}
				}
			}
		}
	}
}

// TestDotRowsI8Z: the one-query ZMM integer scores of 2-bit rows (dotU2RowsI8Z of
// Affine rows, dotU2ChanI8Z of Channel token rows) give their YMM twins' scores bit
// for bit (NaN for NaN), for head sizes of 1 to 8 groups of 32, one to sixteen
// blocks of four rows of mixed kinds (lossyRowKinds) or of random bytes at a stride
// larger than the row, queries with a NaN now and then; and write no score past the
// blocks.
func TestDotRowsI8Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(97, 98))
	const guard = -333
	for _, k := range []struct {
		name    string
		channel bool // Channel token rows: no parameters, the query's b after the factors
		z, y    rowsKernel
	}{
		{"u2", false, dotU2RowsI8Z, dotU2RowsI8},
		{"u2chan", true, dotU2ChanI8Z, dotU2ChanI8},
	} {
		c := Affine{Bits: 2, Group: 32}
		for _, np := range []int{1, 2, 3, 4, 8} {
			d := 32 * np
			lg, ok := lossyGeomOf(c, d)
			if !ok || !lg.i8() {
				t.Fatalf("d=%d: no integer geometry", d)
			}
			for _, ng := range []int{1, 2, 7, 16} {
				for _, raw := range []bool{false, true} {
					name := fmt.Sprintf("%s/d=%d/blocks=%d/raw=%v", k.name, d, ng, raw)
					src, stride, _ := lossyCase(r, c, 4*ng, d)
					rows, gb := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr), lg.gb
					if k.channel {
						gb = 8 // a Channel token row: codes only
					}
					if raw || k.channel {
						for i := range src {
							src[i] = byte(r.Uint32())
						}
					}
					q := make([]float32, d)
					for i := range q {
						q[i] = float32(r.NormFloat64())
					}
					if ng == 7 {
						q[r.IntN(d)] = float32(math.NaN())
					}
					tq := make([]float32, d+2*np+1)
					quantQueryI8(unsafe.Pointer(&tq[0]), unsafe.Pointer(&tq[d]), unsafe.Pointer(&q[0]), np, 32, 2, 8, 4)
					tq[d+2*np] = float32(r.NormFloat64()) // b, read by the Channel kernel
					out := [2][]float32{constRow(4*ng+4, guard), constRow(4*ng+4, guard)}
					for i, kern := range []rowsKernel{k.z, k.y} {
						kern(unsafe.Pointer(&out[i][0]), unsafe.Pointer(&tq[0]), rows, uintptr(stride), ng, unsafe.Pointer(&tq[d]), np, 32, gb)
					}
					checkOneScores(t, name, out[0], out[1], 4*ng, guard)
				}
			}
		}
	}
}

// TestDotRowsI8Z8: the eight-row one-query scores of 2-bit rows (Affine rows,
// Channel token rows: the kernel rows8 picks, and the one of any stride, through
// rowsBy8) give their YMM
// twins' scores bit for bit (NaN for NaN), for head sizes of 2 to 8 groups, row
// counts that are and are not multiples of eight, rows that follow one another and
// rows at a larger stride, encoded rows or random bytes, queries with a NaN now and
// then; they write no score past the rows, and they read no byte past the last row:
// the rows end where an unreadable page begins.
func TestDotRowsI8Z8(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernels need AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(99, 100))
	const guard = -333
	for _, k := range []struct {
		name    string
		channel bool
		general rowsKernel // the kernel of any stride
		y       rowsKernel
	}{
		{"u2", false, dotU2RowsI8Z8, dotU2RowsI8},
		{"u2chan", true, dotU2ChanI8Z8, dotU2ChanI8},
	} {
		c := Affine{Bits: 2, Group: 32}
		for _, np := range []int{2, 4, 6, 8} {
			d := 32 * np
			lg, _ := lossyGeomOf(c, d)
			rb, gb, hdr := c.RowBytes(d), lg.gb, lg.hdr
			if k.channel {
				rb, gb, hdr = d/4, 8, 0 // a Channel token row: codes only
			}
			for _, n := range []int{8, 13, 16, 29, 64, 128} {
				for _, padded := range []bool{false, true} {
					for _, raw := range []bool{false, true} {
						name := fmt.Sprintf("%s/d=%d/n=%d/padded=%v/raw=%v", k.name, d, n, padded, raw)
						enc, es, _ := lossyCase(r, c, n, d)
						stride := es
						if !padded {
							stride = rb
						}
						src := guardpage.Bytes(t, (n-1)*stride+rb) // the rows end at an unreadable page
						for i := range src {
							src[i] = byte(r.Uint32())
						}
						if !raw && !k.channel {
							for i := range n {
								copy(src[i*stride:][:rb], enc[i*es:][:rb])
							}
						}
						q := make([]float32, d)
						for i := range q {
							q[i] = float32(r.NormFloat64())
						}
						if n == 29 {
							q[r.IntN(d)] = float32(math.NaN())
						}
						tq := make([]float32, d+2*np+1)
						quantQueryI8(unsafe.Pointer(&tq[0]), unsafe.Pointer(&tq[d]), unsafe.Pointer(&q[0]), np, 32, 2, 8, 4)
						tq[d+2*np] = float32(r.NormFloat64()) // b, read by the Channel kernel
						rows := unsafe.Add(unsafe.Pointer(&src[0]), hdr)
						y := constRow(n+4, guard)
						rowsBy4(k.y, unsafe.Pointer(&y[0]), unsafe.Pointer(&tq[0]), rows, uintptr(stride), n, unsafe.Pointer(&tq[d]), np, 32, gb)
						// The kernel rows8 picks, and the general one where that is another.
						k8 := rows8(2, np, uintptr(stride), k.channel)
						if k8 == nil {
							t.Fatalf("%s: no eight-row kernel", name)
						}
						for _, kern := range []rowsKernel{k8, k.general} {
							z := constRow(n+4, guard)
							rowsBy8(kern, k.y, unsafe.Pointer(&z[0]), unsafe.Pointer(&tq[0]), rows, uintptr(stride), n, unsafe.Pointer(&tq[d]), np, 32, gb)
							checkOneScores(t, name, z, y, n, guard)
						}
					}
				}
			}
		}
	}
}

// TestDotU4RowsI8Z8C: the eight-row one-query scores of 4-bit Affine rows of one pair
// of groups that follow one another (dotU4RowsI8Z8C through rowsBy8) give
// dotU4RowsI8P2's scores bit for bit (NaN for NaN), for row counts that are and are
// not multiples of eight, encoded rows of mixed kinds or random bytes, queries with a
// NaN now and then; they write no score past the rows and read no byte past the last
// row (an unreadable page follows it).
func TestDotU4RowsI8Z8C(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernel needs AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(101, 102))
	const guard, d, np = -333, 64, 2
	c := Affine{Bits: 4, Group: 32}
	lg, _ := lossyGeomOf(c, d)
	rb := c.RowBytes(d)
	if k8 := rows8(4, np, uintptr(rb), false); rb != 40 || k8 == nil {
		t.Fatalf("row bytes %d: no eight-row kernel", rb)
	}
	for _, n := range []int{8, 13, 16, 29, 64, 128} {
		for _, raw := range []bool{false, true} {
			name := fmt.Sprintf("n=%d/raw=%v", n, raw)
			enc, es, _ := lossyCase(r, c, n, d)
			src := guardpage.Bytes(t, n*rb)
			for i := range n {
				copy(src[i*rb:][:rb], enc[i*es:][:rb])
			}
			if raw {
				for i := range src {
					src[i] = byte(r.Uint32())
				}
			}
			q := make([]float32, d)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			if n == 29 {
				q[r.IntN(d)] = float32(math.NaN())
			}
			tq := make([]float32, d+8*np)
			prepareOneI8(&lg, tq, q, d)
			rows := unsafe.Add(unsafe.Pointer(&src[0]), lg.hdr)
			y, z := constRow(n+4, guard), constRow(n+4, guard)
			rowsBy4(dotU4RowsI8P2, unsafe.Pointer(&y[0]), unsafe.Pointer(&tq[0]), rows, uintptr(rb), n, unsafe.Pointer(&tq[d]), np, 32, lg.gb)
			rowsBy8(dotU4RowsI8Z8C, dotU4RowsI8P2, unsafe.Pointer(&z[0]), unsafe.Pointer(&tq[0]), rows, uintptr(rb), n, unsafe.Pointer(&tq[d]), np, 32, lg.gb)
			checkOneScores(t, name, z, y, n, guard)
		}
	}
}

// checkOneScores checks a one-query ZMM score kernel's output z against its YMM
// twin's y: the first n scores the same bits (NaN for NaN), every slot after them
// still guard in z.
func checkOneScores(t *testing.T, name string, z, y []float32, n int, guard float32) {
	t.Helper()
	for i, zi := range z {
		if i >= n {
			if zi != guard {
				t.Fatalf("%s: score %d written, past the %d rows", name, i, n)
			}
			continue
		}
		if yi := y[i]; !sameBits(zi, yi) && !(zi != zi && yi != yi) {
			t.Fatalf("%s: row %d = %v, YMM kernel %v", name, i, zi, yi)
		}
	}
}

// checkZScores checks a ZMM score kernel's output z against its YMM twin's y, four
// queries' scores ld floats apart: for the first nq queries, the n rows' scores the
// same bits (NaN for NaN); every other slot of z still guard.
func checkZScores(t *testing.T, name string, z, y []float32, ld, n, nq int, guard float32) {
	t.Helper()
	for i := range 4 * ld {
		zi, yi := z[i], y[i]
		if i/ld >= nq || i%ld >= n {
			if zi != guard {
				t.Fatalf("%s: score %d of query %d written (%v), past the n rows of the nq queries", name, i%ld, i/ld, zi)
			}
			continue
		}
		if !sameBits(zi, yi) && !(zi != zi && yi != yi) {
			t.Fatalf("%s: query %d row %d = %v, YMM kernel %v", name, i/ld, i%ld, zi, yi)
		}
	}
}

// TestQuantQuad2I8Z checks quantQuad2I8Z against four calls of quantQueryI8 (2-bit
// order, dotChannelI8's layout): each query's codes bit for bit where its group's d_k
// is not NaN, and d_k and d_k·Σq̂ bit for bit (NaN for NaN), over head sizes up to
// 512 and groups of Gaussian values at many magnitudes, zero groups, groups whose
// largest magnitude straddles 2^-120, and NaN and ±Inf values.
func TestQuantQuad2I8Z(t *testing.T) {
	if !haveVNNI512 {
		t.Skip("the kernel needs AVX-512")
	}
	r := rand.New(rand.NewPCG(49, 50))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, d := range []int{32, 64, 96, 128, 512} {
		p := d / 32
		for rep := range 20 {
			qs := make([]float32, 4*d)
			for k := range 4 * p {
				g := qs[k*32 : (k+1)*32]
				scale := math.Exp2(float64(r.IntN(80) - 40))
				for i := range g {
					g[i] = float32(r.NormFloat64() * scale)
				}
				switch r.IntN(12) {
				case 0:
					clear(g)
				case 1: // the largest magnitude at 2^-120 or just below
					clear(g)
					g[r.IntN(32)] = float32(math.Exp2(-120)) * []float32{1, 0.5, -1}[r.IntN(3)]
				case 2:
					g[r.IntN(32)] = float32(math.NaN())
				case 3:
					g[r.IntN(32)] = float32(math.Inf(1 - 2*r.IntN(2)))
				}
			}
			got8, want8 := make([]int8, 4*d), make([]int8, 4*d)
			gotF, wantF := make([]float32, 8*p), make([]float32, 8*p)
			quantQuad2I8Z(unsafe.Pointer(&got8[0]), unsafe.Pointer(&gotF[0]), unsafe.Pointer(&qs[0]), d)
			for q := range 4 {
				quantQueryI8(unsafe.Pointer(&want8[q*d]), unsafe.Pointer(&wantF[q]), unsafe.Pointer(&qs[q*d]), p, 32, 2, 32, 16)
			}
			for k := range p {
				for q := range 4 {
					name := fmt.Sprintf("d=%d/rep=%d/group %d/query %d", d, rep, k, q)
					dk, ek := wantF[8*k+q], wantF[8*k+4+q]
					if !same(gotF[8*k+q], dk) || !same(gotF[8*k+4+q], ek) {
						t.Fatalf("%s: d, d·Σq̂ = %v, %v; quantQueryI8 %v, %v", name, gotF[8*k+q], gotF[8*k+4+q], dk, ek)
					}
					if dk != dk {
						continue
					}
					for i := range 32 {
						if g, w := got8[q*d+32*k+i], want8[q*d+32*k+i]; g != w {
							t.Fatalf("%s: code %d = %d, quantQueryI8 %d", name, i, g, w)
						}
					}
				}
			}
		}
	}
}
