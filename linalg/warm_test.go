package linalg

import (
	"math/rand/v2"
	"testing"
	"time"

	"kvq/gguf"
	"kvq/internal/workpool"
)

// Warm reads in the background and stops at the next parallel product, whose result
// it does not change; with one thread or parking helpers it does nothing.
func TestWarm(t *testing.T) {
	defer SetThreads(Threads())
	defer workpool.SetSpin(workpool.SetSpin(20 * time.Millisecond))
	r := rand.New(rand.NewPCG(31, 32))
	const rows, cols = 2000, 256
	data, _ := encodeRows(t, gguf.TypeQ8_0, randVals(r, rows*cols, 0.05), rows, cols)
	w, err := NewMatrix(gguf.TypeQ8_0, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	big := Matrix{Type: gguf.TypeQ8_0, Rows: 1 << 14, Cols: 1024, Data: make([]byte, (1<<14)*1088)} // 17 MiB
	x := randVals(r, cols, 1)
	want := make([]float32, rows)
	if err := SetThreads(1); err != nil {
		t.Fatal(err)
	}
	Warm(w) // one thread: nothing to do
	if err := MatMul(want, w, x, 1); err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{2, 3} {
		if err := SetThreads(threads); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			Warm(big, w, Matrix{}, w, big) // a fifth matrix is ignored
			got := nanSlice(rows)
			if err := MatMul(got, w, x, 1); err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("threads=%d: out[%d] = %v after Warm, %v without", threads, k, got[k], want[k])
				}
			}
		}
	}
	workpool.SetSpin(0)
	Warm(w) // parking helpers: nothing offered
}

// BenchmarkWarm compares a product over weights read from memory with the same
// product right after Warm had time to read them (the gap the serial code of a decode
// step leaves between products), alternating the two so that other load on the
// machine weighs on both alike; it reports the mean time of each.
func BenchmarkWarm(b *testing.B) {
	defer SetThreads(Threads())
	if err := SetThreads(2); err != nil {
		b.Fatal(err)
	}
	// Enough matrices that, cycled through, they are not in cache when their turn comes.
	ms := make([]Matrix, 96)
	for i := range ms {
		ms[i] = benchMatrix(b, gguf.TypeQ8_0, 768, 768)
	}
	x := randVals(rand.New(rand.NewPCG(1, 1)), 768, 1)
	out := make([]float32, 768)
	var spent [2]time.Duration
	i := 0
	for b.Loop() {
		m := ms[i%len(ms)]
		warm := i%2 == 1
		i++
		if warm {
			Warm(m)
		}
		for t0 := time.Now(); time.Since(t0) < 60*time.Microsecond; { // the serial gap
		}
		t0 := time.Now()
		if err := MatMul(out, m, x, 1); err != nil {
			b.Fatal(err)
		}
		if warm {
			spent[1] += time.Since(t0)
		} else {
			spent[0] += time.Since(t0)
		}
	}
	half := float64(max(1, b.N/2))
	b.ReportMetric(float64(spent[0].Nanoseconds())/half, "cold-ns/product")
	b.ReportMetric(float64(spent[1].Nanoseconds())/half, "warmed-ns/product")
}
