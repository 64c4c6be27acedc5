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
// makes few mappings. Pages become resident only when first written. A chunk is
// never returned while its Arena is in use; Release unmaps them all. Where mapping is
// not available or fails, blocks come from the Go heap instead.
//
// On Linux the chunks are advised for transparent huge pages (hugemem.Advise):
// attention reads a layer's whole history every step, and with 4 KiB pages every 4
// KiB may miss the TLB. Decode attention over 32768 tokens of q4, q2 and kivi4/kivi2
// (32/8/64, 2 threads, 20 MiB per step) took 2–4% less time per step with them; f16
// and q8 about the same. A huge page is resident in full once any of it is written,
// so a pool may hold up to 2 MiB more than its blocks in use.
package blockmem

import "sync/atomic"

// chunkBytes is the size of a mapping: large enough that a pool of gigabytes makes
// hundreds, not hundreds of thousands, of mappings (Linux allows 65530 by default).
const chunkBytes = 16 << 20

// align is the alignment of every block's start: a cache line, so that no two
// blocks share a line.
const align = 64

// Arena hands out blocks of one size. Alloc and Release must not be called
// concurrently; Mapped may be called at any time.
type Arena struct {
	size, stride int      // bytes of a block; distance between blocks in a chunk
	limit        int      // most blocks that will be asked for; 0: unknown
	made         int      // blocks handed out
	chunks       [][]byte // the mappings, for Release
	rest         []byte   // unused part of the last chunk
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
		mem, err := mapChunk(n * a.stride)
		if err != nil {
			a.made++
			return make([]byte, a.size) // no mapping: the heap's memory still works
		}
		a.mapped.Add(int64(len(mem)))
		a.chunks = append(a.chunks, mem)
		a.rest = mem
	}
	b := a.rest[:a.size:a.size]
	a.rest = a.rest[min(a.stride, len(a.rest)):]
	a.made++
	return b
}

// Mapped reports the bytes the Arena has mapped and not released (its virtual
// size: pages never written are not resident).
func (a *Arena) Mapped() int64 { return a.mapped.Load() }

// Release unmaps every chunk. No block of the Arena may be used after it; Alloc
// maps new chunks.
func (a *Arena) Release() {
	for _, c := range a.chunks {
		if unmapChunk(c) == nil {
			a.mapped.Add(-int64(len(c)))
		}
	}
	a.chunks, a.rest = nil, nil
}
