package gguf

import (
	"errors"
	"fmt"

	"kvq/internal/hugemem"
)

// preloadPiece is how much of a tensor Preload copies before it releases those pages
// of the mapping: resident memory grows by about the copies alone, not by a whole
// large tensor (an output matrix of tens of megabytes) more.
const preloadPiece = 4 << 20

// preloadAlign is where each copied tensor starts in the region: a cache line, which
// is also a multiple of every GGUF alignment in use (32 by default).
const preloadAlign = 64

// Preload copies the data of every tensor for which keep returns true into one region
// of memory of the process's own, outside the Go heap and in huge pages where the
// kernel offers them (see hugemem); TensorData then returns the copies. The pages of
// the file's mapping are released from the process's resident set as soon as they are
// copied, a few megabytes at a time (preloadPiece).
//
// Why: decode reads every weight matrix once per token, and reads it faster from
// such memory than through the file's mapping, whose 4 KiB pages cost TLB misses.
// A tensor read a little at a time (an embedding table, one row per token) is better
// left mapped: only its rows in use become resident.
//
// Where anonymous memory cannot be mapped on this platform, Preload does nothing.
// Close releases the copies. Preload may be called once, before any TensorData.
func (f *File) Preload(keep func(*TensorInfo) bool) error {
	if f.closed {
		return errors.New("gguf: Preload on a closed file")
	}
	if f.copies != nil {
		return errors.New("gguf: Preload called twice")
	}
	var total uint64
	for i := range f.Tensors {
		if keep(&f.Tensors[i]) {
			total = alignUp(total, preloadAlign) + f.Tensors[i].Size
		}
	}
	if total == 0 {
		return nil
	}
	region, err := hugemem.Map(int(total))
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gguf: Preload: %w", err)
	}
	copies := make([][]byte, len(f.Tensors))
	var at uint64
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if !keep(ti) {
			continue
		}
		src, err := f.TensorData(ti)
		if err != nil {
			region.Free()
			return err
		}
		at = alignUp(at, preloadAlign)
		dst := region.Bytes[at : at+ti.Size : at+ti.Size]
		for off := 0; off < len(src); off += preloadPiece {
			end := min(len(src), off+preloadPiece)
			copy(dst[off:end], src[off:end])
			if f.unmap != nil {
				dropPages(src[off:end])
			}
		}
		copies[i] = dst
		at += ti.Size
	}
	if f.unmap != nil {
		// The pages the copied tensors shared with their neighbours: the mapping reads
		// them back from the page cache if a tensor left in it needs them.
		dropPages(f.data)
	}
	f.copies, f.region = copies, region
	return nil
}

// PreloadedBytes reports the bytes of tensor data Preload copied (0 before Preload,
// where it did nothing, or after Close).
func (f *File) PreloadedBytes() int64 {
	var n int64
	for _, c := range f.copies {
		n += int64(len(c))
	}
	return n
}
