//go:build amd64

package linalg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
	"kvq/internal/cpufeat"
)

// TestDotF32FMA checks the assembly F32 dot against its scalar twin and a float64
// reference on every length up to 3 vectors of 32 and some longer ones (all tails of
// the 32-, 8- and masked steps), at unaligned offsets, with NaN guards on both sides of
// both operands: a read outside a[:n] or b[:n] would make the result NaN.
func TestDotF32FMA(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(11, 12))
	var ns []int
	for n := 0; n <= 100; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 127, 128, 129, 172, 255, 256, 257, 768, 4095, 4096, 4097)
	const guard = 16
	nan := float32(math.NaN())
	for _, n := range ns {
		for _, off := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("n=%d/off=%d", n, off), func(t *testing.T) {
				ab := make([]float32, n+2*guard+off)
				bb := make([]float32, n+2*guard)
				for i := range ab {
					ab[i] = nan
				}
				for i := range bb {
					bb[i] = nan
				}
				a, b := ab[guard+off:guard+off+n], bb[guard:guard+n]
				var ref, mag float64
				for i := range a {
					a[i] = float32(r.NormFloat64())
					b[i] = float32(r.NormFloat64())
					ref += float64(a[i]) * float64(b[i])
					mag += math.Abs(float64(a[i]) * float64(b[i]))
				}
				got, want := dotF32FMA(a, b), dotF32Scalar(a, b)
				tol := 1e-6 * mag * (1 + float64(n)/64)
				if !(math.Abs(float64(got)-ref) <= tol) {
					t.Fatalf("dotF32FMA = %v, float64 reference %v (scalar twin %v), tolerance %.3g", got, ref, want, tol)
				}
				if !(math.Abs(float64(got)-float64(want)) <= 2*tol) {
					t.Fatalf("dotF32FMA = %v, scalar twin %v", got, want)
				}
			})
		}
	}
}

// TestDotF32FMAExact checks sums that float32 represents exactly (small integers),
// where any summation order gives the same result: a lane dropped or counted twice
// shows as a wrong integer.
func TestDotF32FMAExact(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	for n := 1; n <= 200; n++ {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(i%7-3), float32(i%5+1)
		}
		if got, want := dotF32FMA(a, b), dotF32Scalar(a, b); got != want {
			t.Fatalf("n=%d: dotF32FMA = %v, scalar twin %v", n, got, want)
		}
	}
}

// TestSiLUMulAsm checks siluMulAsm against siluMulScalar on every length to 40 and
// some longer ones, over values where e^−v matters and beyond the ±88 clamp, and that
// nothing past len(g) changes.
func TestSiLUMulAsm(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(13, 14))
	var ns []int
	for n := 0; n <= 40; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 64, 172, 1000)
	for _, n := range ns {
		for _, spread := range []float64{0.5, 8, 200} {
			g, u := make([]float32, n+4), make([]float32, n+4)
			for i := range g {
				g[i], u[i] = float32(r.NormFloat64()*spread), float32(r.NormFloat64())
			}
			want := append([]float32(nil), g...)
			siluMulScalar(want[:n], u[:n])
			siluMulAsm(g[:n], u[:n])
			for i := range g {
				w := want[i]
				if d := math.Abs(float64(g[i]) - float64(w)); !(d <= 1e-6*math.Abs(float64(w))+1e-30) {
					t.Fatalf("n=%d spread=%g: g[%d] = %v, scalar twin %v", n, spread, i, g[i], w)
				}
			}
		}
	}
}

// BenchmarkSiLUMulAsm times siluMulAsm against its scalar twin on a small model's
// hidden size and a larger one.
func BenchmarkSiLUMulAsm(b *testing.B) {
	if !cpufeat.AVX2FMA {
		b.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{172, 4096} {
		g0, u := make([]float32, n), make([]float32, n)
		for i := range g0 {
			g0[i], u[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		g := make([]float32, n)
		for _, k := range []struct {
			name string
			f    func(g, u []float32)
		}{{"scalar", siluMulScalar}, {"asm", siluMulAsm}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, k.name), func(b *testing.B) {
				for b.Loop() {
					copy(g, g0)
					k.f(g, u)
				}
			})
		}
	}
}

// BenchmarkDotF32Asm times the F32 dot against its scalar twin at a small model's
// row lengths (64, 172) and a larger one, through the kernel set's function value
// as the matrix products call it.
func BenchmarkDotF32Asm(b *testing.B) {
	if !cpufeat.AVX2FMA {
		b.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{64, 172, 4096} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		for _, k := range []*kernelSet{scalarKernels, {name: "asm", dotF32: dotF32FMA}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, k.name), func(b *testing.B) {
				var s float32
				for b.Loop() {
					s += k.dotF32(x, y)
				}
				_ = s
			})
		}
	}
}

