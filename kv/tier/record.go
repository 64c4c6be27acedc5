package tier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"kvq/kv"
)

// Record wire format, version 1: one full block as a tier stores it (a
// kv.PrefixBlock), all integers little-endian.
//
//	offset     size  field
//	0          4     magic "KVQB"
//	4          2     version (1)
//	6          2     reserved, 0
//	8          8     root hash of the store's layout (model fingerprint, geometry, specs)
//	16         8     block hash (the record's key)
//	24         8     parent hash
//	32         4     block index in its sequence (positions [index·B, (index+1)·B))
//	36         4     token count n (the ids its hash names: kv.Store.BlockTokenRange)
//	40         4     block length L (the store's Layout().BlockBytes: a block of each layer group)
//	44         4     side-row length S (0: none; KIVI value windows and sinks only)
//	48         4·n   token ids
//	48+4n      L     the block's bytes as stored (compressed as the cache holds them)
//	48+4n+L    S     its side rows as stored
//	48+4n+L+S  4     CRC-32C (Castagnoli) of every byte before it
//
// The overhead over the block's own bytes is RecordOverhead(n) = 52 + 4n bytes, plus
// the side rows of caches that keep them.
const (
	recordMagic   = "KVQB"
	recordVersion = 1
	headerBytes   = 48
)

// RecordOverhead is the bytes a record adds to a block of n tokens without side rows:
// header, token ids and checksum.
func RecordOverhead(n int) int { return headerBytes + 4*n + 4 }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned (wrapped) for a record that must not be adopted: wrong
// magic, version, length, layout, key, tokens or checksum.
var ErrCorrupt = errors.New("kv tier: corrupt or foreign record")

// encodeRecord appends the record of b, made by a store whose root hash is root, to dst.
func encodeRecord(dst []byte, root uint64, b kv.PrefixBlock) []byte {
	le := binary.LittleEndian
	start := len(dst)
	dst = append(dst, recordMagic...)
	dst = le.AppendUint16(dst, recordVersion)
	dst = le.AppendUint16(dst, 0)
	dst = le.AppendUint64(dst, root)
	dst = le.AppendUint64(dst, b.Hash)
	dst = le.AppendUint64(dst, b.Parent)
	dst = le.AppendUint32(dst, uint32(b.Index))
	dst = le.AppendUint32(dst, uint32(len(b.Tokens)))
	dst = le.AppendUint32(dst, uint32(len(b.Bytes)))
	dst = le.AppendUint32(dst, uint32(len(b.Side)))
	for _, t := range b.Tokens {
		dst = le.AppendUint32(dst, uint32(t))
	}
	dst = append(dst, b.Bytes...)
	dst = append(dst, b.Side...)
	return le.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// want is what a record must hold to be adopted by a store: its layout, its place in
// the prompt and its shape.
type want struct {
	root, hash, parent uint64
	index              int
	tokens             []int32 // the block's token ids
	blockBytes         int
	sideBytes          int // side rows a block of this index has, when it has them
}

// decodeRecord checks rec against w and returns its block (Bytes and Side are
// subslices of rec). Any difference is ErrCorrupt: the caller computes the tokens
// instead. Side rows are optional (a block may have lost them), but when present
// must have their exact size.
func decodeRecord(rec []byte, w want) (kv.PrefixBlock, error) {
	le := binary.LittleEndian
	n := len(w.tokens)
	if len(rec) < headerBytes+4 {
		return kv.PrefixBlock{}, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(rec))
	}
	side := int(le.Uint32(rec[44:]))
	if side != 0 && side != w.sideBytes {
		return kv.PrefixBlock{}, fmt.Errorf("%w: %d side-row bytes, want %d", ErrCorrupt, side, w.sideBytes)
	}
	size := headerBytes + 4*n + w.blockBytes + side + 4
	switch {
	case len(rec) != size:
		return kv.PrefixBlock{}, fmt.Errorf("%w: %d bytes, want %d", ErrCorrupt, len(rec), size)
	case string(rec[:4]) != recordMagic:
		return kv.PrefixBlock{}, fmt.Errorf("%w: bad magic %q", ErrCorrupt, rec[:4])
	case le.Uint16(rec[4:]) != recordVersion:
		return kv.PrefixBlock{}, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, le.Uint16(rec[4:]), recordVersion)
	case crc32.Checksum(rec[:size-4], castagnoli) != le.Uint32(rec[size-4:]):
		return kv.PrefixBlock{}, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	case le.Uint64(rec[8:]) != w.root:
		return kv.PrefixBlock{}, fmt.Errorf("%w: made for another model or cache layout", ErrCorrupt)
	case le.Uint64(rec[16:]) != w.hash || le.Uint64(rec[24:]) != w.parent || int(le.Uint32(rec[32:])) != w.index:
		return kv.PrefixBlock{}, fmt.Errorf("%w: block hash, parent or index differs from its key", ErrCorrupt)
	case int(le.Uint32(rec[36:])) != n || int(le.Uint32(rec[40:])) != w.blockBytes:
		return kv.PrefixBlock{}, fmt.Errorf("%w: %d tokens of %d bytes, want %d of %d", ErrCorrupt, le.Uint32(rec[36:]), le.Uint32(rec[40:]), n, w.blockBytes)
	}
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(le.Uint32(rec[headerBytes+4*i:]))
	}
	if !slices.Equal(toks, w.tokens) || kv.BlockHash(w.parent, toks) != w.hash {
		return kv.PrefixBlock{}, fmt.Errorf("%w: token ids differ from the prompt's", ErrCorrupt)
	}
	at := headerBytes + 4*n
	b := kv.PrefixBlock{Hash: w.hash, Parent: w.parent, Index: w.index, Tokens: toks, Bytes: rec[at : at+w.blockBytes]}
	if side > 0 {
		b.Side = rec[at+w.blockBytes : at+w.blockBytes+side]
	}
	return b, nil
}
