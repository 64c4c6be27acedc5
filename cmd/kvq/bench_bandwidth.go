package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"kvq/internal/membw"
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
	fs := newFlags("bench bandwidth", "Measures the machine's memory read bandwidth: the best pass of reading a buffer far beyond the last-level cache, per thread count.", stderr)
	size := byteSize(defaultBandwidthBuffer)
	fs.Var(&size, "size", "buffer size, far beyond the last-level cache, e.g. 512MiB")
	threadList := fs.String("threads", "1,2", "comma-separated thread counts (`LIST`)")
	minTime := fs.Duration("time", time.Second, "measuring time per thread count")
	jsonPath := fs.String("json", "", "also write the results as JSON to `FILE`")
	if err := parse(fs, args); err != nil {
		return err
	}
	threads, err := parseThreadList(*threadList)
	if err != nil {
		return err
	}
	if size < 1<<20 {
		return usagef(fs, "--size must be at least 1MiB, got %d bytes", int64(size))
	}
	if *minTime <= 0 {
		return usagef(fs, "--time must be positive, got %v", *minTime)
	}
	buf, free := membw.Buffer(int64(size))
	defer free()
	rep := bandwidthReport{BufferBytes: int64(len(buf)) * 8}
	fmt.Fprintf(stdout, "read bandwidth over %s (best pass of %v per thread count)\n", fmtBytes(rep.BufferBytes), *minTime)
	for _, t := range threads {
		gb := membw.Read(buf, t, *minTime)
		rep.Rows = append(rep.Rows, bandwidthPoint{Threads: t, GBPerS: gb})
		fmt.Fprintf(stdout, "  %2d thread(s)  %6.1f GB/s\n", t, gb)
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rep)
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
