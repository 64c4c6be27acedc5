package tier

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Disk is a tier of one file per record in a directory, bounded in bytes: past the
// bound the least recently used records are deleted. Recency is the files'
// modification time (a hit touches its file), so it survives restarts. Writes go to
// a temporary file renamed into place, so a reader never sees half a record; files
// are not synced (a record torn by a crash fails its checksum and is recomputed).
// Several processes may share a directory; each bounds what it knows of.
type Disk struct {
	dir   string
	limit int64

	mu    sync.Mutex
	lru   *list.List               // *diskEntry, least recently used first
	byKey map[uint64]*list.Element // key → element of lru
	bytes int64                    // sizes of the records in lru
}

type diskEntry struct {
	key  uint64
	size int64
}

const diskExt = ".kvb"

// OpenDisk opens (creating it if needed) a disk tier in dir holding at most limit
// bytes of records, indexing the records already there.
func OpenDisk(dir string, limit int64) (*Disk, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kv tier disk:%s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kv tier disk:%s: %w", dir, err)
	}
	type found struct {
		key  uint64
		size int64
		mod  time.Time
	}
	var fs []found
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			_ = os.Remove(filepath.Join(dir, name)) // left by a process that stopped mid-write
			continue
		}
		key, ok := parseDiskName(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fs = append(fs, found{key, info.Size(), info.ModTime()})
	}
	slices.SortFunc(fs, func(a, b found) int { return a.mod.Compare(b.mod) })
	d := &Disk{dir: dir, limit: limit, lru: list.New(), byKey: map[uint64]*list.Element{}}
	d.mu.Lock()
	for _, f := range fs {
		d.add(f.key, f.size)
	}
	d.evict()
	d.mu.Unlock()
	return d, nil
}

func parseDiskName(name string) (uint64, bool) {
	h, ok := strings.CutSuffix(name, diskExt)
	if !ok || len(h) != 16 {
		return 0, false
	}
	k, err := strconv.ParseUint(h, 16, 64)
	return k, err == nil
}

func (d *Disk) path(key uint64) string { return filepath.Join(d.dir, keyHex(key)+diskExt) }

// Name implements Tier.
func (d *Disk) Name() string { return "disk:" + d.dir }

// Bytes is the size of the records the tier knows of.
func (d *Disk) Bytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bytes
}

// add records key as most recently used. Caller holds d.mu.
func (d *Disk) add(key uint64, size int64) {
	if el, ok := d.byKey[key]; ok {
		e := el.Value.(*diskEntry)
		d.bytes += size - e.size
		e.size = size
		d.lru.MoveToBack(el)
		return
	}
	d.byKey[key] = d.lru.PushBack(&diskEntry{key, size})
	d.bytes += size
}

func (d *Disk) forget(key uint64) {
	if el, ok := d.byKey[key]; ok {
		d.bytes -= el.Value.(*diskEntry).size
		d.lru.Remove(el)
		delete(d.byKey, key)
	}
}

// evict deletes least recently used records until the tier fits its bound. Caller
// holds d.mu.
func (d *Disk) evict() {
	for d.bytes > d.limit && d.lru.Len() > 0 {
		e := d.lru.Front().Value.(*diskEntry)
		d.forget(e.key)
		_ = os.Remove(d.path(e.key))
	}
}

// Get implements Tier. A record written by another process sharing the directory
// is found too.
func (d *Disk) Get(ctx context.Context, keys []uint64) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := d.path(k)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			d.mu.Lock()
			d.forget(k)
			d.mu.Unlock()
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kv tier %s: %w", d.Name(), err)
		}
		now := time.Now()
		_ = os.Chtimes(p, now, now) // recency for the next start; a read-only disk still serves
		d.mu.Lock()
		d.add(k, int64(len(b)))
		d.mu.Unlock()
		out[i] = b
	}
	return out, nil
}

// Put implements Tier. A record larger than the whole bound is not stored.
func (d *Disk) Put(ctx context.Context, key uint64, rec []byte) error {
	if int64(len(rec)) > d.limit {
		return fmt.Errorf("kv tier %s: a %d-byte record exceeds the tier's %d bytes", d.Name(), len(rec), d.limit)
	}
	f, err := os.CreateTemp(d.dir, ".tmp-*")
	if err != nil {
		return d.putErr(err)
	}
	_, err = f.Write(rec)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), d.path(key))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return d.putErr(err)
	}
	d.mu.Lock()
	d.add(key, int64(len(rec)))
	d.evict()
	d.mu.Unlock()
	return nil
}

// putErr wraps a failed write; a full or read-only disk is ErrRefused.
func (d *Disk) putErr(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("kv tier %s: %w: %w", d.Name(), ErrRefused, err)
	}
	return fmt.Errorf("kv tier %s: %w", d.Name(), err)
}

// Close implements Tier.
func (d *Disk) Close() error { return nil }
