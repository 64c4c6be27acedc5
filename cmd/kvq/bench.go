package main

import (
	"fmt"
	"io"
	"sort"
)

// benchmarks holds the sub-benchmarks of `kvq bench`, registered by their files'
// init functions with registerBench.
var benchmarks = map[string]command{}

// registerBench adds `kvq bench <name>`.
func registerBench(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	benchmarks[name] = command{summary, run}
}

func init() {
	register("bench", "run a benchmark: kvq bench <name> [flags] (`kvq bench` lists them)", runBench)
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		benchUsage(stdout)
		return nil
	}
	b, ok := benchmarks[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kvq bench: unknown benchmark %q\n\n", args[0])
		benchUsage(stderr)
		return errUsage
	}
	return b.run(args[1:], stdout, stderr)
}

func benchUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: kvq bench <name> [flags]\n\nBenchmarks:")
	names := make([]string, 0, len(benchmarks))
	for n := range benchmarks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, benchmarks[n].summary)
	}
	fmt.Fprintln(w, "\nRun `kvq bench <name> -h` for a benchmark's flags.")
}
