package main

import (
	"flag"

	"kvq/linalg"
	"kvq/model"
)

// modelFlags name the model a command runs and how its file is read.
type modelFlags struct {
	path string
	mmap bool
}

// addModelFlags registers --model and --mmap on fs.
func addModelFlags(fs *flag.FlagSet) *modelFlags {
	mf := &modelFlags{}
	fs.StringVar(&mf.path, "model", "", "GGUF model `FILE` (default: the built-in stories260K)")
	fs.BoolVar(&mf.mmap, "mmap", false, "map the model file instead of reading it into memory: starts sooner and shares its pages with other processes, but decode reads the weights more slowly")
	return mf
}

// threadsFlag is --threads of the commands that run the model.
type threadsFlag struct{ n *int }

// addThreadsFlag registers --threads on fs.
func addThreadsFlag(fs *flag.FlagSet) threadsFlag {
	return threadsFlag{fs.Int("threads", 0, "threads for matrix products and attention (default: one per CPU)")}
}

// apply sets the threads of the matrix products and returns those of attention for
// kv.Config.AttnWorkers (0: automatic); fs names the command in a usage error.
func (t threadsFlag) apply(fs *flag.FlagSet) (attnWorkers int, err error) {
	switch {
	case *t.n < 0:
		return 0, usagef(fs, "--threads must be ≥ 0, got %d", *t.n)
	case *t.n > 0:
		if err := linalg.SetThreads(*t.n); err != nil {
			return 0, usagef(fs, "--threads: %w", err)
		}
	}
	return *t.n, nil
}

// open loads the model the flags name.
func (mf *modelFlags) open() (*model.Model, error) {
	if mf.mmap && mf.path != "" {
		return model.LoadMapped(mf.path)
	}
	return model.Open(mf.path)
}
