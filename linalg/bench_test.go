package linalg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
	"kvq/internal/hugemem"
	"kvq/internal/procstat"
)

// benchMatrix returns a rows×cols matrix of type t filled with random but valid values
// (fast to build: no quantization search).
func benchMatrix(b *testing.B, t gguf.TensorType, rows, cols int) Matrix {
	b.Helper()
	rb, err := t.RowBytes(cols)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	data := make([]byte, rows*rb)
	switch t {
	case gguf.TypeF32:
		for i := 0; i < len(data); i += 4 {
			binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(r.NormFloat64()*0.05)))
		}
	case gguf.TypeF16:
		for i := 0; i < len(data); i += 2 {
			binary.LittleEndian.PutUint16(data[i:], f32ToF16(float32(r.NormFloat64()*0.05)))
		}
	case gguf.TypeQ8_0, gguf.TypeQ4_0:
		bb := 34
		if t == gguf.TypeQ4_0 {
			bb = 18
		}
		for i := 0; i < len(data); i += bb {
			binary.LittleEndian.PutUint16(data[i:], f32ToF16(float32(0.0005+r.Float64()*0.001)))
			for j := i + 2; j < i+bb; j++ {
				data[j] = byte(r.Uint32())
			}
		}
	default:
		// Random blocks; bit 6 of every byte cleared keeps every binary16 scale finite.
		for i := range data {
			data[i] = byte(r.Uint32()) &^ 0x40
		}
	}
	m, err := NewMatrix(t, rows, cols, data)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// llama-134m shapes as rows×cols (out×in).
var benchShapes = []struct {
	name       string
	rows, cols int
}{
	{"768x768", 768, 768}, {"2048x768", 2048, 768}, {"768x2048", 768, 2048}, {"32000x768", 32000, 768},
}

