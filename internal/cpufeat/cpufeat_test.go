package cpufeat

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// The features agree with what the Linux kernel reports for this CPU.
func TestMatchesProcCPUInfo(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if runtime.GOARCH != "amd64" || err != nil {
		t.Skip("needs Linux on amd64")
	}
	var flags map[string]bool
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = map[string]bool{}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	if flags == nil {
		t.Skip("no flags line in /proc/cpuinfo")
	}
	if want := flags["avx"] && flags["avx2"] && flags["fma"]; AVX2FMA != want {
		t.Errorf("AVX2FMA = %v, /proc/cpuinfo says %v", AVX2FMA, want)
	}
	if want := flags["avx"] && flags["avx2"] && flags["fma"] && flags["f16c"]; F16C != want {
		t.Errorf("F16C = %v, /proc/cpuinfo says %v", F16C, want)
	}
	if want := F16C && flags["avx512f"]; AVX512F != want {
		t.Errorf("AVX512F = %v, /proc/cpuinfo says %v", AVX512F, want)
	}
	if want := AVX512F && flags["avx512bw"] && flags["avx512_vnni"]; AVX512VNNI != want {
		t.Errorf("AVX512VNNI = %v, /proc/cpuinfo says %v", AVX512VNNI, want)
	}
	if want := AVX512VNNI && flags["avx512vbmi"] && flags["gfni"] && flags["avx512vl"]; AVX512VBMIGFNI != want {
		t.Errorf("AVX512VBMIGFNI = %v, /proc/cpuinfo says %v", AVX512VBMIGFNI, want)
	}
}
