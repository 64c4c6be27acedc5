package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"kvq/synth"
)

func init() {
	register("synth", "write a random-weight GGUF model of a real model's shape (for speed work)", runSynth)
}

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", "Writes a random-weight GGUF model of a real model's shape with the 32k SentencePiece vocabulary, for speed work where real models cannot be downloaded. The same seed writes the same file.", stderr)
	shape := fs.String("shape", "", "model shape `NAME`: "+strings.Join(synth.ShapeNames(), ", "))
	var names []string
	for _, t := range synth.WeightTypes() {
		names = append(names, strings.ToLower(t.String()))
	}
	weights := fs.String("weights", "q8_0", "weight `TYPE`: "+strings.Join(names, ", ")+" (q4_k: rows of a multiple of 256 values)")
	out := fs.String("out", "", "output GGUF `FILE`")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same file)")
	requireFlags(fs, "shape", "out")
	if err := parse(fs, args); err != nil {
		return err
	}
	i := slices.Index(names, strings.ToLower(*weights))
	if i < 0 {
		return fmt.Errorf("unknown --weights %q (valid: %s)", *weights, strings.Join(names, ", "))
	}
	wt := synth.WeightTypes()[i]
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var total int64
	if s, ok := synth.Lookup(*shape); ok {
		total = int64(s.DataBytes(wt))
	}
	bar := newProgress(stderr, "synth", "MiB", 1<<20)
	bw := bufio.NewWriterSize(&progressWriter{w: f, p: bar, total: total}, 1<<20)
	err = synth.Write(bw, *shape, wt, *seed)
	bar.done()
	if err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: shape %s, %s weights, %s in %v\n", *out, *shape, wt, fmtBytes(st.Size()), time.Since(t0).Round(time.Millisecond))
	return nil
}
