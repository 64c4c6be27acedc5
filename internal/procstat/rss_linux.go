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
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "RssAnon" && name != "RssFile") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			continue
		}
		if name == "RssAnon" {
			anon = kb * 1024
		} else {
			file = kb * 1024
		}
	}
	return anon, file
}
