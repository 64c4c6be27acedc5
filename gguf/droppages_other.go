//go:build !linux

package gguf

// dropPages does nothing outside Linux (where it releases mapped pages).
func dropPages([]byte) {}
