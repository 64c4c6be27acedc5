package procstat

import (
	"os"
	"slices"
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

// MemAvailable is the memory the process can allocate without swapping or being
// killed, in bytes, or 0 where unknown: the kernel's estimate (MemAvailable of
// /proc/meminfo: free memory plus reclaimable caches) or, in a memory-limited control
// group (a container), the limit less the group's working set if that is smaller.
func MemAvailable() int64 {
	avail := kbFields("/proc/meminfo", "MemAvailable")[0]
	if room, ok := cgroupRoom("/proc/self/cgroup", "/sys/fs/cgroup"); ok && (avail == 0 || room < avail) {
		avail = room
	}
	return avail
}

// cgroupRoom returns the memory left under the limit of the process's control group,
// from the group file at self (/proc/self/cgroup) and the hierarchy mounted at root
// (/sys/fs/cgroup): the limit less the usage, the group's inactive file pages
// counted as free (the kernel reclaims them before it kills), for cgroup v2
// (memory.max) or v1 (the memory controller's memory.limit_in_bytes). ok is false
// without a limit or where the files cannot be read.
func cgroupRoom(self, root string) (room int64, ok bool) {
	b, err := os.ReadFile(self)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, limitFile, usageFile, inactiveKey string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, limitFile, usageFile, inactiveKey = root+f[2], "memory.max", "memory.current", "inactive_file"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, limitFile, usageFile, inactiveKey = root+"/memory"+f[2], "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
		default:
			continue
		}
		limit, err1 := readInt(dir + "/" + limitFile)
		usage, err2 := readInt(dir + "/" + usageFile)
		if err1 != nil || err2 != nil || limit <= 0 || limit >= 1<<60 {
			continue // no limit ("max", or v1's page-rounded MaxInt64), or none readable
		}
		inactive := statField(dir+"/memory.stat", inactiveKey)
		r := max(0, limit-max(0, usage-inactive))
		if !ok || r < room {
			room, ok = r, true
		}
	}
	return room, ok
}

// readInt reads a file holding one decimal integer.
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// statField returns the value of the "key value" line of a memory.stat file (0 when
// absent).
func statField(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

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
