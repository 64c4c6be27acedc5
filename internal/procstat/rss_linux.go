package procstat

import (
	"os"
	"strconv"
	"strings"
)

// RSS is the process's current resident set size in bytes, split into anonymous
// memory (heap, stacks) and file-backed pages (the executable, mapped files such as
// a model's weights), from /proc/self/status (0, 0 where unknown).
func RSS() (anon, file int64) {
	v := kbFields("/proc/self/status", "RssAnon", "RssFile")
	return v[0], v[1]
}

// MemAvailable is the memory the kernel estimates can be allocated without swapping,
// in bytes (MemAvailable of /proc/meminfo: free memory plus reclaimable caches), or
// 0 where unknown.
func MemAvailable() int64 { return kbFields("/proc/meminfo", "MemAvailable")[0] }

// kbFields returns the values, in bytes, of the "name: N kB" lines of the file at path
// for each of names (0 for a name not found).
func kbFields(path string, names ...string) []int64 {
	out := make([]int64, len(names))
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for line := range strings.Lines(string(b)) {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for i, n := range names {
			if name != n {
				continue
			}
			if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64); err == nil {
				out[i] = kb * 1024
			}
		}
	}
	return out
}
