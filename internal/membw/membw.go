// Package membw measures how fast this machine reads memory: the floor of decode,
// which reads every weight and every cached byte once per token.
package membw

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"kvq/internal/hugemem"
)

// Buffer returns a buffer of about size bytes (a multiple of 256) to read, written
// once so that every page is resident, and the function that releases it. The buffer
// is in huge pages where the kernel offers them (hugemem), as the weights decode reads
// are (gguf.File.Preload): reading through 4 KiB pages is slower (two threads on the
// 2-core AMD EPYC this was measured on: 30.4–32.6 against 35.0–36.3 GB/s), and the floor
// is the faster figure. Where such memory cannot be mapped, the Go heap serves.
func Buffer(size int64) (buf []uint64, free func()) {
	words := int(size / 256 * 32)
	free = func() {}
	if r, err := hugemem.Map(max(1, words*8)); err == nil {
		buf = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(r.Bytes))), words)
		free = func() { r.Free() }
	} else {
		buf = make([]uint64, words)
	}
	for i := range buf {
		buf[i] = uint64(i)
	}
	return buf, free
}

// Read returns the best read bandwidth, in 1e9 bytes per second, of threads
// goroutines each summing its share of buf, over passes repeated for at least
// minTime (two at least). The goroutines are locked to OS threads and released
// together for each pass.
func Read(buf []uint64, threads int, minTime time.Duration) float64 {
	threads = max(1, min(threads, len(buf)/32))
	share := len(buf) / threads &^ 31
	sink := make([]uint64, threads)
	best := 0.0
	start := time.Now()
	for pass := 0; pass < 2 || time.Since(start) < minTime; pass++ {
		var ready, done sync.WaitGroup
		gate := make(chan struct{})
		ready.Add(threads)
		done.Add(threads)
		for t := range threads {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				part := buf[t*share : (t+1)*share]
				ready.Done()
				<-gate
				sink[t] += Sum(part)
				done.Done()
			}()
		}
		ready.Wait()
		t0 := time.Now()
		close(gate)
		done.Wait()
		el := time.Since(t0).Seconds()
		if gb := float64(threads*share*8) / el / 1e9; gb > best {
			best = gb
		}
	}
	return best
}

// Sum returns the wrapping sum of w. With AVX2 it reads 256 bytes per step into
// four vector accumulators (len(w) a multiple of 32 words; the rest is summed in
// Go); otherwise eight scalar accumulators. The AVX2 loop reads faster: 19.6 vs
// 14.3 GB/s on one thread of the 2-core AMD EPYC this was measured on
// (BenchmarkSum), so the figure it gives is the honest floor.
func Sum(w []uint64) uint64 {
	var s uint64
	if n := len(w) &^ 31; useAVX2 && n > 0 {
		s = sumAVX2(&w[0], n)
		w = w[n:]
	}
	return s + sumWords(w)
}

// sumWords is Sum in Go: eight independent accumulators, so that it is bound by
// memory rather than by the adds where it can be.
func sumWords(w []uint64) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for len(w) >= 8 {
		b := (*[8]uint64)(w)
		s0 += b[0]
		s1 += b[1]
		s2 += b[2]
		s3 += b[3]
		s4 += b[4]
		s5 += b[5]
		s6 += b[6]
		s7 += b[7]
		w = w[8:]
	}
	for _, x := range w {
		s0 += x
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// LastLevelCache returns the size in bytes of the largest CPU cache of CPU 0 (on
// Linux, from /sys/devices/system/cpu/cpu0/cache), or 0 where it is not known.
func LastLevelCache() int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var best int64
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "size"))
		if err != nil {
			continue
		}
		if n := parseCacheSize(strings.TrimSpace(string(b))); n > best {
			best = n
		}
	}
	return best
}

// parseCacheSize parses a sysfs cache size ("32768K", "1M", "512"), or returns 0.
func parseCacheSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}
