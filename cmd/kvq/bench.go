package main

import (
	"errors"
	"flag"
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
	register("bench", "run a benchmark: decode, prefill, attention, bandwidth, throughput, tier or serve", runBench)
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		benchUsage(stderr)
		return &usageError{cmd: "kvq bench", err: errors.New("which benchmark?")}
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return runBench(append(args[1:len(args):len(args)], "-h"), stdout, stderr)
		}
		benchUsage(stdout)
		return flag.ErrHelp
	}
	b, ok := benchmarks[args[0]]
	if !ok {
		return &usageError{cmd: "kvq bench", err: fmt.Errorf("unknown benchmark %q", args[0])}
	}
	err := b.run(args[1:], stdout, stderr)
	var ue *usageError
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("%s: %w", args[0], err)
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
	fmt.Fprintln(w, "\nRun 'kvq help bench <name>' for a benchmark's flags.")
}
