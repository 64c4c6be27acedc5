package linalg

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"kvq/gguf"
	"kvq/internal/kernelsel"
)

// kernelModes returns every kernel set this build and CPU can run, the scalar reference
// first; tests run each, and the set in use is restored afterwards.
func kernelModes(t *testing.T) []*kernelSet {
	t.Helper()
	sets := []*kernelSet{scalarKernels}
	if simdKernels != nil {
		sets = append(sets, simdKernels)
	}
	sets = append(sets, alternateKernels...)
	prev := active.Load()
	t.Cleanup(func() { active.Store(prev) })
	return sets
}

// withKernels makes k the kernel set in use.
func withKernels(t *testing.T, k *kernelSet) {
	t.Helper()
	active.Store(k)
}

var testTypes = []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0,
	gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K, gguf.TypeQ3_K,
	gguf.TypeQ2_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS}

func TestMatMulConformance(t *testing.T) {
	shapes := []struct{ rows, cols int }{
		{1, 32}, {7, 32}, {5, 64}, {33, 96}, {17, 256}, {129, 160}, {3, 512},
		{517, 256},               // large enough to run in parallel
		{13, 4096},               // at n = 17, enough activations to quantize them in parallel
		{5, 172}, {3, 7}, {9, 1}, // float types only: rows that are no whole number of vectors
	}
	blockOK := func(typ gguf.TensorType, cols int) bool { return cols%typ.BlockElems() == 0 }
	ns := []int{1, 3, 17}
	const guard = 9
	for _, k := range kernelModes(t) {
		for _, threads := range []int{1, 2, 3} {
			for _, typ := range testTypes {
				for _, sh := range shapes {
					if !blockOK(typ, sh.cols) {
						continue
					}
					for _, n := range ns {
						name := fmt.Sprintf("%s/threads=%d/%v/%dx%d/n=%d", k.name, threads, typ, sh.rows, sh.cols, n)
						t.Run(name, func(t *testing.T) {
							withKernels(t, k)
							defer SetThreads(Threads())
							if err := SetThreads(threads); err != nil {
								t.Fatal(err)
							}
							seed := uint64(sh.rows*1000003 + sh.cols*101 + n)
							r := rand.New(rand.NewPCG(seed, uint64(typ)))
							data, wref := encodeRows(t, typ, randVals(r, sh.rows*sh.cols, 0.05), sh.rows, sh.cols)
							w, err := NewMatrix(typ, sh.rows, sh.cols, data)
							if err != nil {
								t.Fatal(err)
							}
							x := randVals(r, n*sh.cols+guard, 1)
							for i := n * sh.cols; i < len(x); i++ {
								x[i] = 1e30 // reading past n tokens would show
							}
							buf := make([]float32, n*sh.rows+2*guard)
							for i := range buf {
								buf[i] = -7777
							}
							out := buf[guard : guard+n*sh.rows]
							if err := MatMul(out, w, x, n); err != nil {
								t.Fatal(err)
							}
							for i := 0; i < guard; i++ {
								if buf[i] != -7777 || buf[len(buf)-1-i] != -7777 {
									t.Fatalf("guard value overwritten: buf[%d]=%v buf[%d]=%v", i, buf[i], len(buf)-1-i, buf[len(buf)-1-i])
								}
							}
							quantX := quantTypes[typ] != nil
							ref, tol := refMatMul(wref, sh.rows, sh.cols, x, n, quantX)
							bad := 0
							for i := range ref {
								if d := math.Abs(float64(out[i]) - ref[i]); !(d <= tol[i]) {
									if bad++; bad <= 5 {
										t.Errorf("out[%d] (token %d row %d) = %v, want %v ± %.3g (off by %.3g)",
											i, i/sh.rows, i%sh.rows, out[i], ref[i], tol[i], d)
									}
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestMatMulKernelsAgree checks the SIMD kernels against their scalar twins on the same
// inputs, with a tolerance far below the quantization error (both see the same int8 codes).
// It also checks that both quantize activations to the same codes and scales.
func TestMatMulKernelsAgree(t *testing.T) {
	sets := kernelModes(t)
	if len(sets) == 1 {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range testTypes {
		for _, cols := range []int{32, 96, 768} {
			if cols%typ.BlockElems() != 0 {
				continue
			}
			rows, n := 13, 5
			data, wref := encodeRows(t, typ, randVals(r, rows*cols, 0.05), rows, cols)
			w, err := NewMatrix(typ, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			x := randVals(r, n*cols, 1)
			got := make([][]float32, len(sets))
			for i, k := range sets {
				withKernels(t, k)
				got[i] = make([]float32, n*rows)
				if err := MatMul(got[i], w, x, n); err != nil {
					t.Fatal(err)
				}
			}
			// Both differ from the exact product of the same codes by at most the float32
			// accumulation bound; codes and scales are identical, so that bound (×2, and a
			// margin for Σ|w·x̂| vs Σ|w·x|) is all they may differ by.
			_, tol := refMatMul(wref, rows, cols, x, n, false)
			for s := 1; s < len(sets); s++ {
				for i := range got[0] {
					a, b := float64(got[0][i]), float64(got[s][i])
					if d := math.Abs(a - b); d > 2.2*tol[i] {
						t.Errorf("%v cols=%d out[%d]: scalar %v, %s %v", typ, cols, i, a, sets[s].name, b)
					}
				}
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	q8 := make([]byte, 3*34)
	good := Matrix{Type: gguf.TypeQ8_0, Rows: 3, Cols: 32, Data: q8}
	cases := []struct {
		name    string
		badW    bool // NewMatrix must reject w too
		w       Matrix
		outLen  int
		xLen    int
		n       int
		wantErr error
	}{
		{"unknown type", true, Matrix{Type: 99, Rows: 1, Cols: 32, Data: make([]byte, 32)}, 1, 32, 1, ErrUnsupportedType},
		{"cols not whole blocks", true, Matrix{Type: gguf.TypeQ8_0, Rows: 1, Cols: 33, Data: make([]byte, 34)}, 1, 33, 1, ErrShape},
		{"data short", true, Matrix{Type: gguf.TypeF32, Rows: 2, Cols: 4, Data: make([]byte, 31)}, 2, 4, 1, ErrShape},
		{"data long", true, Matrix{Type: gguf.TypeF32, Rows: 2, Cols: 4, Data: make([]byte, 33)}, 2, 4, 1, ErrShape},
		{"negative rows", true, Matrix{Type: gguf.TypeF32, Rows: -1, Cols: 4}, 0, 4, 1, ErrShape},
		{"overflowing rows", true, Matrix{Type: gguf.TypeF32, Rows: math.MaxInt / 2, Cols: 4}, 0, 4, 1, ErrShape},
		{"negative n", false, good, 3, 32, -1, ErrShape},
		{"overflowing n", false, good, 3, 32, math.MaxInt / 2, ErrShape},
		{"out short", false, good, 5, 64, 2, ErrShape},
		{"x short", false, good, 6, 63, 2, ErrShape},
		{"ok", false, good, 6, 64, 2, nil},
		{"ok empty", false, good, 0, 0, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := make([]float32, c.outLen)
			for i := range out {
				out[i] = 42
			}
			err := MatMul(out, c.w, make([]float32, c.xLen), c.n)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("MatMul: %v", err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("MatMul error = %v, want %v", err, c.wantErr)
			}
			for i, v := range out {
				if v != 42 {
					t.Fatalf("out[%d] written (%v) on error", i, v)
				}
			}
			if _, err := NewMatrix(c.w.Type, c.w.Rows, c.w.Cols, c.w.Data); c.badW && !errors.Is(err, c.wantErr) {
				t.Fatalf("NewMatrix error = %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestNewMatrix(t *testing.T) {
	if _, err := NewMatrix(gguf.TypeQ8_0, 2, 64, make([]byte, 2*68)); err != nil {
		t.Fatalf("valid Q8_0 matrix: %v", err)
	}
	_, err := NewMatrix(gguf.TypeQ8_0, 2, 64, make([]byte, 2*68-1))
	if !errors.Is(err, ErrShape) {
		t.Fatalf("short data: err = %v, want ErrShape", err)
	}
	for _, typ := range testTypes {
		if !Supports(typ) {
			t.Errorf("Supports(%v) = false", typ)
		}
	}
	if Supports(99) {
		t.Error("Supports(type 99) = true")
	}
}

func TestMatMulZeroCols(t *testing.T) {
	w, err := NewMatrix(gguf.TypeF32, 3, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := []float32{1, 2, 3, 4, 5, 6, 99}
	if err := MatMul(out[:6], w, nil, 2); err != nil {
		t.Fatal(err)
	}
	for i, v := range out[:6] {
		if v != 0 {
			t.Errorf("out[%d] = %v, want 0", i, v)
		}
	}
	if out[6] != 99 {
		t.Error("wrote past n·Rows")
	}
}

func TestMatMulConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rows, cols, n := 300, 256, 4
	data, wref := encodeRows(t, gguf.TypeQ8_0, randVals(r, rows*cols, 0.05), rows, cols)
	w, err := NewMatrix(gguf.TypeQ8_0, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		x := randVals(r, n*cols, 1)
		ref, tol := refMatMul(wref, rows, cols, x, n, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]float32, n*rows)
			for it := 0; it < 20; it++ {
				if err := MatMul(out, w, x, n); err != nil {
					t.Error(err)
					return
				}
				for i := range ref {
					if math.Abs(float64(out[i])-ref[i]) > tol[i] {
						t.Errorf("goroutine result out[%d] = %v, want %v", i, out[i], ref[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestF16Table(t *testing.T) {
	cases := []struct {
		h    uint16
		want float64
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, math.Pow(2, -24)},
		{0x03ff, 1023 * math.Pow(2, -24)}, {0x0400, math.Pow(2, -14)}, {0x3555, 0.333251953125},
		{0x7c00, math.Inf(1)}, {0xfc00, math.Inf(-1)},
	}
	for _, c := range cases {
		if got := F16ToF32(c.h); float64(got) != c.want {
			t.Errorf("F16ToF32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
	for h := 0; h < 1<<16; h++ {
		got, want := float64(F16ToF32(uint16(h))), f16ToF64(uint16(h))
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
	if math.Float32bits(F16ToF32(0x8000)) != 1<<31 {
		t.Error("negative zero lost its sign")
	}
}

func TestVectorKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range kernelModes(t) {
		withKernels(t, k)
		for _, n := range []int{0, 1, 7, 8, 15, 16, 31, 33, 100, 768} {
			a, b := randVals(r, n, 1), randVals(r, n, 1)
			var want, sa float64
			for i := range a {
				want += float64(a[i]) * float64(b[i])
				sa += math.Abs(float64(a[i]) * float64(b[i]))
			}
			tol := 2*float64(n)*math.Pow(2, -24)*sa + 1e-30
			if got := Dot(a, b); math.Abs(float64(got)-want) > tol {
				t.Errorf("%s Dot n=%d = %v, want %v", k.name, n, got, want)
			}
			if got := Dot(a, append(b, 1e30)); math.Abs(float64(got)-want) > tol {
				t.Errorf("%s Dot with longer b n=%d = %v, want %v", k.name, n, got, want)
			}

			dst := append(randVals(r, n, 1), -5, -5)
			orig := append([]float32(nil), dst...)
			Axpy(dst[:n], 0.75, a)
			for i := 0; i < n; i++ {
				want := float64(orig[i]) + 0.75*float64(a[i])
				if math.Abs(float64(dst[i])-want) > 1e-6*(math.Abs(want)+1) {
					t.Fatalf("%s Axpy n=%d dst[%d] = %v, want %v", k.name, n, i, dst[i], want)
				}
			}
			if dst[n] != -5 || dst[n+1] != -5 {
				t.Fatalf("Axpy wrote past its length")
			}

			wgt := randVals(r, n, 1)
			out := make([]float32, n+1)
			out[n] = 3
			if err := RMSNorm(out[:n], a, wgt, 1e-5); err != nil {
				t.Fatal(err)
			}
			var ss float64
			for _, v := range a {
				ss += float64(v) * float64(v)
			}
			scale := 1 / math.Sqrt(ss/float64(max(n, 1))+1e-5)
			for i := 0; i < n; i++ {
				want := float64(a[i]) * scale * float64(wgt[i])
				if math.Abs(float64(out[i])-want) > 1e-5*(math.Abs(want)+1e-3) {
					t.Fatalf("%s RMSNorm n=%d out[%d] = %v, want %v", k.name, n, i, out[i], want)
				}
			}
			if out[n] != 3 {
				t.Fatal("RMSNorm wrote past its length")
			}
		}
	}
	if err := RMSNorm(make([]float32, 2), make([]float32, 3), make([]float32, 3), 1e-5); !errors.Is(err, ErrShape) {
		t.Errorf("RMSNorm short dst: err = %v, want ErrShape", err)
	}
	if err := RMSNorm(make([]float32, 3), make([]float32, 3), make([]float32, 3), float32(math.NaN())); err == nil {
		t.Error("RMSNorm accepted NaN eps")
	}
}

func TestSetThreads(t *testing.T) {
	defer SetThreads(Threads())
	for _, n := range []int{0, -1, 257} {
		if err := SetThreads(n); err == nil {
			t.Errorf("SetThreads(%d) accepted", n)
		}
	}
	if err := SetThreads(3); err != nil || Threads() != 3 {
		t.Errorf("SetThreads(3): err %v, Threads() = %d", err, Threads())
	}
}

func TestQuantQ8Twins(t *testing.T) {
	if simdKernels == nil {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	r := rand.New(rand.NewPCG(3, 4))
	x := randVals(r, 32*64, 1)
	// Exact ties, zeros, a NaN block, an infinity block, subnormals and huge values.
	for j := 0; j < 32; j++ {
		x[j] = float32(j-16) * 0.5 // ties at ±127·k/2 multiples after scaling
		x[32+j] = 0
		x[96+j] = 1e-40 * float32(j)
		x[128+j] = 3e38 * float32(j%3-1)
	}
	x[64+5] = float32(math.NaN())
	x[160+7] = float32(math.Inf(-1))
	n := len(x) / 32
	qs, ds := make([]int8, len(x)), make([]float32, n)
	qv, dv := make([]int8, len(x)), make([]float32, n)
	scalarKernels.quantQ8(qs, ds, x)
	simdKernels.quantQ8(qv, dv, x)
	for b := 0; b < n; b++ {
		if math.Float32bits(ds[b]) != math.Float32bits(dv[b]) && !(ds[b] != ds[b] && dv[b] != dv[b]) {
			t.Errorf("block %d: scale scalar %v, simd %v", b, ds[b], dv[b])
		}
		for j := b * 32; j < (b+1)*32; j++ {
			if qs[j] != qv[j] {
				t.Errorf("block %d value %d (x=%v): code scalar %d, simd %d", b, j%32, x[j], qs[j], qv[j])
				break
			}
		}
	}
}

func TestMatMulMany(t *testing.T) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewPCG(11, 12))
	cols := 256
	types := []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeF32, gguf.TypeQ4_0, gguf.TypeQ6_K, gguf.TypeF16}
	rowsOf := []int{300, 7, 129, 64, 1}
	var ws []Matrix
	for i, typ := range types {
		data, _ := encodeRows(t, typ, randVals(r, rowsOf[i]*cols, 0.05), rowsOf[i], cols)
		w, err := NewMatrix(typ, rowsOf[i], cols, data)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for _, k := range kernelModes(t) {
		for _, threads := range []int{1, 2} {
			for _, n := range []int{1, 5, 17} {
				withKernels(t, k)
				if err := SetThreads(threads); err != nil {
					t.Fatal(err)
				}
				x := randVals(r, n*cols, 1)
				outs := make([][]float32, len(ws))
				for j, w := range ws {
					outs[j] = make([]float32, n*w.Rows+1)
					outs[j][n*w.Rows] = 99
				}
				if err := MatMulMany(outs, ws, x, n); err != nil {
					t.Fatal(err)
				}
				for j, w := range ws {
					want := make([]float32, n*w.Rows)
					if err := MatMul(want, w, x, n); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if math.Float32bits(want[i]) != math.Float32bits(outs[j][i]) {
							t.Fatalf("%s threads=%d n=%d matrix %d (%v) out[%d] = %v, MatMul gives %v",
								k.name, threads, n, j, w.Type, i, outs[j][i], want[i])
						}
					}
					if outs[j][n*w.Rows] != 99 {
						t.Fatalf("matrix %d: wrote past n·Rows", j)
					}
				}
			}
		}
	}

	// Invalid arguments: an error, and no output written.
	x := make([]float32, 2*cols)
	bad := []struct {
		name string
		outs [][]float32
		ws   []Matrix
	}{
		{"count mismatch", [][]float32{make([]float32, 600)}, ws[:2]},
		{"cols mismatch", [][]float32{make([]float32, 600), make([]float32, 64)},
			[]Matrix{ws[0], {Type: gguf.TypeF32, Rows: 1, Cols: 32, Data: make([]byte, 128)}}},
		{"one out short", [][]float32{make([]float32, 600), make([]float32, 13)}, ws[:2]},
	}
	for _, c := range bad {
		for _, o := range c.outs {
			for i := range o {
				o[i] = 42
			}
		}
		if err := MatMulMany(c.outs, c.ws, x, 2); !errors.Is(err, ErrShape) {
			t.Errorf("%s: err = %v, want ErrShape", c.name, err)
		}
		for _, o := range c.outs {
			for i, v := range o {
				if v != 42 {
					t.Fatalf("%s: output written at %d on error", c.name, i)
				}
			}
		}
	}
}

func TestInitialKernels(t *testing.T) {
	if got := kernelsel.Initial(scalarKernels, simdKernels, "1"); got != scalarKernels {
		t.Errorf("KVQ_NOSIMD=1: got %s kernels, want scalar", got.name)
	}
	want := scalarKernels
	if simdKernels != nil {
		want = simdKernels
	}
	for _, env := range []string{"", "0"} {
		if got := kernelsel.Initial(scalarKernels, simdKernels, env); got != want {
			t.Errorf("KVQ_NOSIMD=%q: got %s kernels, want %s", env, got.name, want.name)
		}
	}
	defer SetSIMD(true)
	SetSIMD(false)
	if KernelName() != "scalar" {
		t.Errorf("after SetSIMD(false) KernelName() = %q", KernelName())
	}
}

// FuzzMatMul feeds arbitrary matrices and sizes to NewMatrix and MatMul: they must return
// an error or compute, never panic, and never write outside out[:n·Rows].
func FuzzMatMul(f *testing.F) {
	f.Add(uint32(8), uint16(3), uint16(32), uint8(2), []byte{0x00, 0x3c, 1, 2, 3})
	f.Add(uint32(0), uint16(2), uint16(4), uint8(1), make([]byte, 32))
	f.Add(uint32(2), uint16(1), uint16(64), uint8(5), make([]byte, 36))
	f.Add(uint32(12), uint16(1), uint16(256), uint8(1), make([]byte, 144))
	f.Add(uint32(99), uint16(1), uint16(32), uint8(1), make([]byte, 34))
	f.Fuzz(func(t *testing.T, typ uint32, rows, cols uint16, n uint8, data []byte) {
		w := Matrix{Type: gguf.TensorType(typ), Rows: int(rows), Cols: int(cols), Data: data}
		// Fill data to the expected size half of the time, so valid matrices are common.
		if rb, err := w.Type.RowBytes(w.Cols); err == nil && rows%2 == 0 && rb*w.Rows <= 1<<16 {
			d := make([]byte, rb*w.Rows)
			copy(d, data)
			w.Data = d
		}
		if _, err := NewMatrix(w.Type, w.Rows, w.Cols, w.Data); (err == nil) != (w.check() == nil) {
			t.Fatalf("NewMatrix and check disagree: %v", err)
		}
		nn := int(n % 9)
		out := make([]float32, nn*w.Rows+4)
		for i := range out {
			out[i] = 7
		}
		x := make([]float32, nn*w.Cols)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		err := MatMul(out[:nn*w.Rows], w, x, nn)
		for i := nn * w.Rows; i < len(out); i++ {
			if out[i] != 7 {
				t.Fatalf("wrote out[%d] past n·Rows = %d", i, nn*w.Rows)
			}
		}
		if err != nil {
			for i, v := range out {
				if v != 7 && !strings.Contains(err.Error(), "decoding row") {
					t.Fatalf("out[%d] written on error %v", i, err)
				}
			}
		}
	})
}

// TestKernelSetsComplete checks that every kernel set fills every kernel (but the
// optional exact Q8_0 pair, which a set has both of or neither, and the optional
// many-token kernels).
func TestKernelSetsComplete(t *testing.T) {
	optional := map[string]bool{"dotQ8RowsX": true, "dotQ8Tokens": true, "dotQ4KTokens": true, "dotQ6KTokens": true, "dotF16Tokens": true}
	for _, k := range kernelModes(t) {
		if (k.dotQ8RowsX == nil) != (k.dotQ8Tokens == nil) {
			t.Errorf("%s kernels: dotQ8RowsX and dotQ8Tokens not both set or both nil", k.name)
		}
		v := reflect.ValueOf(*k)
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.Kind() == reflect.Func && f.IsNil() && !optional[v.Type().Field(i).Name] {
				t.Errorf("%s kernels: %s is nil", k.name, v.Type().Field(i).Name)
			}
		}
	}
}

// TestQ8ExtremeCodes multiplies Q8_0 rows whose codes sit at the int8 limits (-128, which
// llama.cpp's quantizer never writes but a file may hold, and ±127) against activations
// that quantize to ±127, where a 16-bit pair sum would saturate if the kernels let it.
func TestQ8ExtremeCodes(t *testing.T) {
	const rows, cols, n = 4, 256, 5
	codes := []int8{-128, 127, -127, -128}
	data := make([]byte, 0, rows*cols/32*34)
	wref := make([]float64, 0, rows*cols)
	for r := 0; r < rows; r++ {
		for b := 0; b < cols/32; b++ {
			data = append(data, 0x00, 0x3c) // d = 1
			for j := 0; j < 32; j++ {
				c := codes[r]
				if r == 3 && j%2 == 1 {
					c = 127
				}
				data = append(data, byte(c))
				wref = append(wref, float64(c))
			}
		}
	}
	w, err := NewMatrix(gguf.TypeQ8_0, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = 3
		if i%3 == 0 {
			x[i] = -3
		}
	}
	ref, tol := refMatMul(wref, rows, cols, x, n, true)
	for _, k := range kernelModes(t) {
		withKernels(t, k)
		out := make([]float32, n*rows)
		if err := MatMul(out, w, x, n); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if d := math.Abs(float64(out[i]) - ref[i]); !(d <= tol[i]) {
				t.Errorf("%s out[%d] = %v, want %v ± %.3g", k.name, i, out[i], ref[i], tol[i])
			}
		}
	}
}

// TestNativeMatchesPrepare: Native names exactly the types whose products prepare does
// not send through row dequantization, for one token and for a batch.
func TestNativeMatchesPrepare(t *testing.T) {
	for _, typ := range testTypes {
		rb, err := typ.RowBytes(256)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 8} {
			p := product{k: scalarKernels, w: Matrix{Type: typ, Rows: 1, Cols: 256, Data: make([]byte, rb)}, n: n}
			p.prepare()
			if got := p.kind != kindDecoded; got != Native(typ) {
				t.Errorf("%v, %d tokens: prepare picks its own kernel %v, Native says %v", typ, n, got, Native(typ))
			}
		}
	}
}
