package procstat

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupRoom reads fake control-group hierarchies: v2 and v1, with and without a
// limit, the inactive file pages counted as free, and the smaller room of two.
func TestCgroupRoom(t *testing.T) {
	write := func(t *testing.T, path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		self   string
		files  map[string]string
		room   int64
		wantOK bool
	}{
		{"v2 limited", "0::/app\n", map[string]string{
			"app/memory.max": "1000000\n", "app/memory.current": "600000\n", "app/memory.stat": "anon 400000\ninactive_file 100000\n",
		}, 500000, true},
		{"v2 unlimited", "0::/\n", map[string]string{"memory.max": "max\n", "memory.current": "600000\n"}, 0, false},
		{"v1 limited", "4:memory:/docker/abc\n0::/\n", map[string]string{
			"memory/docker/abc/memory.limit_in_bytes": "2000000\n", "memory/docker/abc/memory.usage_in_bytes": "1500000\n",
			"memory/docker/abc/memory.stat": "cache 1\ntotal_inactive_file 250000\n",
		}, 750000, true},
		{"v1 unlimited", "4:memory:/x\n", map[string]string{
			"memory/x/memory.limit_in_bytes": "9223372036854771712\n", "memory/x/memory.usage_in_bytes": "1\n",
		}, 0, false},
		{"v1 shared controllers, over the limit", "3:cpu,memory:/y\n", map[string]string{
			"memory/y/memory.limit_in_bytes": "1000\n", "memory/y/memory.usage_in_bytes": "5000\n",
		}, 0, true},
		{"no files", "0::/missing\n", nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			self := filepath.Join(dir, "self-cgroup")
			write(t, self, c.self)
			root := filepath.Join(dir, "fs")
			for p, s := range c.files {
				write(t, filepath.Join(root, p), s)
			}
			room, ok := cgroupRoom(self, root)
			if ok != c.wantOK || room != c.room {
				t.Errorf("cgroupRoom = %d, %v; want %d, %v", room, ok, c.room, c.wantOK)
			}
		})
	}
	if _, ok := cgroupRoom(filepath.Join(t.TempDir(), "none"), "/nonexistent"); ok {
		t.Error("cgroupRoom without a group file reported a limit")
	}
}