// BenchmarkMatMulF32Small times F32 matrix products of a small model's shapes (dim
// 64, hidden 172) over 64 tokens on one thread, with the scalar and the assembly
// dots, the latter called per row and token or per row (dotF32Tokens): many short
// dots, where per-call costs show.
func BenchmarkMatMulF32Small(b *testing.B) {
	if !cpufeat.AVX2FMA {
		b.Skip("CPU without AVX2 and FMA")
	}
	defer SetThreads(Threads())
	if err := SetThreads(1); err != nil {
		b.Fatal(err)
	}
	prev := active.Load()
	defer active.Store(prev)
	asm := *scalarKernels
	asm.name, asm.dotF32, asm.dotF32T = "asm", dotF32FMA, dotF32TAsm
	perToken := asm // dotF32FMA called per row and token, as before dotF32T
	perToken.name = "asm-per-token"
	perToken.dotF32T = func(out []float32, ld int, w, x []float32, n int) {
		for t := range n {
			out[t*ld] = dotF32FMA(w, x[t*len(w):(t+1)*len(w)])
		}
	}
	for _, sh := range []struct{ rows, cols int }{{172, 64}, {64, 172}} {
		r := rand.New(rand.NewPCG(21, 22))
		var data []byte
		for _, v := range randVals(r, sh.rows*sh.cols, 0.1) {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		w, err := NewMatrix(gguf.TypeF32, sh.rows, sh.cols, data)
		if err != nil {
			b.Fatal(err)
		}
		const n = 64
		x := randVals(r, n*sh.cols, 1)
		out := make([]float32, n*sh.rows)
		for _, k := range []*kernelSet{scalarKernels, &perToken, &asm} {
			b.Run(fmt.Sprintf("%dx%d/%s", sh.rows, sh.cols, k.name), func(b *testing.B) {
				active.Store(k)
				for b.Loop() {
					if err := MatMul(out, w, x, n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestDotF32Tokens checks the per-row kernel (dotF32TAsm) against dotF32FMA, bit for
// bit, token by token, on every row length to 100 and longer ones, 1 to 5, 8, 9 and
// 16 tokens (pairs and an odd last one) and several output strides, with guards between
// the outputs; and against its scalar twin within float32 rounding.
func TestDotF32Tokens(t *testing.T) {
	if !cpufeat.AVX2FMA {
		t.Skip("CPU without AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(23, 24))
	const guard = -12345
	cols := []int{}
	for c := 1; c <= 100; c++ {
		cols = append(cols, c)
	}
	cols = append(cols, 172, 255, 768, 2049)
	for _, c := range cols {
		w := randVals(r, c, 1)
		for _, n := range []int{1, 2, 3, 4, 5, 8, 9, 16} {
			x := randVals(r, n*c, 1)
			for _, ld := range []int{1, 3, 64} {
				out := make([]float32, (n-1)*ld+2)
				for i := range out {
					out[i] = guard
				}
				dotF32TAsm(out, ld, w, x, n)
				want := make([]float32, len(out))
				dotF32TScalar(want, ld, w, x, n)
				for i, v := range out {
					if i%ld != 0 || i/ld >= n {
						if v != guard {
							t.Fatalf("cols=%d n=%d ld=%d: out[%d] = %v, not a token's", c, n, ld, i, v)
						}
						continue
					}
					tok := x[i/ld*c : (i/ld+1)*c]
					if f := dotF32FMA(w, tok); math.Float32bits(v) != math.Float32bits(f) {
						t.Fatalf("cols=%d n=%d ld=%d token %d: %v, dotF32FMA %v", c, n, ld, i/ld, v, f)
					}
					var mag float64
					for j := range c {
						mag += math.Abs(float64(w[j]) * float64(tok[j]))
					}
					if d := math.Abs(float64(v) - float64(want[i])); d > 1e-6*mag*(1+float64(c)/64) {
						t.Fatalf("cols=%d n=%d ld=%d token %d: %v, scalar twin %v", c, n, ld, i/ld, v, want[i])
					}
				}
			}
		}
	}
}
