// Package blockmem hands out the fixed-size blocks of a KV cache pool from memory
// mapped outside the Go heap.
//
// Why: the garbage collector lets the heap grow to (1 + GOGC/100) times what was
// live after the last collection. With the cache's blocks in the heap, a server
// whose pool is full counts the whole pool as live, so garbage as large again as
// the pool may accumulate before a collection: resident memory up to twice the
// byte budget. Outside the heap, the blocks are not counted, the collector paces
// itself on the few megabytes of real garbage-collected data, and resident memory
// is the budget plus a small constant.
//
// Blocks are carved from chunks of several megabytes, mapped on demand, so a pool
// makes few mappings. Pages become resident only when first written, or when Fault
// makes them so ahead of that write (a pool making memory while it is idle). A chunk is
// never returned while its Arena is in use; Release unmaps them all. Where mapping is
// not available or fails, blocks come from the Go heap instead.
//
// On Linux each whole huge page of a chunk (chunks start on a huge page boundary) is
// made a huge page (hugemem.Collapse) once all of its blocks are handed out: attention reads a layer's whole history
// every step, and with 4 KiB pages every 4 KiB may miss the TLB. Decode attention
// over 32768 tokens of q4, q2 and kivi4/kivi2 (32/8/64, 2 threads, 20 MiB per step)
// took 2–4% less time per step with huge pages; f16 and q8 about the same. The page
// still being handed out keeps base pages, resident only where written: advising the
// whole chunk instead made that page resident in full at its first write, up to 2
// MiB more than the blocks in use (peak RSS of kvq bench decode at 4k with
// kivi4/kivi2: 196.1–196.9 MiB against 194.8–195.5 without huge pages). Kernels
// without MADV_COLLAPSE (before 6.1) get the chunks advised as before.
package blockmem

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"kvq/internal/hugemem"
)

// chunkBytes is the size of a mapping: large enough that a pool of gigabytes makes
// hundreds, not hundreds of thousands, of mappings (Linux allows 65530 by default).
const chunkBytes = 16 << 20

// align is the alignment of every block's start: a cache line, so that no two
// blocks share a line.
const align = 64

// Arena hands out blocks of one size. Alloc, Fault and Release must not be called
// concurrently; Mapped may be called at any time.
type Arena struct {
	size, stride int      // bytes of a block; distance between blocks in a chunk
	limit        int      // most blocks that will be asked for; 0: unknown
	made         int      // blocks handed out
	chunks       [][]byte // the chunks blocks are carved from, each on a huge page boundary
	mappings     [][]byte // the mappings that hold them, for Release
	rest         []byte   // unused part of the last chunk
	made2M       uintptr  // the last chunk's huge pages below this address are handled
	advise       bool     // no MADV_COLLAPSE: chunks are advised for huge pages instead
	mapped       atomic.Int64
}

// New returns an Arena of blocks of size bytes (size ≥ 1). limit, when > 0, is the
// most blocks that will be asked for, so that the last chunk maps no more than
// needed; more may still be asked for.
func New(size, limit int) *Arena {
	if size < 1 {
		panic("blockmem: block size < 1")
	}
	return &Arena{size: size, stride: (size + align - 1) / align * align, limit: max(0, limit)}
}

// Alloc returns a new block of the Arena's size, zeroed, whose capacity is its
// length (an append cannot reach the next block). It stays valid until Release.
func (a *Arena) Alloc() []byte {
	if len(a.rest) < a.size {
		n := max(1, chunkBytes/a.stride)
		if a.limit > a.made {
			n = min(n, a.limit-a.made)
		}
		mem, mapping, err := mapChunk(n * a.stride)
		if err != nil {
			a.made++
			return make([]byte, a.size) // no mapping: the heap's memory still works
		}
		if a.advise {
			hugemem.Advise(mem)
		}
		a.mapped.Add(int64(len(mem)))
		a.chunks, a.mappings = append(a.chunks, mem), append(a.mappings, mapping)
		a.rest, a.made2M = mem, 0
	}
	b := a.rest[:a.size:a.size]
	a.rest = a.rest[min(a.stride, len(a.rest)):]
	a.made++
	a.collapse()
	return b
}

// collapse makes huge pages of the last chunk's whole huge pages whose blocks have
// all been handed out (on kernels without MADV_COLLAPSE it advises the rest of the
// chunk, and the chunks to come, instead). A page that cannot be made now (no huge
// page free) keeps base pages.
func (a *Arena) collapse() {
	if a.advise || len(a.chunks) == 0 {
		return
	}
	c := a.chunks[len(a.chunks)-1]
	start := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
	handed := start + uintptr(len(c)-len(a.rest))
	p := max(a.made2M, (start+hugemem.PageBytes-1)&^(hugemem.PageBytes-1))
	for ; p+hugemem.PageBytes <= handed; p += hugemem.PageBytes {
		err := hugemem.Collapse(c[p-start:][:hugemem.PageBytes])
		if errors.Is(err, errors.ErrUnsupported) {
			a.advise = true
			hugemem.Advise(c[p-start:])
			return
		}
	}
	a.made2M = p
}

// Mapped reports the bytes of the chunks the Arena has mapped and not released
// (their virtual size: pages never written are not resident; each mapping also
// holds up to a huge page more, never touched, that put its chunk on a huge page
// boundary).
func (a *Arena) Mapped() int64 { return a.mapped.Load() }

// Release unmaps every chunk. No block of the Arena may be used after it; Alloc
// maps new chunks.
func (a *Arena) Release() {
	for i, c := range a.chunks {
		if unmapChunk(a.mappings[i]) == nil {
			a.mapped.Add(-int64(len(c)))
		}
	}
	a.chunks, a.mappings, a.rest, a.made2M = nil, nil, nil, 0
}
