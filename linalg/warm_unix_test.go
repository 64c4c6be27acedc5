//go:build unix

package linalg

import (
	"syscall"
	"testing"
	"time"

	"kvq/gguf"
	"kvq/internal/workpool"
)

// After StopWarm returns, no helper reads the warmed weights: unmapping them then
// must not fault.
func TestWarmStopsBeforeUnmap(t *testing.T) {
	defer SetThreads(Threads())
	defer workpool.SetSpin(workpool.SetSpin(20 * time.Millisecond))
	if err := SetThreads(2); err != nil {
		t.Fatal(err)
	}
	const rows, cols = 1 << 13, 1024 // 8.5 MiB of Q8_0
	small := Matrix{Type: gguf.TypeQ8_0, Rows: 64, Cols: 256, Data: make([]byte, 64*272)}
	x, out := make([]float32, 256), make([]float32, 64)
	for i := 0; i < 100; i++ {
		data, err := syscall.Mmap(-1, 0, rows*1088, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			t.Skip(err)
		}
		workpool.For(2, 2, func(int) {}) // a helper is polling
		Warm(Matrix{Type: gguf.TypeQ8_0, Rows: rows, Cols: cols, Data: data})
		time.Sleep(time.Duration(i%4) * 20 * time.Microsecond) // mid-read, mostly
		if i%2 == 1 {                                          // a product stops the reading; StopWarm waits for it
			if err := MatMul(out, small, x, 1); err != nil {
				t.Fatal(err)
			}
		}
		StopWarm()
		if a := warmActive.Load(); a != 0 {
			t.Fatalf("%d warm jobs still reading after the stop returned", a)
		}
		if err := syscall.Munmap(data); err != nil {
			t.Fatal(err)
		}
	}
}

// A product stops the reading without StopWarm: the job ends having read part of
// a matrix that takes far longer to read (256 MiB never written: every 4 KiB read
// maps a page).
func TestWarmStoppedByProduct(t *testing.T) {
	defer SetThreads(Threads())
	defer workpool.SetSpin(workpool.SetSpin(20 * time.Millisecond))
	if err := SetThreads(2); err != nil {
		t.Fatal(err)
	}
	const rows, cols = 1 << 18, 1024 // 272 MiB of Q8_0
	data, err := syscall.Mmap(-1, 0, rows*1088, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer syscall.Munmap(data)
	big := Matrix{Type: gguf.TypeQ8_0, Rows: rows, Cols: cols, Data: data}
	small := Matrix{Type: gguf.TypeQ8_0, Rows: 64, Cols: 256, Data: make([]byte, 64*272)}
	x, out := make([]float32, 256), make([]float32, 64)
	const tries = 10
	early := 0
	for i := 0; i < tries; i++ {
		workpool.For(2, 2, func(int) {}) // a helper is polling
		read0 := warmRead.Load()
		Warm(big)
		for t0 := time.Now(); warmActive.Load() == 0 && time.Since(t0) < 10*time.Millisecond; {
		}
		if err := MatMul(out, small, x, 1); err != nil {
			t.Fatal(err)
		}
		for t0 := time.Now(); warmActive.Load() > 0; { // no StopWarm: the product alone
			if time.Since(t0) > 10*time.Second {
				t.Fatal("the warm job did not end")
			}
			time.Sleep(10 * time.Microsecond)
		}
		if warmRead.Load()-read0 < int64(len(big.Data)) {
			early++
		}
	}
	if early < tries-1 {
		t.Fatalf("the product stopped the warm job early in %d of %d tries", early, tries)
	}
}
