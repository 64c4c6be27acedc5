package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"kvq/assets"
	"kvq/attn"
	"kvq/linalg"
)

func init() {
	register("version", "print the version, the build and the kernels this CPU runs", runVersion)
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "Prints kvq's module version and the commit it was built from (when the build recorded them), the Go version and platform, and the kernel sets in use.", stderr)
	licenses := fs.Bool("licenses", false, "also print the licence notices of the built-in model and vocabulary")
	if err := parse(fs, args); err != nil {
		return err
	}
	version, vcs := "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		var rev, when, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = ", with local changes"
				}
			}
		}
		if rev != "" {
			vcs = fmt.Sprintf("commit %s (%s%s)", rev, when, dirty)
		}
	}
	fmt.Fprintf(stdout, "kvq %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if vcs != "" {
		fmt.Fprintln(stdout, vcs)
	}
	fmt.Fprintf(stdout, "kernels: matrix %s, attention %s (KVQ_NOSIMD=1 selects the scalar ones)\n", linalg.KernelName(), attn.KernelName())
	fmt.Fprintf(stdout, "built-in model: %s (MIT licence; kvq version --licenses prints the notices)\n", assets.ModelName)
	if *licenses {
		fmt.Fprintf(stdout, "\n%s\n%s", assets.ModelLicense, assets.LlamaVocabLicense)
	}
	return nil
}