// BenchmarkMatMul reports weight bytes per second (b.SetBytes = weight bytes per call).
func BenchmarkMatMul(b *testing.B) {
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_K, gguf.TypeQ6_K,
		gguf.TypeQ5_K, gguf.TypeQ3_K, gguf.TypeQ2_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		for _, sh := range benchShapes {
			w := benchMatrix(b, typ, sh.rows, sh.cols)
			for _, n := range []int{1, 64} {
				b.Run(fmt.Sprintf("%v/%s/n=%d", typ, sh.name, n), func(b *testing.B) {
					x := randVals(rand.New(rand.NewPCG(1, 1)), n*sh.cols, 1)
					out := make([]float32, n*sh.rows)
					b.SetBytes(int64(len(w.Data)))
					c0 := procstat.CPU()
					for b.Loop() {
						if err := MatMul(out, w, x, n); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
					b.ReportMetric(float64(procstat.CPU()-c0)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// BenchmarkModel runs every weight product of one llama-134m forward pass (12 layers of
// q, k, v, o 768×768, gate and up 2048×768, down 768×2048, then the 32000×768 output) for
// n tokens and reports tokens per second: the ceiling the matrix kernels put on decode
// (n=1) and prefill (n=64) of that shape.
func BenchmarkModel(b *testing.B) {
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeF32,
		gguf.TypeQ5_K, gguf.TypeQ3_K, gguf.TypeQ2_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		sq := benchMatrix(b, typ, 768, 768)
		up := benchMatrix(b, typ, 2048, 768)
		down := benchMatrix(b, typ, 768, 2048)
		// Each layer gets its own copies so the weights stream from memory, as in a model,
		// in huge pages where offered, as the model's preloaded weights are; each copy
		// has its own row tables (NewMatrix), streamed from memory too.
		cp := func(m Matrix) Matrix {
			data := []byte(nil)
			if r, err := hugemem.Map(len(m.Data)); err == nil {
				b.Cleanup(func() { r.Free() })
				data = r.Bytes
			}
			data = append(data[:0], m.Data...)
			c, err := NewMatrix(m.Type, m.Rows, m.Cols, data)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		outW := cp(benchMatrix(b, typ, 32000, 768))
		type layer struct{ q, k, v, o, gate, up, down Matrix }
		layers := make([]layer, 12)
		var total int64
		for i := range layers {
			layers[i] = layer{cp(sq), cp(sq), cp(sq), cp(sq), cp(up), cp(up), cp(down)}
			total += int64(4*len(sq.Data) + 2*len(up.Data) + len(down.Data))
		}
		total += int64(len(outW.Data))
		// 8, 16 and 32 tokens: the products of batched decode steps of that many sequences.
		for _, n := range []int{1, 8, 16, 32, 64} {
			for _, many := range []bool{false, true} {
				b.Run(fmt.Sprintf("llama134m/%v/n=%d/many=%v", typ, n, many), func(b *testing.B) {
					r := rand.New(rand.NewPCG(2, 2))
					x := randVals(r, n*2048, 1)
					y := make([]float32, n*32000)
					q, k, v := make([]float32, n*768), make([]float32, n*768), make([]float32, n*768)
					g, u := make([]float32, n*2048), make([]float32, n*2048)
					run := func(out []float32, m Matrix) {
						if err := MatMul(out, m, x, n); err != nil {
							b.Fatal(err)
						}
					}
					pass := func() {
						for _, l := range layers {
							if many {
								if err := MatMulMany([][]float32{q, k, v}, []Matrix{l.q, l.k, l.v}, x, n); err != nil {
									b.Fatal(err)
								}
							} else {
								run(q, l.q)
								run(k, l.k)
								run(v, l.v)
							}
							run(y, l.o)
							if many {
								if err := MatMulMany([][]float32{g, u}, []Matrix{l.gate, l.up}, x, n); err != nil {
									b.Fatal(err)
								}
							} else {
								run(g, l.gate)
								run(u, l.up)
							}
							run(y, l.down)
						}
						run(y, outW)
					}
					pass() // the matrices' row tables are made at their first product
					b.SetBytes(total)
					c0 := procstat.CPU()
					for b.Loop() {
						pass()
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
					b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/pass")
					b.ReportMetric(float64(procstat.CPU()-c0)/1e6/float64(b.N), "cpu-ms/pass")
				})
			}
		}
	}
}

// BenchmarkKernels times the inner kernels on one 4096-value row, per kernel set.
func BenchmarkKernels(b *testing.B) {
	const cols = 4096
	r := rand.New(rand.NewPCG(9, 9))
	x := randVals(r, cols, 1)
	xq, xd := make([]int8, cols), make([]float32, cols/32)
	scalarKernels.quantQ8(xq, xd, x)
	q8 := benchMatrix(b, gguf.TypeQ8_0, 1, cols).Data
	q4 := benchMatrix(b, gguf.TypeQ4_0, 1, cols).Data
	f16 := benchMatrix(b, gguf.TypeF16, 1, cols).Data
	y := randVals(r, cols, 1)
	sets := []*kernelSet{scalarKernels}
	if simdKernels != nil {
		sets = append(sets, simdKernels)
	}
	var sink float32
	var one [1]float32
	for _, k := range sets {
		b.Run(k.name+"/dotF32", func(b *testing.B) {
			b.SetBytes(cols * 4)
			for b.Loop() {
				sink += k.dotF32(x, y)
			}
		})
		b.Run(k.name+"/dotF16", func(b *testing.B) {
			b.SetBytes(int64(len(f16)))
			for b.Loop() {
				sink += k.dotF16(f16, x)
			}
		})
		b.Run(k.name+"/dotQ8", func(b *testing.B) {
			b.SetBytes(int64(len(q8)))
			for b.Loop() {
				sink += k.dotQ8(q8, xq, xd)
			}
		})
		b.Run(k.name+"/dotQ4", func(b *testing.B) {
			b.SetBytes(int64(len(q4)))
			for b.Loop() {
				k.dotQ4Rows(one[:], q4, 0, xq, xd)
				sink += one[0]
			}
		})
		b.Run(k.name+"/quantQ8", func(b *testing.B) {
			b.SetBytes(cols * 4)
			for b.Loop() {
				k.quantQ8(xq, xd, x)
			}
		})
		b.Run(k.name+"/axpy", func(b *testing.B) {
			b.SetBytes(cols * 4)
			for b.Loop() {
				k.axpy(y, 1e-9, x)
			}
		})
	}
	_ = sink
}

// BenchmarkDispatch measures the fixed cost of a parallel MatMul: a product just above
// the size where MatMul starts using the helper goroutines, on 1 and on 2 threads.
func BenchmarkDispatch(b *testing.B) {
	w := benchMatrix(b, gguf.TypeF32, 64, 256)
	x := randVals(rand.New(rand.NewPCG(3, 3)), 256, 1)
	out := make([]float32, 64)
	for _, t := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", t), func(b *testing.B) {
			defer SetThreads(Threads())
			if err := SetThreads(t); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := MatMul(out, w, x, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPrefill runs the weight products of a llama-134m prefill of n tokens as the
// model issues them (per layer: q, k, v in one MatMulMany; o; gate and up in one
// MatMulMany; down; then the output matrix for the last token only) and reports tokens per
// second, and CPU time per token, which the other work on a shared machine disturbs less
// than wall time.
func BenchmarkPrefill(b *testing.B) {
	const layers, dim, ffn, vocab = 12, 768, 2048, 32000
	typ := gguf.TypeQ8_0
	sq := benchMatrix(b, typ, dim, dim)
	up := benchMatrix(b, typ, ffn, dim)
	down := benchMatrix(b, typ, dim, ffn)
	outW := benchMatrix(b, typ, vocab, dim)
	type layer struct{ q, k, v, o, gate, up, down Matrix }
	ls := make([]layer, layers)
	cp := func(m Matrix) Matrix { m.Data = append([]byte(nil), m.Data...); return m }
	for i := range ls {
		ls[i] = layer{cp(sq), cp(sq), cp(sq), cp(sq), cp(up), cp(up), cp(down)}
	}
	for _, n := range []int{64, 512} {
		b.Run(fmt.Sprintf("llama134m/%v/n=%d", typ, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(4, 4))
			x, h := randVals(r, n*dim, 1), randVals(r, n*ffn, 1)
			q, k, v, o := make([]float32, n*dim), make([]float32, n*dim), make([]float32, n*dim), make([]float32, n*dim)
			g, u, y := make([]float32, n*ffn), make([]float32, n*ffn), make([]float32, vocab)
			c0 := procstat.CPU()
			for b.Loop() {
				for _, l := range ls {
					if err := MatMulMany([][]float32{q, k, v}, []Matrix{l.q, l.k, l.v}, x, n); err != nil {
						b.Fatal(err)
					}
					if err := MatMul(o, l.o, q, n); err != nil {
						b.Fatal(err)
					}
					if err := MatMulMany([][]float32{g, u}, []Matrix{l.gate, l.up}, x, n); err != nil {
						b.Fatal(err)
					}
					if err := MatMul(o, l.down, h, n); err != nil {
						b.Fatal(err)
					}
				}
				if err := MatMul(y, outW, x[(n-1)*dim:], 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(float64(procstat.CPU()-c0)/1e3/float64(b.N*n), "cpu-us/tok")
		})
	}
}

// BenchmarkBatch times one 2048×768 product (a llama-134m gate projection) for small
// and medium token counts, as batched decode steps of several sequences issue them, with
// every SIMD kernel set this CPU has (avx2-asm against avx512-vnni where both run). It
// reports CPU time per token and multiply-adds per CPU second.
func BenchmarkBatch(b *testing.B) {
	prev := active.Load()
	defer active.Store(prev)
	sets := append([]*kernelSet{simdKernels}, alternateKernels...)
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		w := benchMatrix(b, typ, 2048, 768)
		for _, n := range []int{1, 2, 3, 4, 6, 8, 16, 32, 64, 128, 512} {
			for _, k := range sets {
				if k == nil {
					continue
				}
				b.Run(fmt.Sprintf("%v/n=%d/%s", typ, n, k.name), func(b *testing.B) {
					active.Store(k)
					x := randVals(rand.New(rand.NewPCG(5, 5)), n*768, 1)
					out := make([]float32, n*2048)
					c0 := procstat.CPU()
					for b.Loop() {
						if err := MatMul(out, w, x, n); err != nil {
							b.Fatal(err)
						}
					}
					cpu := float64(procstat.CPU()-c0) / float64(b.N)
					b.ReportMetric(cpu/1e3/float64(n), "cpu-us/tok")
					b.ReportMetric(2048*768*float64(n)/cpu, "GMAC/cpu-s")
				})
			}
		}
	}
}

// BenchmarkRowsKernels times the one-token rows kernel of each K-quant and IQ4 type
// alone (one call over the whole matrix, on one thread: no dispatch), with every SIMD
// kernel set this CPU has, on a matrix that stays in L2 (2048×768) and on one streamed
// from memory (16384×2048). It reports weight bytes per second (MB/s) and CPU time per
// weight byte (less disturbed by other load than wall time), the figure the types are
// compared by.
func BenchmarkRowsKernels(b *testing.B) {
	sets := append([]*kernelSet{simdKernels}, alternateKernels...)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ3_K, gguf.TypeQ2_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		for _, sh := range []struct{ rows, cols int }{{2048, 768}, {16384, 2048}} {
			w := benchMatrix(b, typ, sh.rows, sh.cols)
			rb, _ := w.RowBytes()
			x := randVals(rand.New(rand.NewPCG(6, 6)), sh.cols, 1)
			xq, xd, xsum := make([]int8, sh.cols), make([]float32, sh.cols/blockElems), make([]int32, sh.cols/blockElems)
			scalarKernels.quantQ8(xq, xd, x)
			blockSums(xsum, xq)
			out := make([]float32, sh.rows)
			for _, k := range sets {
				if k == nil {
					continue
				}
				b.Run(fmt.Sprintf("%v/%dx%d/%s", typ, sh.rows, sh.cols, k.name), func(b *testing.B) {
					b.SetBytes(int64(len(w.Data)))
					c0 := procstat.CPU()
					for b.Loop() {
						quantTypes[typ].rows(k, out, w.Data, rb, xq, xd, xsum)
					}
					b.ReportMetric(float64(procstat.CPU()-c0)/float64(b.N)/float64(len(w.Data)), "cpu-ns/B")
				})
			}
		}
	}
}
