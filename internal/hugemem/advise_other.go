//go:build !linux

package hugemem

func adviseHuge([]byte) {}
