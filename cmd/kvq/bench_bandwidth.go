package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func init() {
	registerBench("bandwidth", "read bandwidth of this machine with 1 and 2 threads (the decode floor)", runBenchBandwidth)
}

// bandwidthReport is the JSON output of `kvq bench bandwidth`.
type bandwidthReport struct {
	BufferBytes int64            `json:"buffer_bytes"`
	Rows        []bandwidthPoint `json:"rows"`
}

// bandwidthPoint is the best read bandwidth measured with a number of threads.
type bandwidthPoint struct {
	Threads int     `json:"threads"`
	GBPerS  float64 `json:"gb_per_s"` // 1e9 bytes per second
}

// defaultBandwidthBuffer is the buffer size of the read test: far beyond the
// last-level cache of current servers, so that the loop reads DRAM.
const defaultBandwidthBuffer = 512 << 20

func runBenchBandwidth(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench bandwidth", "[--size BYTES] [--threads LIST] [--time D] [--json F]", stderr)
	size := byteSize(defaultBandwidthBuffer)
	fs.Var(&size, "size", "buffer size, far beyond the last-level cache, e.g. 512MiB")
	threadList := fs.String("threads", "1,2", "comma-separated thread counts")
	minTime := fs.Duration("time", time.Second, "measuring time per thread count")
	jsonPath := fs.String("json", "", "also write the results as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	threads, err := parseThreadList(*threadList)
	if err != nil {
		return err
	}
	if size < 1<<20 {
		return fmt.Errorf("--size must be at least 1MiB, got %d bytes", int64(size))
	}
	if *minTime <= 0 {
		return fmt.Errorf("--time must be positive, got %v", *minTime)
	}
	buf := newReadBuffer(int64(size))
	rep := bandwidthReport{BufferBytes: int64(len(buf)) * 8}
	fmt.Fprintf(stdout, "read bandwidth over %s (best pass of %v per thread count)\n", fmtBytes(rep.BufferBytes), *minTime)
	for _, t := range threads {
		gb := readBandwidth(buf, t, *minTime)
		rep.Rows = append(rep.Rows, bandwidthPoint{Threads: t, GBPerS: gb})
		fmt.Fprintf(stdout, "  %2d thread(s)  %6.1f GB/s\n", t, gb)
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", *jsonPath, err)
		}
	}
	return nil
}

// parseThreadList parses "1,2,4" into positive thread counts.
func parseThreadList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("--threads: %q is not a thread count in 1..256", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// newReadBuffer returns a buffer of about size bytes (a multiple of 64), every page
// written so that reads hit memory rather than the shared zero page.
func newReadBuffer(size int64) []uint64 {
	buf := make([]uint64, size/64*8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	return buf
}

// readBandwidth returns the best bandwidth, in GB/s (1e9 bytes per second), of
// threads goroutines each summing its own contiguous share of buf, over passes
// repeated for at least minTime. The goroutines are locked to OS threads and
// released together for each pass.
func readBandwidth(buf []uint64, threads int, minTime time.Duration) float64 {
	threads = max(1, min(threads, len(buf)/8))
	share := len(buf) / threads &^ 7
	var sink [256]uint64
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
				sink[t] += sumWords(part)
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

// sumWords returns the sum of w (len(w) a multiple of 8): a read loop with eight
// independent accumulators, so that it is bound by memory, not by the adds.
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
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}
