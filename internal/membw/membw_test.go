package membw

import (
	"fmt"
	"testing"
	"time"
)

// Sum equals a plain loop for every length around the vector step, with and
// without the AVX2 kernel.
func TestSum(t *testing.T) {
	w := make([]uint64, 300)
	for i := range w {
		w[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	for _, avx := range []bool{false, true} {
		if avx && !useAVX2 {
			continue
		}
		old := useAVX2
		setAVX2(avx)
		for n := 0; n <= len(w); n++ {
			var want uint64
			for _, x := range w[:n] {
				want += x
			}
			if got := Sum(w[:n]); got != want {
				t.Fatalf("avx2 %v: Sum of %d words = %#x, want %#x", avx, n, got, want)
			}
		}
		setAVX2(old)
	}
}

func TestRead(t *testing.T) {
	buf, free := Buffer(4 << 20)
	defer free()
	if len(buf)%32 != 0 || len(buf)*8 > 4<<20 || len(buf)*8 < 4<<20-256 {
		t.Fatalf("Buffer(4 MiB) has %d words", len(buf))
	}
	for _, threads := range []int{1, 2, 3} {
		if gb := Read(buf, threads, 10*time.Millisecond); !(gb > 0) {
			t.Errorf("Read with %d threads = %v GB/s", threads, gb)
		}
	}
}

// BenchmarkSum compares the read loops on a buffer far beyond the caches.
func BenchmarkSum(b *testing.B) {
	buf, free := Buffer(256 << 20)
	defer free()
	for _, avx := range []bool{false, true} {
		if avx && !useAVX2 {
			continue
		}
		b.Run(fmt.Sprintf("avx2=%v", avx), func(b *testing.B) {
			old := useAVX2
			setAVX2(avx)
			defer setAVX2(old)
			b.SetBytes(int64(len(buf)) * 8)
			for b.Loop() {
				Sum(buf)
			}
		})
	}
}

func TestParseCacheSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"32768K", 32 << 20}, {"1M", 1 << 20}, {"2G", 2 << 30}, {"512", 512},
		{"", 0}, {"K", 0}, {"-4K", 0}, {"12X", 0},
	} {
		if got := parseCacheSize(tc.in); got != tc.want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if n := LastLevelCache(); n < 0 {
		t.Errorf("LastLevelCache() = %d", n)
	}
}
