package main

import (
	"flag"

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
	fs.StringVar(&mf.path, "model", "", "GGUF model file (default: built-in stories260K)")
	fs.BoolVar(&mf.mmap, "mmap", false, "map the model file instead of reading it into memory: starts sooner and shares its pages with other processes, but decode reads the weights more slowly")
	return mf
}

// open loads the model the flags name.
func (mf *modelFlags) open() (*model.Model, error) {
	if mf.mmap && mf.path != "" {
		return model.LoadMapped(mf.path)
	}
	return model.Open(mf.path)
}
