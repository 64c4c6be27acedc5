// Command kvq runs, measures and serves LLM inference with a compressed, paged KV cache.
//
// Usage: kvq <command> [flags]; `kvq help` lists the commands and `kvq help <command>`
// shows a command's flags. Without --model every command uses the built-in stories260K
// model.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// command is one subcommand of kvq.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary, run}
}

// usageError is a mistake on the command line (a bad flag, a missing one): main prints
// it on one line with a pointer to the command's help, and exits 2.
type usageError struct {
	cmd string // "kvq eval", "kvq bench decode"
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError of the command whose flags are fs.
func usagef(fs *flag.FlagSet, format string, a ...any) error {
	return &usageError{cmd: fs.Name(), err: fmt.Errorf(format, a...)}
}

func main() {
	// The heap profiler samples an allocation per 512 KiB by default and keeps the
	// stacks of the samples (1.4 MiB at 4k context of llama-134m): only a run that
	// writes a heap profile (bench decode --memprofile) turns it on.
	runtime.MemProfileRate = 0
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs the command line args and returns the exit status: 0 on success (and
// for help asked for), 1 when the command failed, 2 for a usage mistake.
func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		name, rest = rest[0], append(rest[1:len(rest):len(rest)], "-h")
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "kvq: unknown command %q; run 'kvq help' for the list\n", name)
		return 2
	}
	err := c.run(rest, stdout, stderr)
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\nRun '%s -h' for usage.\n", ue.cmd, ue.err, ue.cmd)
		return 2
	}
	fmt.Fprintf(stderr, "kvq %s: %v\n", name, err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "kvq: a compressed, paged KV cache for LLM inference\n\nUsage: kvq <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'kvq help <command>' for a command's flags. Without --model, the built-in stories260K model is used.")
}

// flagSets holds what newFlags and requireFlags know of each command's flags beyond
// the flag package: the description and the required flags.
var flagSets = map[*flag.FlagSet]*flagInfo{}

type flagInfo struct {
	about    string
	required []string
}

// newFlags returns the flag set of command name ("eval", "bench decode"), whose help
// (-h) goes to stderr: a usage line made from its flags, about (what the command
// does; may be empty), then each flag.
func newFlags(name, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kvq "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	flagSets[fs] = &flagInfo{about: about}
	fs.Usage = func() { printUsage(fs, stderr) }
	return fs
}

// requireFlags marks flags of fs that must be given: parse refuses a command line
// without them, and the usage line shows them outside brackets.
func requireFlags(fs *flag.FlagSet, names ...string) {
	flagSets[fs].required = append(flagSets[fs].required, names...)
}

// parse parses flags: -h prints the help and returns flag.ErrHelp; a bad flag, a
// missing required one or a stray argument is a usageError naming it.
func parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard) // the error is printed once, by runMain
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return &usageError{cmd: fs.Name(), err: err}
	case fs.NArg() > 0:
		return usagef(fs, "unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var missing []string
	for _, n := range flagSets[fs].required {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		verb := " is required"
		if len(missing) > 1 {
			missing[len(missing)-2] += " and " + missing[len(missing)-1]
			missing, verb = missing[:len(missing)-1], " are required"
		}
		return usagef(fs, "%s%s", strings.Join(missing, ", "), verb)
	}
	return nil
}

// valueName is how help names the value of flag f: the word in backquotes in its
// usage, else one from its type ("" for a boolean).
func valueName(f *flag.Flag) (name, usage string) {
	name, usage = flag.UnquoteUsage(f)
	if strings.Contains(f.Usage, "`") {
		return name, usage
	}
	switch name {
	case "int", "uint", "int64", "uint64":
		name = "N"
	case "float":
		name = "X"
	case "duration":
		name = "DURATION"
	case "string":
		name = "S"
	case "value":
		name = "V"
	}
	if _, ok := f.Value.(*byteSize); ok {
		name = "BYTES"
	}
	return name, usage
}

// isRepeatable reports whether f may be given more than once.
func isRepeatable(f *flag.Flag) bool {
	_, ok := f.Value.(*listFlag)
	return ok
}

// printUsage writes fs's help: the usage line (every flag; required ones without
// brackets), the description, and each flag with its value name and default.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	info := flagSets[fs]
	req := map[string]bool{}
	for _, n := range info.required {
		req[n] = true
	}
	var parts []string
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	sort.SliceStable(all, func(i, j int) bool { return req[all[i].Name] && !req[all[j].Name] })
	for _, f := range all {
		name, _ := valueName(f)
		p := "--" + f.Name
		if name != "" {
			p += " " + name
		}
		if !req[f.Name] {
			p = "[" + p + "]"
		}
		if isRepeatable(f) {
			p += "..."
		}
		parts = append(parts, p)
	}
	fmt.Fprintln(w, wrap("Usage: "+fs.Name()+" ", parts, 100))
	for para := range strings.SplitSeq(info.about, "\n\n") {
		if para = strings.TrimSpace(para); para != "" {
			fmt.Fprintf(w, "\n%s\n", wrap("", strings.Fields(para), 92))
		}
	}
	fmt.Fprintln(w, "\nFlags:")
	for _, f := range all {
		name, usage := valueName(f)
		head := "  --" + f.Name
		if name != "" {
			head += " " + name
		}
		if def := f.DefValue; def != "" && def != "0" && def != "false" && def != "[]" {
			if _, ok := f.Value.(*byteSize); ok {
				def = fmtBytes(int64(*f.Value.(*byteSize)))
			}
			if strings.ContainsAny(def, " \t") {
				def = strconv.Quote(def)
			}
			usage += " (default " + def + ")"
		}
		fmt.Fprintln(w, head)
		fmt.Fprintln(w, wrap("        ", strings.Fields(usage), 92))
	}
}

// wrap joins words after prefix in lines of at most width characters, continuing
// lines indented as far as prefix.
func wrap(prefix string, words []string, width int) string {
	var b strings.Builder
	b.WriteString(prefix)
	indent, col := strings.Repeat(" ", len([]rune(prefix))), len([]rune(prefix))
	for i, wd := range words {
		n := len([]rune(wd))
		if i > 0 {
			if col+1+n > width {
				b.WriteString("\n" + indent)
				col = len(indent)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(wd)
		col += n
	}
	return b.String()
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// writeJSON writes v, indented, to the file at path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
