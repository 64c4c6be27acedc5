package model

import (
	"fmt"
	"os"
	"testing"
	"time"

	"kvq/internal/procstat"
	"kvq/kv"
)

// benchModel is the built-in model, or the GGUF file named by KVQ_BENCH_MODEL (for
// example a `kvq synth --shape llama-134m --weights q8_0` file).
func benchModel(b *testing.B) *Model {
	b.Helper()
	m, err := Open(os.Getenv("KVQ_BENCH_MODEL"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

func benchCache(b *testing.B, m *Model, spec string) (kv.Cache, kv.SeqID) {
	b.Helper()
	cfg, err := m.CacheConfig(spec, "")
	if err != nil {
		b.Fatal(err)
	}
	c, err := kv.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	seq, err := c.NewSeq()
	if err != nil {
		b.Fatal(err)
	}
	return c, seq
}

func tokens(m *Model, n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32((i*7919 + 13) % m.Vocab)
	}
	return t
}

// BenchmarkPrefill times a 128-token prefill into an empty f16 cache; tok/s is reported.
func BenchmarkPrefill(b *testing.B) {
	m := benchModel(b)
	toks := tokens(m, 128)
	c0 := procstat.CPU()
	for b.Loop() {
		c, seq := benchCache(b, m, "f16")
		if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(toks)*b.N)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric(float64(procstat.CPU()-c0)/1e6/float64(len(toks)*b.N), "cpu-ms/tok")
}

// BenchmarkDecode times single-token steps after a 128-token prompt (f16 cache).
func BenchmarkDecode(b *testing.B) {
	m := benchModel(b)
	c, seq := benchCache(b, m, "f16")
	if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: tokens(m, 128)}}); err != nil {
		b.Fatal(err)
	}
	tok := []int32{5}
	c0 := procstat.CPU()
	for b.Loop() {
		if c.Len(seq) >= m.Ctx {
			b.StopTimer()
			c, seq = benchCache(b, m, "f16")
			b.StartTimer()
		}
		if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: tok}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric(float64(procstat.CPU()-c0)/1e6/float64(b.N), "cpu-ms/tok")
}

// BenchmarkPrefillPasses times a 512-token prefill into an empty f16 cache run as
// one Forward call with different pass sizes (Model.PassTokens); the pass size
// trades activation memory against per-pass overhead.
func BenchmarkPrefillPasses(b *testing.B) {
	m := benchModel(b)
	toks := tokens(m, 512)
	for _, pass := range []int{32, DefaultPassTokens, 128, 512} {
		b.Run(fmt.Sprintf("pass=%d", pass), func(b *testing.B) {
			m.PassTokens = pass
			defer func() { m.PassTokens = 0 }()
			c0 := procstat.CPU()
			for b.Loop() {
				c, seq := benchCache(b, m, "f16")
				if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(toks)*b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(float64(procstat.CPU()-c0)/1e6/float64(len(toks)*b.N), "cpu-ms/tok")
		})
	}
}

// BenchmarkRMSNormRows normalizes the 16 rows of a 16-sequence decode step of
// llama-134m (dim 768) in place.
func BenchmarkRMSNormRows(b *testing.B) {
	const dim, rows = 768, 16
	x := make([]float32, dim*rows)
	w := make([]float32, dim)
	for i := range x {
		x[i] = float32(i%97)*0.01 - 0.5
	}
	for i := range w {
		w[i] = 1 + float32(i%5)*0.1
	}
	for b.Loop() {
		rmsNormRows(x, x, w, dim, 1e-5)
	}
}

// BenchmarkAddNormRows adds 16 rows of 768 to the residual and normalizes them,
// fused (addNormRows) and as two passes (addRows, rmsNormRows).
func BenchmarkAddNormRows(b *testing.B) {
	const dim, rows = 768, 16
	x, y, y0 := make([]float32, dim*rows), make([]float32, dim*rows), make([]float32, dim*rows)
	w := make([]float32, dim)
	for i := range x {
		x[i], y0[i] = float32(i%97)*0.01-0.5, float32(i%31)*0.001
	}
	for i := range w {
		w[i] = 1 + float32(i%5)*0.1
	}
	b.Run("fused", func(b *testing.B) {
		for b.Loop() {
			copy(y, y0)
			addNormRows(x, y, w, dim, 1e-5)
		}
	})
	b.Run("two-pass", func(b *testing.B) {
		for b.Loop() {
			copy(y, y0)
			addRows(x, y)
			rmsNormRows(y, x, w, dim, 1e-5)
		}
	})
}

// BenchmarkDecodeBatch times decode steps of 16 sequences at once (one token each)
// after 16-token prompts, as 16 concurrent requests run them, through 128 steps
// before starting over (f16 cache); an op is a step, and its CPU ms are reported.
func BenchmarkDecodeBatch(b *testing.B) {
	const seqs, prompt, steps = 16, 16, 128
	m := benchModel(b)
	batch := make([]Span, seqs)
	var c kv.Cache
	fresh := func() {
		c, _ = benchCache(b, m, "f16")
		for i := range batch {
			seq, err := c.NewSeq()
			if err != nil {
				b.Fatal(err)
			}
			toks := tokens(m, prompt+i)[i:] // different prompts: no shared history
			if _, err := m.Forward(c, []Span{{Seq: seq, Tokens: toks}}); err != nil {
				b.Fatal(err)
			}
			batch[i] = Span{Seq: seq, Tokens: []int32{int32(i)}}
		}
	}
	fresh()
	step := 0
	var cpu time.Duration // CPU time of the timed steps
	c0 := procstat.CPU()
	for b.Loop() {
		if step == steps {
			b.StopTimer()
			cpu += procstat.CPU() - c0
			fresh()
			step = 0
			c0 = procstat.CPU()
			b.StartTimer()
		}
		if _, err := m.Forward(c, batch); err != nil {
			b.Fatal(err)
		}
		step++
	}
	cpu += procstat.CPU() - c0
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/step")
}
